"""`strixwizard capture` of a lab site when it is cut short: the head's disk full (its state
directory a 1 MiB tmpfs mounted under the test's temp dir, filled with a real file): each node
is said not captured with the errno, no empty archive or temporary file is left, and once
space is freed the same command captures both nodes; a signal during `capture --scrub`: no
raw snapshot is left, in --out or anywhere, and the message says what was removed."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli import run_cli
from tests.support.disk import fill
from tests.support.lab import Lab, lab_fixture, reset_hosts

capturelab = lab_fixture(2, name="capturelab")




@pytest.fixture
def lab(capturelab: Lab) -> Iterator[Lab]:
    reset_hosts(capturelab)
    yield capturelab
    reset_hosts(capturelab)






def test_capture_on_a_full_disk_leaves_no_empty_archive_and_can_run_again(
        lab: Lab, tmp_path: Path, small_state: Path) -> None:
    site = lab.write_site_yaml(tmp_path / "lab.yaml")
    fill(small_state)
    out = small_state / "bundle"
    result = run_cli("capture", "--site", str(site), "--out", str(out), timeout=120)
    assert result.rc == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    for name in ("node0", "node1"):
        assert (f"{name}: not captured: not written: {out / name}.tar.gz: No space left on "
                "device (errno 28 ENOSPC)") in result.stderr, result.stderr
    assert list(out.iterdir()) == []  # no 0-byte archive, no temporary file
    (small_state / "filler").unlink()
    again = run_cli("capture", "--site", str(site), "--out", str(out), timeout=120)
    assert again.rc == 0, again.stdout + again.stderr
    assert sorted(p.name for p in out.iterdir()) == ["node0.tar.gz", "node1.tar.gz"]


def test_a_signal_during_a_scrubbed_capture_leaves_no_raw_bundle_and_says_what_was_removed(
        lab: Lab, tmp_path: Path) -> None:
    """node1's collector held 15 s (a stand-in python3 that sleeps first), so node0's raw
    archive sits in the private temporary folder when SIGTERM comes: it is removed with the
    folder, nothing reaches --out, no map is left to block the next run, and the message
    names what was removed and the command to run again."""
    site = lab.write_site_yaml(tmp_path / "lab.yaml")
    lab.hosts[1].stand_in("python3", "#!/bin/sh\nsleep 15\nexec /usr/bin/python3 \"$@\"\n")
    out = tmp_path / "shared"
    env = dict(os.environ)
    env.pop("NO_COLOR", None)
    argv = ["capture", "--site", str(site), "--out", str(out), "--scrub"]
    proc = subprocess.Popen([sys.executable, "-m", "strixwizard", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, env=env)
    try:
        deadline = time.monotonic() + 60
        while not list(tmp_path.glob(".shared.scrubbing-*/shared/node0.tar.gz")):
            assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
            time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 143, err
    assert not out.exists() or list(out.iterdir()) == []
    assert list(tmp_path.glob(".shared.scrubbing-*")) == []
    assert not (tmp_path / "shared.scrub-map.json").exists()
    assert "removed the raw snapshots (shared/node0.tar.gz)" in err, err
    assert f"nothing unscrubbed reached {out}" in err, err
    assert f"To capture again: strixwizard {shlex.join(argv)}" in err, err
    assert "Traceback" not in err
    lab.hosts[1].bin_dir.joinpath("python3").unlink()
    again = run_cli(*argv, timeout=120)  # the same command then captures both nodes
    assert again.rc == 0, again.stdout + again.stderr
    names = json.loads((tmp_path / "shared.scrub-map.json").read_text())["names"]
    assert sorted(names[p.name.removesuffix(".tar.gz")] for p in out.iterdir()) == ["node0", "node1"]

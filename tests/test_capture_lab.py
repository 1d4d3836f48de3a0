"""`strixwizard capture` of a lab site when the head's disk is full (its state directory a 1 MiB
tmpfs mounted under the test's temp dir, filled with a real file): each node is said not
captured with the errno, no empty archive or temporary file is left, and once space is freed
the same command captures both nodes."""

from __future__ import annotations

import contextlib
import errno
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli import run_cli
from tests.support.lab import Lab, lab_fixture

capturelab = lab_fixture(2, name="capturelab")


def _reset(lab: Lab) -> None:
    for host in lab.hosts:
        for stand_in in host.bin_dir.glob("*"):
            stand_in.unlink()
        for marker in host.home.glob("fault-*"):
            marker.unlink()
        host.run_in_ns(["ip", "link", "set", "dev", "fab0", "mtu", "1500"], check=True)


@pytest.fixture
def lab(capturelab: Lab) -> Iterator[Lab]:
    _reset(capturelab)
    yield capturelab
    _reset(capturelab)


@pytest.fixture
def small_state(tmp_path: Path) -> Iterator[Path]:
    """XDG_STATE_HOME on its own 1 MiB tmpfs, under the test's temp dir only."""
    state = tmp_path / "state"
    state.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,mode=0700", "swfault", str(state)],
                   check=True)
    try:
        yield state
    finally:
        if subprocess.run(["umount", str(state)], check=False).returncode != 0:
            subprocess.run(["umount", "-l", str(state)], check=False)


def fill(directory: Path) -> None:
    """Write a file until the filesystem says ENOSPC."""
    with contextlib.suppress(OSError), open(directory / "filler", "wb", buffering=0) as handle:
        while True:
            handle.write(b"\0" * 4096)
    probe = directory / "probe"
    with pytest.raises(OSError) as full:
        probe.write_bytes(b"x" * 8192)
    assert full.value.errno == errno.ENOSPC


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

"""`strixwizard capture` of a lab site when the head's disk is full (its state directory a 1 MiB
tmpfs mounted under the test's temp dir, filled with a real file): each node is said not
captured with the errno, no empty archive or temporary file is left, and once space is freed
the same command captures both nodes."""

from __future__ import annotations

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

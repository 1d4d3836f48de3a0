"""Exports never lie about the verdict: a `--prometheus` textfile on a full disk (a 64 KiB tmpfs
mounted under the test's temp dir and filled with a real file) is one line naming the path and
the errno, exit 2, no traceback, the verdict line printed after the export and saying so, the
previous textfile intact and no temporary file left beside it."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli import run_cli


@pytest.fixture
def full_dir(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "full"
    folder.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "swexport", str(folder)], check=True)
    try:
        (folder / "old.prom").write_text("# the previous run's file\n")
        with contextlib.suppress(OSError), open(folder / "filler", "wb", buffering=0) as handle:
            while True:
                handle.write(b"\0" * 4096)
        yield folder
    finally:
        if subprocess.run(["umount", str(folder)], check=False).returncode != 0:
            subprocess.run(["umount", "-l", str(folder)], check=False)


def _left_alone(folder: Path) -> None:
    assert sorted(p.name for p in folder.iterdir()) == ["filler", "old.prom"]
    assert (folder / "old.prom").read_text() == "# the previous run's file\n"


def test_doctor_prometheus_on_a_full_disk_is_one_line_and_exit_2(full_dir: Path) -> None:
    prom = full_dir / "old.prom"
    result = run_cli("doctor", "--demo", "--prometheus", str(prom))
    assert result.rc == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    (line,) = [x for x in result.stderr.splitlines() if "not written" in x]
    assert line == (f"strixwizard: error: --prometheus {prom} not written: {prom}: No space left "
                    "on device (errno 28 ENOSPC) (exit 2)")
    _left_alone(full_dir)


def test_test_prometheus_on_a_full_disk_says_so_in_the_verdict_line(full_dir: Path) -> None:
    prom = full_dir / "old.prom"
    result = run_cli("test", "latency", "--demo", "--seconds", "0.3", "--no-references",
                     "--prometheus", str(prom))
    assert result.rc == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    last = result.stdout.strip().splitlines()[-1]
    assert last == (f"verdict: pass, but --prometheus {prom} not written: {prom}: No space left "
                    "on device (errno 28 ENOSPC) (exit 2)"), result.stdout
    assert "verdict: pass (exit 0)" not in result.stdout
    _left_alone(full_dir)
    as_json = run_cli("test", "latency", "--demo", "--seconds", "0.3", "--no-references", "--json",
                      "--prometheus", str(prom))
    assert as_json.rc == 2 and "No space left on device" in as_json.json()["export_error"]
    _left_alone(full_dir)

"""A head whose disk fills: the tests' state folder on its own small tmpfs, and a filler."""

from __future__ import annotations

import contextlib
import errno
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


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


def fill(directory: Path, confirm: bool = True) -> None:
    """Write a file until the filesystem says ENOSPC; `confirm`: then check a write fails so."""
    with contextlib.suppress(OSError), open(directory / "filler", "wb", buffering=0) as handle:
        while True:
            handle.write(b"\0" * 4096)
    if confirm:
        probe = directory / "probe"
        with pytest.raises(OSError) as full:
            probe.write_bytes(b"x" * 8192)
        assert full.value.errno == errno.ENOSPC

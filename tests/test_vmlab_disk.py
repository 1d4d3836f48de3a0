"""The VM lab reads a stopped VM's persistent layer from its disk image (debugfs, never
mounted): what the VM wrote and synced must be read even when it is still in the ext4
journal only (a shutdown that could not remount the layer read-only)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.support.vmlab import KERNEL_CMDLINE_FILE, persisted_cmdline

BLOCK = 4096


def debugfs(disk: Path, *requests: str) -> str:
    done = subprocess.run(["debugfs", "-w", "-f", "-", str(disk)], input="\n".join(requests) + "\n",
                          capture_output=True, text=True, timeout=60, check=True)
    return done.stdout


def test_the_next_boots_words_are_read_from_a_layer_whose_journal_holds_them(tmp_path: Path) -> None:
    disk = tmp_path / "disk.img"
    with open(disk, "wb") as image:
        image.truncate(64 * 1024 * 1024)
    subprocess.run(["mkfs.ext4", "-q", "-F", "-b", str(BLOCK), str(disk)], check=True, timeout=60)
    old = tmp_path / "old"
    old.write_text("quiet\n")
    folder = f"/upper{Path(KERNEL_CMDLINE_FILE).parent}"
    debugfs(disk, "mkdir /upper", "mkdir /upper/etc", f"mkdir {folder}",
            f"write {old} /upper{KERNEL_CMDLINE_FILE}")
    assert persisted_cmdline(disk) == ("quiet",)

    # the same file block, rewritten by a transaction the journal holds and the disk does not
    block = debugfs(disk, f"blocks /upper{KERNEL_CMDLINE_FILE}").split()[-1]
    new = tmp_path / "new"
    new.write_bytes(b"amdgpu\n".ljust(BLOCK, b"\0"))
    debugfs(disk, "journal_open", f"journal_write -b {block} {new}", "journal_close")
    features = subprocess.run(["dumpe2fs", "-h", str(disk)], capture_output=True, text=True,
                              timeout=60, check=True).stdout
    assert "needs_recovery" in features  # what an unclean shutdown leaves

    assert persisted_cmdline(disk) == ("amdgpu",)

"""What a careless operator may hand a path option, made by the test in its own folder (never
the machine's): a twin of /dev/null (a character device 1:3, root only), a FIFO, a symbolic
link to a regular file, and a shared folder like /tmp (1777, sticky bit). `modes` reads each
without following links or opening it (a FIFO would block), and the link's target too."""

from __future__ import annotations

import os
import stat
from pathlib import Path

SHARED = 0o1777


def make_twins(folder: Path, suffix: str = "") -> dict[str, Path]:
    """Twins named `KIND{suffix}` in `folder` (made if missing); the device only as root."""
    folder.mkdir(parents=True, exist_ok=True)
    twins: dict[str, Path] = {}
    if os.geteuid() == 0:
        twins["device"] = folder / f"null{suffix}"
        os.mknod(twins["device"], stat.S_IFCHR | 0o666, os.makedev(1, 3))
        os.chmod(twins["device"], 0o666)  # mknod's mode passes through the umask
    twins["fifo"] = folder / f"fifo{suffix}"
    os.mkfifo(twins["fifo"], 0o644)
    target = folder / f"target{suffix}"
    target.write_bytes(b"")
    target.chmod(0o644)
    twins["link"] = folder / f"link{suffix}"
    twins["link"].symlink_to(target)
    twins["shared"] = folder / f"shared{suffix}"
    twins["shared"].mkdir()
    os.chmod(twins["shared"], SHARED)
    return twins


def modes(twins: dict[str, Path]) -> dict[str, tuple[int, int, int]]:
    """(mode with type and sticky bit, owner, size) of each twin, and of the link's target."""
    seen = {kind: os.lstat(path) for kind, path in twins.items()}
    if "link" in twins:
        seen["link target"] = os.stat(twins["link"])
    return {kind: (info.st_mode, info.st_uid, info.st_size if not stat.S_ISDIR(info.st_mode) else 0)
            for kind, info in seen.items()}

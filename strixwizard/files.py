"""The head's own private folders: journals, dry-run copies, history (0700, as docs/safety.md says;
an existing folder is used only when it is already private and the user's, never changed),
and the data files shipped inside the packages."""

from __future__ import annotations

import errno
import importlib
import os
import stat
import sys
from pathlib import Path

from strixwizard.errors import UsageError


def package_text(package: str, name: str) -> str:
    """The text of `name` (a `/`-separated path) shipped in `package`, as
    `importlib.resources` reads it. A package installed as files (a wheel, a checkout) is read
    straight from its folder: `importlib.resources` loads a dozen modules (tempfile and zipfile
    among them), a tenth of `doctor`'s start-up; it stays the way for any other loader."""
    module = sys.modules.get(package) or importlib.import_module(package)
    origin = getattr(module, "__file__", None)
    if origin is not None:
        path = os.path.join(os.path.dirname(origin), *name.split("/"))
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as handle:
                return handle.read()
    from importlib import resources

    return resources.files(package).joinpath(name).read_text(encoding="utf-8")


#: How messages and help texts name `state_dir()` (its default).
STATE_DIR_SHOWN = "~/.local/state/strixwizard"


def state_dir() -> Path:
    """strixwizard's own folder on this machine: journals, history, the wizard's state and
    reports; `$XDG_STATE_HOME/strixwizard` (`~/.local/state/strixwizard` by default)."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "strixwizard"


class FolderRefused(UsageError, PermissionError):
    """An existing folder strixwizard will not keep private files in, and will not change: the
    message names why and the cure. A `UsageError` (exit 2) and an `OSError` (callers that
    report a file that could not be written say so)."""

    def __init__(self, message: str) -> None:
        super().__init__(errno.EPERM, message)

    def __str__(self) -> str:
        return str(self.strerror)


def check_private_dir(path: Path, cure: str) -> None:
    """`FolderRefused` unless the existing `path` is a folder of this user that only the user
    can enter (no permission bit for group or others); nothing is changed either way. `cure`:
    the other way out than `chmod 700`, e.g. "or name another one with --journal-dir"."""
    info = os.stat(path)
    if not stat.S_ISDIR(info.st_mode):
        raise FolderRefused(f"{path}: not a folder; strixwizard keeps its private files in a "
                            f"folder of yours only {cure}")
    if info.st_uid != os.geteuid():
        raise FolderRefused(f"{path}: belongs to user {info.st_uid}, not to you ({os.geteuid()}); "
                            f"strixwizard keeps its private files only in a folder of yours "
                            f"{cure}")
    if info.st_mode & 0o077:
        raise FolderRefused(f"{path}: others may enter it (mode {stat.S_IMODE(info.st_mode):04o}); "
                            "strixwizard keeps its private files only in a folder no one else "
                            "can enter, and never changes the mode of a folder it did not make: "
                            f"`chmod 700 {path}` if it is yours alone, {cure}")


def private_dir(path: Path, cure: str = "or name another one", judge: bool = True) -> Path:
    """`path` ready for private files. Missing folders (and missing parents) are made here,
    0700 (set again after `mkdir`, whose mode passes through the umask): strixwizard made
    them. An existing `path` is never changed: it is used when `check_private_dir` accepts
    it, else refused (`FolderRefused`, exit 2); `judge=False`: used as it is (a folder the
    user keeps files of their own in, such as a site file's)."""
    missing: list[Path] = []
    probe = path
    while not os.path.lexists(probe) and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    if not missing:
        if judge:
            check_private_dir(path, cure)
        return path
    for folder in reversed(missing):
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:  # made meanwhile by someone else: judged, never changed
            if judge:
                check_private_dir(folder, cure)
            continue
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            os.fchmod(fd, 0o700)
        finally:
            os.close(fd)
    return path


def not_regular(path: Path) -> str | None:
    """What `path` is when it exists and is not a regular file ("a FIFO", "a device"...),
    read without following a link or opening it (a FIFO would block); None otherwise."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    if stat.S_ISREG(mode):
        return None
    return ("a symbolic link" if stat.S_ISLNK(mode) else "a folder" if stat.S_ISDIR(mode)
            else "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
            else "not a regular file")


def display_path(path: Path | str) -> str:
    """A path as people read it: the home folder shown as `~`."""
    text = str(path)
    home = str(Path.home())
    return "~" + text[len(home):] if home != "/" and (text == home or text.startswith(home + "/")) else text

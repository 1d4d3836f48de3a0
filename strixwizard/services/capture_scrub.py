"""`capture --scrub`: raw snapshots never reach the folder meant for sharing.

The capture is collected into a private temporary folder beside `--out` (0700, made by
`tempfile.mkdtemp`, on the same file system so a rename moves a file), scrubbed there, and
only then moved into place; the owner's map goes beside `--out` last, never overwriting one.
On any stop before that (a signal, an error, a full disk) the temporary folder and every raw
snapshot in it are removed, and the caller is told which ones, before the stop goes on.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from strixwizard.errors import UsageError
from strixwizard.probe.scrub import Scrubber, ScrubError, scrub_bundle

#: How often removing the temporary folder is tried (a capture thread still finishing may add
#: a file while it is removed), and the pause between tries.
REMOVE_TRIES = 5
REMOVE_PAUSE_S = 0.2


@dataclass(frozen=True)
class Scrubbed:
    moved: dict[Path, Path]  # where each snapshot was collected -> where it is now, scrubbed
    scrubber: Scrubber


def scrubbed_capture(out: Path, private_map: Path, collect: Callable[[Path], Sequence[Path]],
                     on_stop: Callable[[list[str], Path], None], folder: bool = False) -> Scrubbed:
    """`collect(stand_in)` captures into `stand_in` (a path in a private temporary folder that
    stands for `out`) and returns the snapshots it wrote; they are scrubbed with one map and
    moved to the same place relative to `out`'s folder. On any stop before they are all in
    place, `on_stop(names of the raw snapshots removed, the folder they were in)` is called
    once the folder is gone, then the stop goes on (the same exception). `folder`: `out` is
    the folder of a site's archives, refused before anything is captured unless new or empty."""
    out = Path(os.path.abspath(out))
    if not out.parent.is_dir():
        raise UsageError(f"{out.parent}: no such directory")
    if folder and out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UsageError(f"{out}: already exists; choose a new directory so nothing is overwritten")
    if private_map.exists():
        raise UsageError(f"{private_map}: already exists; move it away (it maps an earlier "
                         "scrubbed capture back to its names) or choose another --out")
    work = Path(tempfile.mkdtemp(prefix=f".{out.name}.scrubbing-", dir=out.parent))
    raw: Sequence[Path] = ()
    try:
        raw = collect(work / out.name)
        if not raw:  # nothing captured: nothing to scrub, no map
            _remove(work)
            return Scrubbed({}, Scrubber())
        kept = work / "map.json"
        try:
            scrubber = scrub_bundle(list(raw), kept)
        except ScrubError as error:
            raise UsageError(str(error)) from None
        moved = {path: _target(path, work / out.name, out, scrubber) for path in raw}
        for source, target in moved.items():
            _move(source, target)
        os.link(kept, private_map)  # never over an existing map
    except BaseException:
        left = _raw_left(work, raw)
        _remove(work)
        on_stop(left, work)
        raise
    _remove(work)
    return Scrubbed(moved, scrubber)


def _target(path: Path, stand_in: Path, out: Path, scrubber: Scrubber) -> Path:
    """Where a collected snapshot goes: `out` itself (this machine's), or a file in the folder
    `out` named as its node is once scrubbed (a site's: node names are names too)."""
    if path.parent != stand_in:
        return out.parent / path.name
    return out / scrubber.text(path.name)


def _move(source: Path, target: Path) -> None:
    """`source` to `target`, never over anything but an empty folder. An empty folder the
    operator named (`--out .`, a shared folder) stays the same folder, its mode and owner
    unchanged: the snapshot's entries move into it, the folder itself is not replaced."""
    target.parent.mkdir(mode=0o700, exist_ok=True)
    if source.is_dir():
        if target.exists() and (not target.is_dir() or any(target.iterdir())):
            raise UsageError(f"{target}: already exists; choose a new path so nothing is overwritten")
        if not target.exists():
            os.replace(source, target)
            return
        for entry in sorted(source.iterdir()):
            os.replace(entry, target / entry.name)
        source.rmdir()
        return
    try:
        os.link(source, target)
    except FileExistsError:
        raise UsageError(f"{target}: already exists; choose a new path so nothing is "
                         "overwritten") from None
    os.unlink(source)


def _raw_left(work: Path, raw: Sequence[Path]) -> list[str]:
    """The snapshots in the temporary folder not yet scrubbed and moved: those `collect`
    returned and are still there, else (a stop inside `collect`) what it has written so far."""
    if raw:
        return sorted(str(p.relative_to(work)) for p in raw if p.exists())
    found: list[str] = []
    with contextlib.suppress(OSError):
        archives = sorted(str(p.relative_to(work)) for p in work.rglob("*")
                          if p.name.endswith((".tar.gz", ".tgz")))
        folders = sorted(p.name for p in work.iterdir()  # a snapshot collected as a folder
                         if p.is_dir() and not any(a.startswith(f"{p.name}/") for a in archives))
        found = archives + folders
    return found


def _remove(work: Path) -> None:
    for _ in range(REMOVE_TRIES):
        shutil.rmtree(work, ignore_errors=True)
        if not work.exists():
            return
        time.sleep(REMOVE_PAUSE_S)

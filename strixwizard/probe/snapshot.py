"""A probe that answers from a captured snapshot (a directory or a .tar.gz).

The snapshot is loaded into memory once; symlinks are resolved inside the
snapshot's own tree, so nothing in it can point at the real filesystem.

A snapshot is input from elsewhere (a bug report, a bundle from a node), so it
is read as hostile: archives are read as a stream, every cap below is checked
against a member's header *before* its data is read, directories are walked
without recursion, and anything that is not a regular file, a directory or a
symlink (devices, FIFOs, sockets) is refused rather than read.
"""

from __future__ import annotations

import json
import os
import posixpath
import stat
import tarfile
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from strixwizard.onnode.collector import MAX_SYMLINK_DEPTH, SNAPSHOT_FORMAT
from strixwizard.probe import CmdResult, NotCaptured

#: A snapshot larger than this (uncompressed) is refused rather than loaded.
MAX_SNAPSHOT_BYTES = 512 * 1024 * 1024
#: One file larger than this is refused (the largest real ones, `ibv_devinfo -v` and
#: /proc/cpuinfo of a many-core machine, are well under a megabyte).
MAX_MEMBER_BYTES = 64 * 1024 * 1024
#: More entries than this are refused (a real node's capture holds a few thousand).
MAX_MEMBERS = 200_000
#: Paths deeper than this many components are refused (sysfs device paths are ~15 deep).
MAX_DEPTH = 64
#: Compressed bytes an archive stream decompresses at a time. tarfile's default (10 KiB)
#: inflates a snapshot's text to ~200 KiB at once, then copies what is left of it on every
#: 512-byte read: a quarter of the time of reading the demo's snapshots. 2 KiB keeps it small.
STREAM_CHUNK = 2048


class SnapshotError(ValueError):
    """The path is not a usable snapshot; the message says why."""


@dataclass
class SnapshotTree:
    """An in-memory filesystem: files, symlinks and the directories they imply."""

    files: dict[str, str] = field(default_factory=dict)
    links: dict[str, str] = field(default_factory=dict)
    children: dict[str, set[str]] = field(default_factory=dict)

    def _add_parents(self, path: str) -> None:
        while path != "/":
            parent, name = posixpath.split(path)
            names = self.children.setdefault(parent, set())
            if name in names:  # added before, and with it every directory above
                return
            names.add(name)
            path = parent

    def add_file(self, path: str, text: str) -> None:
        self.files[path] = text
        self._add_parents(path)

    def add_link(self, path: str, target: str) -> None:
        self.links[path] = target
        self._add_parents(path)

    def resolve(self, path: str, depth: int = 0) -> str | None:
        """The symlink-free path inside the tree, or None for a loop."""
        if depth > MAX_SYMLINK_DEPTH:
            return None
        current = "/"  # always normalised, so one more part needs no normpath
        for part in path.split("/"):
            if not part:
                continue
            if part == ".":
                candidate = current
            elif part == "..":
                candidate = posixpath.dirname(current)
            else:
                candidate = current + part if current == "/" else f"{current}/{part}"
            target = self.links.get(candidate)
            if target is None:
                current = candidate
                continue
            joined = target if target.startswith("/") else posixpath.join(current, target)
            resolved = self.resolve(posixpath.normpath(joined), depth + 1)
            if resolved is None:
                return None
            current = resolved
        return current


def _link_inside(path: str, link: str) -> str:
    """A link target as a relative link that stays in the tree, as the tree resolves it: an
    absolute target re-rooted at the tree's root, `..` stopped there. A relative target that
    stays in the tree is kept as written: readers take its last part (`device` ->
    `../../../0000:c5:00.0` names the GPU; `../..` would not)."""
    parent = posixpath.dirname(path)
    if not posixpath.isabs(link):
        depth = len([part for part in parent.split("/") if part])
        for part in link.split("/"):
            depth += -1 if part == ".." else 0 if part in ("", ".") else 1
            if depth < 0:
                break
        else:
            return link
    return posixpath.relpath(posixpath.normpath(posixpath.join(parent, link)), parent)


def _decode(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def _fs_path(member_name: str) -> str | None:
    """Map a member name under `fs/` to the absolute path it stands for."""
    parts = [p for p in member_name.split("/") if p not in ("", ".")]
    if not parts or parts[0] != "fs" or len(parts) == 1:
        return None
    return posixpath.normpath("/" + "/".join(parts[1:]))


class SnapshotProbe:
    """Answers from a snapshot; anything not captured reads as absent or raises `NotCaptured`."""

    def __init__(self, tree: SnapshotTree, meta: dict[str, Any], commands: list[CmdResult],
                 source: str) -> None:
        self.tree = tree
        self.meta = meta
        self.source = source
        self.host = str(meta.get("host") or Path(source).name)
        self._commands = {c.argv: c for c in commands}

    # -- Probe -------------------------------------------------------------
    def read(self, path: str) -> str | None:
        real = self.tree.resolve(path)
        return None if real is None else self.tree.files.get(real)

    def listdir(self, path: str) -> list[str]:
        real = self.tree.resolve(path)
        return [] if real is None else sorted(self.tree.children.get(real, ()))

    def readlink(self, path: str) -> str | None:
        parent = self.tree.resolve(posixpath.dirname(path))
        if parent is None:
            return None
        return self.tree.links.get(posixpath.join(parent, posixpath.basename(path)))

    def run(self, argv: Sequence[str]) -> CmdResult:
        try:
            return self._commands[tuple(argv)]
        except KeyError:
            raise NotCaptured(f"command not captured: {' '.join(argv)}") from None

    @property
    def commands(self) -> list[CmdResult]:
        return list(self._commands.values())

    def write_dir(self, destination: Path) -> Path:
        """Lay this snapshot out as a directory (a safe copy of an archive: every path was
        normalised inside the snapshot when it was loaded, so nothing lands outside)."""
        destination.mkdir(parents=True, exist_ok=False)
        (destination / "meta.json").write_text(json.dumps(self.meta, indent=1, allow_nan=False) + "\n")
        (destination / "commands.json").write_text(
            json.dumps([c.to_json() for c in self._commands.values()], indent=1, allow_nan=False) + "\n")
        fs_root = destination / "fs"
        for path, text in self.tree.files.items():
            target = fs_root / path.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
        for path, link in self.tree.links.items():
            target = fs_root / path.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(_link_inside(path, link), target)
        return destination

    # -- loading -----------------------------------------------------------
    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> SnapshotProbe:
        source = os.fspath(path)
        try:
            mode = os.stat(source).st_mode
        except FileNotFoundError:
            raise SnapshotError(f"{source}: no such file or directory") from None
        except OSError as error:
            raise SnapshotError(f"{source}: cannot be read ({error.strerror})") from None
        if stat.S_ISDIR(mode):
            return cls._from_entries(_dir_entries(Path(source), source), source)
        if not stat.S_ISREG(mode):
            raise SnapshotError(f"{source}: not a directory or a regular file (a device, FIFO or "
                                "socket is never read as a snapshot)")
        try:
            with tarfile.open(source, "r|*", bufsize=STREAM_CHUNK) as archive:
                return cls._from_entries(_tar_entries(archive, source), source)
        except (tarfile.TarError, EOFError, zlib.error, OSError) as error:
            reason = "truncated" if isinstance(error, EOFError) else str(error) or "unreadable"
            raise SnapshotError(
                f"{source}: not a readable snapshot archive ({reason}); "
                "expected a directory or a .tar.gz written by `strixwizard capture`"
            ) from None

    @classmethod
    def from_bytes(cls, data: bytes, source: str) -> SnapshotProbe:
        """Load a .tar.gz held in memory (what the SSH collector streams back)."""
        import io

        try:
            with tarfile.open(fileobj=io.BytesIO(data), mode="r|*", bufsize=STREAM_CHUNK) as archive:
                return cls._from_entries(_tar_entries(archive, source), source)
        except (tarfile.TarError, EOFError, zlib.error) as error:
            raise SnapshotError(f"{source}: collector output is not a snapshot ({error})") from None

    @classmethod
    def _from_entries(cls, entries: Iterator[tuple[str, str, bytes | str]], source: str
                      ) -> SnapshotProbe:
        collected = list(_capped(entries, source))
        prefix = _common_prefix(name for name, _, _ in collected)
        tree = SnapshotTree()
        meta_raw: bytes | None = None
        commands_raw: bytes | None = None
        for raw_name, kind, payload in collected:
            stripped = raw_name[len(prefix):].strip("/")
            if stripped == "meta.json" and kind == "file":
                meta_raw = payload  # type: ignore[assignment]
                continue
            if stripped == "commands.json" and kind == "file":
                commands_raw = payload  # type: ignore[assignment]
                continue
            fs_path = _fs_path(stripped)
            if fs_path is None:
                continue
            if kind == "file":
                tree.add_file(fs_path, _decode(payload))  # type: ignore[arg-type]
            else:
                tree.add_link(fs_path, str(payload))
        meta = _parse_meta(meta_raw, source)
        commands = _parse_commands(commands_raw, source)
        return cls(tree, meta, commands, source)


def _capped(entries: Iterator[tuple[str, str, bytes | str]], source: str
            ) -> Iterator[tuple[str, str, bytes | str]]:
    """The entries, with the count, depth and total-size caps enforced as they come."""
    total = 0
    for count, (name, kind, payload) in enumerate(entries, start=1):
        if count > MAX_MEMBERS:
            raise SnapshotError(f"{source}: more than {MAX_MEMBERS} entries (the cap on entries)")
        if name.count("/") >= MAX_DEPTH:
            raise SnapshotError(f"{source}: a path deeper than {MAX_DEPTH} levels (the cap on depth)")
        if kind == "file":
            total += len(payload)
            if total > MAX_SNAPSHOT_BYTES:
                raise SnapshotError(f"{source}: larger than {MAX_SNAPSHOT_BYTES} bytes "
                                    "uncompressed (the cap on a snapshot's size)")
        yield name, kind, payload


def _parse_meta(raw: bytes | None, source: str) -> dict[str, Any]:
    if raw is None:
        raise SnapshotError(f"{source}: not a snapshot (no meta.json at its top level)")
    try:
        meta = json.loads(raw)
    except ValueError as error:
        raise SnapshotError(f"{source}: meta.json is not valid JSON ({error})") from None
    if not isinstance(meta, dict) or meta.get("format") != SNAPSHOT_FORMAT:
        found = meta.get("format") if isinstance(meta, dict) else type(meta).__name__
        raise SnapshotError(
            f"{source}: meta.json format is {found!r}, expected {SNAPSHOT_FORMAT!r}"
        )
    return meta


def _parse_commands(raw: bytes | None, source: str) -> list[CmdResult]:
    if raw is None:
        return []
    try:
        items = json.loads(raw)
    except ValueError as error:
        raise SnapshotError(f"{source}: commands.json is not valid JSON ({error})") from None
    if not isinstance(items, list):
        raise SnapshotError(f"{source}: commands.json is malformed (a list of commands expected)")
    return [_command(item, index, source) for index, item in enumerate(items)]


def _command(item: object, index: int, source: str) -> CmdResult:
    """One recorded command, every field checked for its type (NaN, Infinity and floats refused)."""
    def malformed(why: str) -> SnapshotError:
        return SnapshotError(f"{source}: commands.json is malformed (entry {index}: {why})")

    if not isinstance(item, dict):
        raise malformed("an object expected")
    argv, rc = item.get("argv"), item.get("rc")
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
        raise malformed("argv must be a non-empty list of strings")
    if not isinstance(rc, int) or isinstance(rc, bool) or not -(2**31) <= rc < 2**31:
        raise malformed(f"rc must be a whole number, not {rc!r}")
    stdout, stderr = item.get("stdout", ""), item.get("stderr", "")
    if not isinstance(stdout, str) or not isinstance(stderr, str):
        raise malformed("stdout and stderr must be strings")
    return CmdResult(argv=tuple(argv), rc=rc, stdout=stdout, stderr=stderr)


def _dir_entries(root: Path, source: str) -> Iterator[tuple[str, str, bytes | str]]:
    """Entries of a directory snapshot, walked with a stack (no recursion limit applies)."""
    pending = [(root, 0)]
    while pending:
        directory, depth = pending.pop()
        if depth >= MAX_DEPTH:
            raise SnapshotError(f"{source}: a path deeper than {MAX_DEPTH} levels (the cap on depth)")
        with os.scandir(directory) as listing:
            entries = sorted(listing, key=lambda entry: entry.name)
        for entry in entries:
            rel = Path(entry.path).relative_to(root).as_posix()
            mode = entry.stat(follow_symlinks=False).st_mode
            if stat.S_ISLNK(mode):
                yield rel, "link", os.readlink(entry.path)
            elif stat.S_ISDIR(mode):
                pending.append((Path(entry.path), depth + 1))
            elif stat.S_ISREG(mode):
                size = entry.stat(follow_symlinks=False).st_size
                if size > MAX_MEMBER_BYTES:
                    raise SnapshotError(f"{source}: {rel} is larger than {MAX_MEMBER_BYTES} bytes "
                                        "(the cap on one file)")
                with open(entry.path, "rb") as handle:
                    yield rel, "file", handle.read(MAX_MEMBER_BYTES + 1)
            else:
                raise SnapshotError(f"{source}: {rel} is a device, FIFO or socket, "
                                    "which a snapshot never holds")


def _tar_entries(archive: tarfile.TarFile, source: str) -> Iterator[tuple[str, str, bytes | str]]:
    """Members of an archive read as a stream: each one's size is judged from its header first."""
    for member in archive:
        name = _clean(member.name)
        if member.issym():
            yield name, "link", member.linkname
        elif member.isfile():
            if member.size > MAX_MEMBER_BYTES:
                raise SnapshotError(f"{source}: {name} is larger than {MAX_MEMBER_BYTES} bytes "
                                    "(the cap on one file)")
            handle = archive.extractfile(member)
            if handle is not None:  # its reader stops at the header's size: no more to ask for
                yield name, "file", handle.read(member.size)
        elif member.isdir():
            continue
        elif member.islnk():
            raise SnapshotError(f"{source}: {name} is a hard link, which a snapshot never holds")
        else:
            raise SnapshotError(f"{source}: {name} is a device, FIFO or socket, "
                                "which a snapshot never holds")


def _common_prefix(raw_names: Iterable[str]) -> str:
    """Accept archives whose entries sit under one top directory (`node-a/meta.json`)."""
    names = set(raw_names)
    if "meta.json" in names:
        return ""
    for name in names:
        if name.endswith("/meta.json") and name.count("/") == 1:
            return name[: -len("meta.json")]
    return ""


def _clean(name: str) -> str:
    while name.startswith("./"):
        name = name[2:]
    return name.lstrip("/")

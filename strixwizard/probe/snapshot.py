"""A probe that answers from a captured snapshot (a directory or a .tar.gz).

The snapshot is loaded into memory once; symlinks are resolved inside the
snapshot's own tree, so nothing in it can point at the real filesystem.
"""

from __future__ import annotations

import json
import os
import posixpath
import tarfile
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from strixwizard.probe import CmdResult, NotCaptured
from strixwizard.probe.collector import MAX_SYMLINK_DEPTH, SNAPSHOT_FORMAT

#: A snapshot larger than this (uncompressed) is refused rather than loaded.
MAX_SNAPSHOT_BYTES = 512 * 1024 * 1024


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
            self.children.setdefault(parent, set()).add(name)
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
        current = "/"
        for part in [p for p in path.split("/") if p]:
            candidate = posixpath.normpath(posixpath.join(current, part))
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
    absolute target re-rooted at the tree's root, `..` stopped there."""
    parent = posixpath.dirname(path)
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
        (destination / "meta.json").write_text(json.dumps(self.meta, indent=1) + "\n")
        (destination / "commands.json").write_text(
            json.dumps([c.to_json() for c in self._commands.values()], indent=1) + "\n")
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
        if os.path.isdir(source):
            return cls._from_entries(_dir_entries(Path(source)), source)
        if not os.path.exists(source):
            raise SnapshotError(f"{source}: no such file or directory")
        try:
            with tarfile.open(source, "r:*") as archive:
                return cls._from_entries(_tar_entries(archive), source)
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
            with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as archive:
                return cls._from_entries(_tar_entries(archive), source)
        except (tarfile.TarError, EOFError, zlib.error) as error:
            raise SnapshotError(f"{source}: collector output is not a snapshot ({error})") from None

    @classmethod
    def _from_entries(cls, entries: Iterator[tuple[str, str, bytes | str]], source: str
                      ) -> SnapshotProbe:
        tree = SnapshotTree()
        meta_raw: bytes | None = None
        commands_raw: bytes | None = None
        total = 0
        for name, kind, payload in entries:
            if kind == "file":
                assert isinstance(payload, bytes)
                total += len(payload)
                if total > MAX_SNAPSHOT_BYTES:
                    raise SnapshotError(f"{source}: larger than {MAX_SNAPSHOT_BYTES} bytes")
            stripped = name.strip("/")
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
        return [
            CmdResult(
                argv=tuple(str(a) for a in item["argv"]),
                rc=int(item["rc"]),
                stdout=str(item.get("stdout", "")),
                stderr=str(item.get("stderr", "")),
            )
            for item in items
        ]
    except (ValueError, TypeError, KeyError) as error:
        raise SnapshotError(f"{source}: commands.json is malformed ({error!r})") from None


def _dir_entries(root: Path) -> Iterator[tuple[str, str, bytes | str]]:
    for dirpath, dirnames, filenames in os.walk(root):
        base = Path(dirpath)
        for name in [*dirnames, *filenames]:
            path = base / name
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                yield rel, "link", os.readlink(path)
            elif path.is_file():
                yield rel, "file", path.read_bytes()


def _tar_entries(archive: tarfile.TarFile) -> Iterator[tuple[str, str, bytes | str]]:
    members = archive.getmembers()
    prefix = _common_prefix(members)
    for member in members:
        name = _clean(member.name)[len(prefix):]
        if member.issym():
            yield name, "link", member.linkname
        elif member.isfile():
            handle = archive.extractfile(member)
            if handle is not None:
                yield name, "file", handle.read()


def _common_prefix(members: list[tarfile.TarInfo]) -> str:
    """Accept archives whose entries sit under one top directory (`node-a/meta.json`)."""
    names = {_clean(m.name) for m in members}
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

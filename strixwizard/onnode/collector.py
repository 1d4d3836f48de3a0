"""Collect a node into the snapshot format.

This module is deliberately self-contained (standard library only, no imports
from strixwizard) because the SSH probe sends its source to the remote node and
runs it there in a single `python3 -` exec, streaming a `.tar.gz` back on
stdout. Locally, `strixwizard capture` calls `collect()` directly.

Symlinks met on the way to a file are recorded as relative symlinks, so sysfs
device and driver links survive in the snapshot.

On a node whose login user is not root (`become: sudo`) the collector runs as that user
and is given the prefix that runs a command as root (`sudo -n --`): only the commands the
spec marks `root` go through it, each as `python3 -c AS_ROOT ARGV` (the sudo rule
strixwizard asks for is scoped to python3).
"""

from __future__ import annotations

import datetime
import errno
import glob
import gzip
import io
import json
import os
import sys
import tarfile
import time
from collections.abc import Callable, Iterable
from typing import Any, BinaryIO

SNAPSHOT_FORMAT = "strixwizard-snapshot/1"
MAX_FILE_BYTES = 4 * 1024 * 1024
COMMAND_TIMEOUT_S = 10.0
MAX_SYMLINK_DEPTH = 40
#: procfs sysctl files fail with ENOMEM when asked for a large read at once.
READ_CHUNK = 64 * 1024


def read_bounded(path: str) -> bytes:
    """Read a file in small chunks, up to MAX_FILE_BYTES."""
    chunks = []
    size = 0
    with open(path, "rb") as handle:
        while size < MAX_FILE_BYTES:
            chunk = handle.read(READ_CHUNK)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    return b"".join(chunks)[:MAX_FILE_BYTES]


#: Where ethtool, dcb, devlink and rdma live; a non-root login on Debian has none of them on PATH.
SBIN_DIRS = ("/usr/local/sbin", "/usr/sbin", "/sbin")


def search_path(path: str) -> str:
    """PATH with the sbin folders it lacks appended (the user's own order comes first)."""
    parts = [part for part in path.split(os.pathsep) if part]
    return os.pathsep.join(parts + [d for d in SBIN_DIRS if d not in parts])


#: What a `root` command runs as under sudo: one line (one line in sudo's log), which sets the
#: C locale and root's HOME (sudo may keep the user's), then execs ARGV from sudo's secure_path;
#: a missing program is exit 127 with the shell's words, as `run_command` says it.
AS_ROOT = ("import os,pwd,shutil,sys;"
           "os.environ.update(LC_ALL='C',LANG='C',HOME=pwd.getpwuid(os.geteuid()).pw_dir);"
           "p=shutil.which(sys.argv[1]);"
           "p or sys.exit(print(sys.argv[1]+': command not found',file=sys.stderr) or 127);"
           "os.execv(p,sys.argv[1:])")


def as_root_argv(argv: list[str], become: list[str]) -> list[str]:
    """The argv that runs `argv` as root through `become` (e.g. `sudo -n --`)."""
    return [*become, "python3", "-c", AS_ROOT, *argv]


def run_command(argv: list[str]) -> dict[str, Any]:
    """Run argv in the C locale, bounded in time; a missing tool is rc 127, a timeout rc 124."""
    import subprocess  # here: reading a snapshot on the head imports this module's constants only

    env = dict(os.environ, LC_ALL="C", LANG="C", PATH=search_path(os.environ.get("PATH", "")))
    try:
        done = subprocess.run(
            argv,
            capture_output=True,
            timeout=COMMAND_TIMEOUT_S,
            env=env,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except FileNotFoundError:
        return {"argv": argv, "rc": 127, "stdout": "", "stderr": argv[0] + ": command not found"}
    except subprocess.TimeoutExpired:
        return {"argv": argv, "rc": 124, "stdout": "",
                "stderr": f"timed out after {COMMAND_TIMEOUT_S:g} s"}
    except OSError as error:
        return {"argv": argv, "rc": 126, "stdout": "", "stderr": str(error)}
    return {
        "argv": argv,
        "rc": done.returncode,
        "stdout": done.stdout.decode("utf-8", "replace"),
        "stderr": done.stderr.decode("utf-8", "replace"),
    }


class Sink:
    """Where collected entries go: a directory or a tar stream."""

    def add_file(self, name: str, data: bytes) -> None:
        raise NotImplementedError

    def add_symlink(self, name: str, target: str) -> None:
        raise NotImplementedError

    def close(self) -> None:
        pass


class DirSink(Sink):
    def __init__(self, root: str) -> None:
        self.root = root

    def _path(self, name: str) -> str:
        path = os.path.join(self.root, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        return path

    def add_file(self, name: str, data: bytes) -> None:
        with open(self._path(name), "wb") as handle:
            handle.write(data)

    def add_symlink(self, name: str, target: str) -> None:
        path = self._path(name)
        if os.path.lexists(path):
            os.unlink(path)
        os.symlink(target, path)


class TarSink(Sink):
    """A `.tar.gz` on `stream`. With `mtime`, every time stamp (the gzip header's too) is that
    one, so the same node gives the same bytes (the demo's snapshots, rebuilt by a script)."""

    def __init__(self, stream: BinaryIO, mtime: int | None = None) -> None:
        self.gzip = gzip.GzipFile(fileobj=stream, mode="wb", mtime=mtime) if mtime is not None else None
        self.tar = tarfile.open(  # noqa: SIM115 - closed by close(), like the stream it wraps
            fileobj=self.gzip or stream, mode="w|" if self.gzip else "w|gz", format=tarfile.PAX_FORMAT
        )
        self.mtime = time.time() if mtime is None else mtime

    def add_file(self, name: str, data: bytes) -> None:
        info = tarfile.TarInfo(name)
        info.size = len(data)
        info.mtime = int(self.mtime)
        info.mode = 0o644
        self.tar.addfile(info, io.BytesIO(data))

    def add_symlink(self, name: str, target: str) -> None:
        info = tarfile.TarInfo(name)
        info.type = tarfile.SYMTYPE
        info.linkname = target
        info.mtime = int(self.mtime)
        info.mode = 0o777
        self.tar.addfile(info)

    def close(self) -> None:
        self.tar.close()
        if self.gzip is not None:
            self.gzip.close()


def _empty_gid_slot(path: str, error: OSError) -> bool:
    """The kernel answers EINVAL (ENODATA since 5.10) for the attributes of an unused GID table
    slot (rdma_get_gid_attr in drivers/infiniband/core/cache.c): an empty slot, not a failure.
    A port has hundreds of them; listing each as unreadable would bury the real failures."""
    return "/gid_attrs/" in path and error.errno in (errno.EINVAL, errno.ENODATA)


class Collector:
    """Walks the spec over the real filesystem, recording into a sink."""

    def __init__(
        self, sink: Sink, root: str = "/", runner: Callable[[list[str]], dict[str, Any]] | None = None,
        become: list[str] | None = None,
    ) -> None:
        self.sink = sink
        self.root = root
        self.runner = runner or self.run
        #: The argv prefix that runs a `root` command as root; None: run it as we are.
        self.become = become or None
        self.recorded_links: set[str] = set()
        self.recorded_files: set[str] = set()
        self.unreadable: dict[str, str] = {}

    def _real(self, path: str) -> str:
        return os.path.join(self.root, path.lstrip("/"))

    def _record_link(self, link: str, target: str) -> None:
        if link in self.recorded_links:
            return
        self.recorded_links.add(link)
        if os.path.isabs(target):
            target = os.path.relpath(target, os.path.dirname(link))
        self.sink.add_symlink("fs" + link, target)

    def resolve(self, path: str, depth: int = 0) -> str:
        """Return the symlink-free form of `path`, recording every symlink met."""
        if depth > MAX_SYMLINK_DEPTH:
            raise OSError(40, "too many levels of symbolic links", path)
        current = "/"
        for part in [p for p in path.split("/") if p]:
            candidate = os.path.normpath(os.path.join(current, part))
            real = self._real(candidate)
            if os.path.islink(real):
                target = os.readlink(real)
                self._record_link(candidate, target)
                joined = target if os.path.isabs(target) else os.path.join(current, target)
                current = self.resolve(os.path.normpath(joined), depth + 1)
            else:
                current = candidate
        return current

    def add_path_file(self, path: str) -> None:
        try:
            real_path = self.resolve(path)
            if real_path in self.recorded_files or not os.path.isfile(self._real(real_path)):
                return
            data = read_bounded(self._real(real_path))
        except OSError as error:
            if not _empty_gid_slot(path, error):
                self.unreadable[path] = os.strerror(error.errno) if error.errno else str(error)
            return
        self.recorded_files.add(real_path)
        self.sink.add_file("fs" + real_path, data)

    def add_path_link(self, path: str) -> None:
        try:
            parent = self.resolve(os.path.dirname(path))
            link = os.path.join(parent, os.path.basename(path))
            if os.path.islink(self._real(link)):
                self._record_link(link, os.readlink(self._real(link)))
        except OSError as error:
            self.unreadable[path] = os.strerror(error.errno) if error.errno else str(error)

    def glob(self, pattern: str) -> list[str]:
        root = self.root.rstrip("/")
        return sorted(p[len(root) :] if root else p for p in glob.glob(self._real(pattern)))

    def expand(self, command: dict[str, Any]) -> Iterable[list[str]]:
        argv: list[str] = list(command["argv"])
        each = command.get("each")
        if not each:
            yield argv
            return
        directory = {"netdev": "/sys/class/net", "rdmadev": "/sys/class/infiniband"}[each]
        try:
            names = sorted(os.listdir(self._real(directory)))
        except OSError:
            names = []
        for name in names:
            if each == "netdev" and name == "lo":
                continue
            yield [arg.replace("{" + each + "}", name) for arg in argv]

    def run(self, argv: list[str]) -> dict[str, Any]:
        return run_command(argv)

    def run_entry(self, command: dict[str, Any], argv: list[str]) -> dict[str, Any]:
        """One command of the spec: a `root` one through `become` when we are not root,
        recorded under its own argv (what the facts look it up by)."""
        if not (command.get("root") and self.become):
            return self.runner(argv)
        return dict(self.runner(as_root_argv(argv, self.become)), argv=argv)

    def hostname(self) -> str:
        import socket

        try:
            with open(self._real("/proc/sys/kernel/hostname")) as handle:
                return handle.read().strip() or socket.gethostname()
        except OSError:
            return socket.gethostname()

    def collect(
        self, spec: dict[str, Any], tool_version: str, extra_meta: dict[str, Any] | None = None
    ) -> None:
        for pattern in spec["files"]:
            for path in self.glob(pattern):
                self.add_path_file(path)
        for pattern in spec["links"]:
            for path in self.glob(pattern):
                self.add_path_link(path)
        commands = [self.run_entry(command, argv)
                    for command in spec["commands"] for argv in self.expand(command)]
        meta = {
            "format": SNAPSHOT_FORMAT,
            "host": self.hostname(),
            # timezone.utc, not datetime.UTC (3.11+): the node's own python3 may be 3.8.
            "captured_at": datetime.datetime.now(datetime.timezone.utc).isoformat(
                timespec="seconds"
            ),
            "tool_version": tool_version,
            "unreadable": self.unreadable,
        }
        meta.update(extra_meta or {})
        self.sink.add_file("commands.json", json.dumps(commands, indent=1, allow_nan=False).encode())
        self.sink.add_file("meta.json", json.dumps(meta, indent=1, allow_nan=False).encode())
        self.sink.close()


def collect(
    spec: dict[str, Any],
    sink: Sink,
    tool_version: str,
    root: str = "/",
    runner: Callable[[list[str]], dict[str, Any]] | None = None,
    extra_meta: dict[str, Any] | None = None,
    become: list[str] | None = None,
) -> None:
    """Collect `spec` from the tree at `root`; `runner` answers commands (default: run them);
    `become`: the prefix that runs the spec's `root` commands as root."""
    Collector(sink, root, runner, become).collect(spec, tool_version, extra_meta)


def main(spec_json: str, tool_version: str, become: list[str] | None = None) -> None:
    """Entry point on a remote node: stream a snapshot tar.gz to stdout; `become` runs the
    root reads when the login user is not root."""
    as_root = become if os.geteuid() != 0 else None
    collect(json.loads(spec_json), TarSink(sys.stdout.buffer), tool_version, become=as_root)
    sys.stdout.buffer.flush()

"""The primitive writes and reads the executor performs on a node. Standard library only.

This module runs in two places: in-process for the local executor, and on a
remote node, where the SSH executor sends its source to `python3 -c` and then
talks to `serve()` with one JSON request per line and one JSON answer per line,
so the result of every single operation is known on the head as it happens.

Requests: {"op": OP, ...}, OP one of `Op` (the one declaration of the op names; the head's
request types, `node/channel.py`, build them with `request(op, ...)`, so mypy checks every
name it sends). Answers: {"ok": true, ...} or {"ok": false, "error": "..."}; the head reads
them in one place (`node/channel.py` `answer_of`). This wire format only grows: a node may run
an older copy of this program.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import subprocess
import sys
import tempfile
from typing import Any, Literal

COMMAND_TIMEOUT_S = 30.0

Op = Literal["read", "exists", "write", "replace", "delete", "mkdir", "rmdir", "run", "mtu_get",
             "mtu_set", "lock", "unlock", "ping", "read_bytes", "write_bytes"]


def request(op: Op, **fields: Any) -> dict[str, Any]:
    """A request for `handle` (here, or `serve` on a node)."""
    return {"op": op, **fields}


#: Admin tools (ip, dcb, ethtool, devlink) live here on Debian; a non-login SSH PATH lacks them.
SBIN_DIRS = ("/usr/local/sbin", "/usr/sbin", "/sbin")


def _run(argv: list[str]) -> dict[str, Any]:
    env = dict(os.environ, LC_ALL="C", LANG="C")
    path = env.get("PATH", "/usr/local/bin:/usr/bin:/bin").split(":")
    env["PATH"] = ":".join(path + [d for d in SBIN_DIRS if d not in path])
    try:
        done = subprocess.run(argv, capture_output=True, timeout=COMMAND_TIMEOUT_S, env=env,
                              stdin=subprocess.DEVNULL, check=False)
    except FileNotFoundError:
        return {"ok": True, "rc": 127, "stdout": "", "stderr": f"{argv[0]}: command not found"}
    except subprocess.TimeoutExpired:
        return {"ok": True, "rc": 124, "stdout": "", "stderr": f"timed out after {COMMAND_TIMEOUT_S:g} s"}
    return {"ok": True, "rc": done.returncode, "stdout": done.stdout.decode("utf-8", "replace"),
            "stderr": done.stderr.decode("utf-8", "replace")}


def write_durably(path: str, data: str, mode: int) -> None:
    """Write a whole file atomically and durably: a temp file in the same directory, fsync,
    rename, fsync of the directory. The head's journal writes its files with it too."""
    directory = os.path.dirname(path)
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".strixwizard-", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    dir_fd = os.open(directory, os.O_RDONLY)  # the rename itself reaches the disk
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


#: Lock files this process holds (path -> fd): held until `unlock` or the process ends.
_LOCKS: dict[str, int] = {}


def _lock(path: str, holder: dict[str, Any], take_over: bool) -> dict[str, Any]:
    """An exclusive `flock` on `path`, recording `holder`; when it is held, who holds it.
    `take_over` replaces a held lock file by a new one (the caller judged its holder dead)."""
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    for _ in range(3):
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            held = os.pread(fd, 4096, 0).decode("utf-8", "replace")
            os.close(fd)
            if not take_over:
                return {"ok": False, "error": f"{path} is locked", "holder": held}
            os.unlink(path)
            take_over = False
            continue
        if os.path.exists(path) and os.stat(path).st_ino == os.fstat(fd).st_ino:
            previous = os.pread(fd, 4096, 0).decode("utf-8", "replace")
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps({**holder, "runner_pid": os.getpid()}, allow_nan=False).encode(), 0)
            os.fsync(fd)
            _LOCKS[path] = fd
            return {"ok": True, "previous": previous}
        os.close(fd)  # the file was replaced between open and flock: lock the new one
    return {"ok": False, "error": f"{path}: cannot lock (replaced again and again)"}


def _unlock(path: str) -> dict[str, Any]:
    fd = _LOCKS.pop(path, None)
    if fd is not None:
        os.ftruncate(fd, 0)  # an empty lock file: released cleanly, not left by a crash
        os.close(fd)
    return {"ok": True}


def handle(request: dict[str, Any]) -> dict[str, Any]:
    op = request.get("op")
    path = str(request.get("path", ""))
    try:
        if op == "read":
            try:
                with open(path, encoding="utf-8", errors="replace") as handle_:
                    return {"ok": True, "value": handle_.read()}
            except FileNotFoundError:
                return {"ok": True, "value": None}
        if op == "exists":
            return {"ok": True, "value": "present" if os.path.lexists(path) else None}
        if op == "write":  # sysfs / configfs attribute: one write of the value, no temp file
            with open(path, "w", encoding="utf-8") as handle_:
                handle_.write(str(request["data"]))
            return {"ok": True}
        if op == "replace":
            write_durably(path, str(request["data"]), int(request.get("mode", 0o644)))
            return {"ok": True}
        if op == "delete":
            if os.path.lexists(path):
                os.unlink(path)
            return {"ok": True}
        if op == "mkdir":
            os.mkdir(path)
            return {"ok": True}
        if op == "rmdir":
            os.rmdir(path)
            return {"ok": True}
        if op == "run":
            return _run([str(a) for a in request["argv"]])
        if op == "mtu_get":
            try:
                with open(f"/sys/class/net/{request['ifname']}/mtu", encoding="ascii") as handle_:
                    return {"ok": True, "value": handle_.read().strip()}
            except FileNotFoundError:
                return {"ok": False, "error": f"no interface {request['ifname']}"}
        if op == "mtu_set":
            done = _run(["ip", "link", "set", "dev", str(request["ifname"]), "mtu",
                         str(request["mtu"])])
            if done["rc"] != 0:
                return {"ok": False, "error": (done["stderr"] or done["stdout"]).strip()
                        or f"ip exited {done['rc']}"}
            return {"ok": True}
        if op == "lock":
            return _lock(path, dict(request.get("holder") or {}), bool(request.get("take_over")))
        if op == "unlock":
            return _unlock(path)
        if op == "ping":
            return {"ok": True, "pid": os.getpid()}
        if op == "read_bytes":  # a file's bytes in pieces (a program copied through the head)
            with open(path, "rb") as handle_:
                handle_.seek(int(request.get("offset", 0)))
                data = handle_.read(int(request["size"]))
                size = os.fstat(handle_.fileno()).st_size
            return {"ok": True, "value": base64.b64encode(data).decode("ascii"), "size": size}
        if op == "write_bytes":  # offset 0 starts the file anew (mode 0600 until installed)
            offset = int(request.get("offset", 0))
            flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if offset == 0 else 0)
            fd = os.open(path, flags, 0o600)
            try:
                os.pwrite(fd, base64.b64decode(str(request["data"])), offset)
                os.fsync(fd)
            finally:
                os.close(fd)
            return {"ok": True}
        return {"ok": False, "error": f"unknown op {op!r}"}
    except OSError as error:
        reason = os.strerror(error.errno) if error.errno else str(error)
        return {"ok": False, "error": f"{path}: {reason}" if path else reason}


def serve() -> None:
    """Answer requests from stdin, one JSON line each, until stdin closes."""
    out = sys.stdout
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            answer = handle(json.loads(line))
        except Exception as error:  # a malformed request must not kill the session
            answer = {"ok": False, "error": f"runner error: {error!r}"}
        out.write(json.dumps(answer, allow_nan=False) + "\n")
        out.flush()

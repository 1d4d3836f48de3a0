"""The ops channel, typed on the head side: one request type per op, one answer type per kind
of answer, and the one place a failed answer becomes an error (`answer_of`).

The node runs `onnode/ops.py` (standard library, Python 3.8) and speaks JSON lines:
`{"op": OP, ...}` in, `{"ok": true, ...}` or `{"ok": false, "error": ...}` out. That wire
format is unchanged, so a node running an older copy still answers. Here it is typed, as
httpx types its transport seam: a transport moves wire dicts (`OpsTransport`: in this process,
over SSH, from a replay), and `OpsChannel.send(request)` gives the request's own answer type,
or raises `OpRefused` (`NodeLockHeld` when a lock is held) for a failed answer.

    channel = session.ops()
    done = channel.send(Run(("ip", "-j", "link")))   # Completed(rc=0, stdout=..., stderr=...)
    channel.send(ReplaceFile("/etc/x.conf", text, mode=0o644))
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar

from strixwizard.node.errors import NodeLockHeld, OpRefused

if TYPE_CHECKING:  # the node program loads subprocess: a replay that sends nothing needs none
    from strixwizard.onnode import ops

#: What goes over the wire each way: one JSON object.
Wire = dict[str, Any]


# -- answers ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Done:
    """The node did it; nothing to report."""


@dataclass(frozen=True)
class Value:
    """What the node read: a file's text, `"present"` for an existing path, an MTU;
    None when there is no such file or path."""

    value: str | None


@dataclass(frozen=True)
class Completed:
    """A command ran to its end (a missing program is `rc` 127, a timeout 124)."""

    rc: int
    stdout: str
    stderr: str


@dataclass(frozen=True)
class Locked:
    """The lock is ours; `previous` is what the lock file held before (empty: released cleanly)."""

    previous: str


@dataclass(frozen=True)
class Pong:
    """The node's step runner answers; `pid` is its process id."""

    pid: int


A = TypeVar("A")


# -- requests ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Request(Generic[A]):
    """One operation on the node; `op` is its name on the wire, `answer` reads its answer."""

    op: ClassVar[ops.Op]

    def wire(self) -> Wire:
        from strixwizard.onnode import ops

        return ops.request(self.op, **{f.name: _plain(getattr(self, f.name))
                                       for f in dataclasses.fields(self)})

    def answer(self, wire: Mapping[str, Any]) -> A:
        raise NotImplementedError


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


class _Done(Request[Done]):
    def answer(self, wire: Mapping[str, Any]) -> Done:
        return Done()


class _Value(Request[Value]):
    def answer(self, wire: Mapping[str, Any]) -> Value:
        value = wire.get("value")
        return Value(None if value is None else str(value))


@dataclass(frozen=True)
class ReadFile(_Value):
    """A file's text (undecodable bytes replaced); `Value(None)` when there is no such file."""

    op: ClassVar[ops.Op] = "read"
    path: str


@dataclass(frozen=True)
class Exists(_Value):
    """`Value("present")` when something (a link included) is at `path`, else `Value(None)`."""

    op: ClassVar[ops.Op] = "exists"
    path: str


@dataclass(frozen=True)
class WriteAttribute(_Done):
    """One write of `data` to a sysfs or configfs attribute (no temporary file)."""

    op: ClassVar[ops.Op] = "write"
    path: str
    data: str


@dataclass(frozen=True)
class ReplaceFile(_Done):
    """The whole file replaced atomically and durably, with `mode`."""

    op: ClassVar[ops.Op] = "replace"
    path: str
    data: str
    mode: int = 0o644


@dataclass(frozen=True)
class Delete(_Done):
    op: ClassVar[ops.Op] = "delete"
    path: str


@dataclass(frozen=True)
class MakeDir(_Done):
    op: ClassVar[ops.Op] = "mkdir"
    path: str


@dataclass(frozen=True)
class RemoveDir(_Done):
    op: ClassVar[ops.Op] = "rmdir"
    path: str


@dataclass(frozen=True)
class Run(Request[Completed]):
    """A command, as an argv (no shell), with C locale and the admin tools on its PATH."""

    op: ClassVar[ops.Op] = "run"
    argv: tuple[str, ...]

    def answer(self, wire: Mapping[str, Any]) -> Completed:
        return Completed(int(wire.get("rc", 1)), str(wire.get("stdout", "")),
                         str(wire.get("stderr", "")))


@dataclass(frozen=True)
class GetMtu(_Value):
    op: ClassVar[ops.Op] = "mtu_get"
    ifname: str


@dataclass(frozen=True)
class SetMtu(_Done):
    op: ClassVar[ops.Op] = "mtu_set"
    ifname: str
    mtu: int


@dataclass(frozen=True)
class Lock(Request[Locked]):
    """An exclusive `flock` on `path` recording `holder`; `take_over` replaces a held lock
    file (the caller judged its holder gone). A held lock is `NodeLockHeld`."""

    op: ClassVar[ops.Op] = "lock"
    path: str
    holder: Mapping[str, Any] = field(default_factory=dict)
    take_over: bool = False

    def wire(self) -> Wire:
        from strixwizard.onnode import ops

        return ops.request(self.op, path=self.path, holder=dict(self.holder),
                           take_over=self.take_over)

    def answer(self, wire: Mapping[str, Any]) -> Locked:
        return Locked(str(wire.get("previous") or ""))


@dataclass(frozen=True)
class Unlock(_Done):
    op: ClassVar[ops.Op] = "unlock"
    path: str


@dataclass(frozen=True)
class Ping(Request[Pong]):
    op: ClassVar[ops.Op] = "ping"

    def answer(self, wire: Mapping[str, Any]) -> Pong:
        return Pong(int(wire.get("pid", 0)))


@dataclass(frozen=True)
class Chunk:
    """A piece of a file's bytes, and the file's whole size."""

    data: bytes
    size: int


@dataclass(frozen=True)
class ReadBytes(Request[Chunk]):
    """Up to `size` bytes of a file from `offset` (base64 on the wire): a program is copied
    from one node to another through the head in such pieces."""

    op: ClassVar[ops.Op] = "read_bytes"
    path: str
    offset: int
    size: int

    def answer(self, wire: Mapping[str, Any]) -> Chunk:
        import base64

        return Chunk(base64.b64decode(str(wire.get("value", ""))), int(wire.get("size", 0)))


@dataclass(frozen=True)
class WriteBytes(_Done):
    """`data` written at `offset` of a file (offset 0: the file is started anew, mode 0600)."""

    op: ClassVar[ops.Op] = "write_bytes"
    path: str
    offset: int
    data: bytes

    def wire(self) -> Wire:
        import base64

        from strixwizard.onnode import ops

        return ops.request(self.op, path=self.path, offset=self.offset,
                           data=base64.b64encode(self.data).decode("ascii"))


#: Every request type, one per op the node answers (`tests/test_ops_channel.py` holds them equal).
REQUESTS: tuple[type[Request[Any]], ...] = (
    ReadFile, Exists, WriteAttribute, ReplaceFile, Delete, MakeDir, RemoveDir, Run, GetMtu,
    SetMtu, Lock, Unlock, Ping, ReadBytes, WriteBytes)


def answer_of(request: Request[A], wire: Mapping[str, Any]) -> A:
    """The typed answer to `request`, or the error a failed answer means: the one place where
    the wire's `ok` is looked at."""
    if wire.get("ok") is not True:
        reason = str(wire.get("error") or f"the node refused {request.op}")
        if "holder" in wire:
            raise NodeLockHeld(reason, str(wire["holder"]))
        raise OpRefused(reason)
    return request.answer(wire)


class OpsTransport(Protocol):
    """Moves one wire request to the node and its wire answer back."""

    def exchange(self, wire: Wire) -> Wire: ...

    def close(self) -> None: ...


class OpsChannel:
    """The fix engine's channel to a node: typed requests over a transport."""

    def __init__(self, transport: OpsTransport) -> None:
        self.transport = transport

    def send(self, request: Request[A]) -> A:
        return answer_of(request, self.transport.exchange(request.wire()))

    def close(self) -> None:
        self.transport.close()


def here(request: Request[A]) -> A:
    """`request` done by this process, on this machine."""
    from strixwizard.onnode import ops

    return answer_of(request, ops.handle(request.wire()))

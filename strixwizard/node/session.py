"""The node session: everything strixwizard does on a node goes through one of these.

Three things a session does, each the only way the rest of the code does it:
- `collect(spec)`: a snapshot of the node (one exec over SSH), as a read-only `Probe`;
  `collect_archive(spec)` gives the snapshot's `.tar.gz` bytes. The caller hands in the
  spec (`facts/spec.py` SPEC, or a part of it): the transport does not know its payload;
- `ops()`: the fix engine's channel: typed requests and answers (`node/channel.py`) over
  one JSON line each way to `onnode/ops.py`;
- `start(argv, limit_s)`: a program under the supervisor, as a `Process`.

Implementations: `LocalSession` (this machine, optionally a network namespace),
`SshSession` (paramiko; one connection per node, opened on first use and shared by
the three), `ReplaySession` (snapshots and recorded outputs). Failures are
`NodeError`s (`node/errors.py`). Engines take a `Connector` (target -> session) so
tests and the wizard inject one instead of patching module functions; the default one is
`node.connect.connect`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from strixwizard.node.channel import OpsChannel
    from strixwizard.node.process import Process
    from strixwizard.node.target import Target
    from strixwizard.probe import Probe

#: A collection spec (`facts/spec.py` SPEC, or a part of it): files, trees and argvs to gather.
Spec = Mapping[str, Any]


class ProgramRunner(Protocol):
    """What the live tests need of a node: start supervised programs (`live.hosts.Host`)."""

    name: str
    python: str

    def start(self, argv: Sequence[str], limit_s: float, label: str = "") -> Process: ...

    def close(self) -> None: ...


class NodeSession(ProgramRunner, Protocol):
    @property
    def where(self) -> str:
        """How the node is reached, for messages and journals: "ssh root@10.0.0.2", "local"."""
        ...

    def collect(self, spec: Spec) -> Probe: ...

    def collect_archive(self, spec: Spec) -> bytes: ...

    def ops(self) -> OpsChannel: ...


Connector = Callable[["Target"], NodeSession]


"""The node seam: one session interface to reach a node, one error hierarchy, one cancel,
and the typed ops channel (`channel`) a session's `ops()` gives.

Importing this package loads no paramiko, pyroute2 or subprocess code: the
implementations (`node.local`, `node.ssh`, `node.replay`) load on first use, and so do the
names below (`from strixwizard.node import connect` works as before).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Bound now: the submodule of the same name would otherwise shadow the function once imported.
from strixwizard.node.connect import connect

if TYPE_CHECKING:
    from strixwizard.node.cancel import Cancel
    from strixwizard.node.channel import OpsChannel
    from strixwizard.node.command import program_name, remote_command
    from strixwizard.node.errors import (
        AuthFailed,
        Cancelled,
        ChangedHostKey,
        CollectionFailed,
        ConnectFailed,
        ConnectionLost,
        DeadlineExceeded,
        HostKeyError,
        NodeError,
        PassphraseNeeded,
        ProgramNotFound,
        RuntimeMissing,
        UnknownHostKey,
        Unreachable,
    )
    from strixwizard.node.process import Process
    from strixwizard.node.session import Connector, NodeSession, ProgramRunner, Spec
    from strixwizard.node.target import LocalTarget, SnapshotTarget, SshTarget, Target, target_for

#: Where each name of the package lives: loaded on first use (PEP 562), so importing a
#: submodule (`strixwizard.node.signals`, as every command does) loads none of the others.
_WHERE = {
    "Cancel": "cancel", "program_name": "command", "remote_command": "command",
    "Process": "process", "Connector": "session", "NodeSession": "session",
    "OpsChannel": "channel", "ProgramRunner": "session", "Spec": "session",
    "LocalTarget": "target", "SnapshotTarget": "target", "SshTarget": "target", "Target": "target",
    "target_for": "target",
    **{name: "errors" for name in (
        "AuthFailed", "Cancelled", "ChangedHostKey", "CollectionFailed", "ConnectFailed",
        "ConnectionLost", "DeadlineExceeded", "HostKeyError", "NodeError", "PassphraseNeeded",
        "ProgramNotFound", "RuntimeMissing", "UnknownHostKey", "Unreachable")},
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "AuthFailed",
    "Cancel",
    "Cancelled",
    "ChangedHostKey",
    "CollectionFailed",
    "ConnectFailed",
    "ConnectionLost",
    "Connector",
    "DeadlineExceeded",
    "HostKeyError",
    "LocalTarget",
    "NodeError",
    "NodeSession",
    "OpsChannel",
    "PassphraseNeeded",
    "Process",
    "ProgramNotFound",
    "ProgramRunner",
    "RuntimeMissing",
    "SnapshotTarget",
    "Spec",
    "SshTarget",
    "Target",
    "UnknownHostKey",
    "Unreachable",
    "connect",
    "program_name",
    "remote_command",
    "target_for",
]

"""The node seam: one session interface to reach a node, one error hierarchy, one cancel.

Importing this package loads no paramiko, pyroute2 or subprocess code: the
implementations (`node.local`, `node.ssh`, `node.replay`) load on first use.
"""

from __future__ import annotations

from strixwizard.node.cancel import Cancel
from strixwizard.node.command import program_name, remote_command
from strixwizard.node.connect import connect
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
from strixwizard.node.session import Connector, NodeSession, OpsChannel, ProgramRunner, Spec
from strixwizard.node.target import LocalTarget, SnapshotTarget, SshTarget, Target, target_for

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

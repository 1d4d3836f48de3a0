"""Collect a remote node over SSH in one exec, then answer from the snapshot it streams back.

The work is done by the node session (`strixwizard.node.ssh.SshSession.collect`): the
collector's source goes to `python3 -` on the node, the snapshot `.tar.gz` comes back
on stdout, read to the end. This module keeps the names the rest of the code imports.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from strixwizard.node.errors import NodeError, UnknownHostKey
from strixwizard.node.session import Connector, Spec, connect
from strixwizard.node.target import DEFAULT_KNOWN_HOSTS, SshTarget

if TYPE_CHECKING:
    from strixwizard.probe.snapshot import SnapshotProbe

#: Every collection failure; `str(error)` is the reason shown to the user.
SshError = NodeError


def collect_ssh(target: SshTarget, spec: Spec | None = None, connector: Connector | None = None
                ) -> SnapshotProbe:
    """Collect one node and load it; raises `SshError` (a `NodeError`) with the reason."""
    from strixwizard.probe.snapshot import SnapshotProbe

    session = (connector or connect)(target)
    try:
        probe = session.collect(spec)
    finally:
        session.close()
    if not isinstance(probe, SnapshotProbe):
        raise NodeError(f"{target.name}: the session gave no snapshot")
    return probe


def collect_ssh_archive(target: SshTarget, spec: Spec | None = None,
                        connector: Connector | None = None) -> bytes:
    """Collect one node into snapshot `.tar.gz` bytes; raises `SshError` with the reason."""
    session = (connector or connect)(target)
    try:
        return session.collect_archive(spec)
    finally:
        session.close()


__all__ = ["DEFAULT_KNOWN_HOSTS", "SshError", "SshTarget", "UnknownHostKey", "collect_ssh",
           "collect_ssh_archive"]

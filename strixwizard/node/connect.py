"""The default `Connector`: the one place a target's kind picks its session.

A module of its own so that no session implementation imports it back (no import loop).
"""

from __future__ import annotations

from strixwizard.node.session import NodeSession
from strixwizard.node.target import LocalTarget, SnapshotTarget, SshTarget, Target


def connect(target: Target) -> NodeSession:
    """SSH for an `SshTarget`, this machine for a `LocalTarget`, a replay of the snapshot (its
    private copy, if it has one) for a `SnapshotTarget`."""
    if isinstance(target, SshTarget):
        from strixwizard.node.ssh import SshSession

        return SshSession(target)
    if isinstance(target, SnapshotTarget):
        from strixwizard.node.replay import SnapshotSession

        return SnapshotSession(target)
    assert isinstance(target, LocalTarget)
    from strixwizard.node.local import LocalSession

    return LocalSession(target.name, netns=target.netns)

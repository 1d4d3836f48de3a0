"""The SSH runner: the fix engine's runner for a remote node, over one node session.

The session (`strixwizard.node.ssh.SshSession`) runs `ops.serve()` on the node and
answers one JSON line per request, so every step's outcome is known on the head as
soon as the node has it; verification collects the node over the same connection.
A session that ends or stops answering makes the node `Unreachable`.
"""

from __future__ import annotations

from strixwizard.fixing.runner import SessionRunner
from strixwizard.node.connect import connect
from strixwizard.node.session import Connector, NodeSession
from strixwizard.node.target import SshTarget
from strixwizard.places import NODE_JOURNAL_DIR


class SshRunner(SessionRunner):
    """Over `session` when given, else over a new one from `connector` (`connect` by default)."""

    def __init__(self, target: SshTarget, journal_dir: str = NODE_JOURNAL_DIR,
                 connector: Connector | None = None, session: NodeSession | None = None) -> None:
        super().__init__(target.name, session or (connector or connect)(target), journal_dir)
        self.target = target
        self.where = target.where

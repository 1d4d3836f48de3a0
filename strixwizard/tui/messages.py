"""Messages from workers to the app ("attributes down, messages up")."""

from __future__ import annotations

from textual.message import Message

from strixwizard.engine import Node
from strixwizard.tui.jobs import Discovery


class NodeProgress(Message):
    """A node's collection started, finished or failed (from the engine's progress callback)."""

    def __init__(self, run: int, node: str, event: str, text: str) -> None:
        super().__init__()
        self.run = run
        self.node = node
        self.event = event
        self.text = text


class DiscoveryDone(Message):
    def __init__(self, run: int, discovery: Discovery) -> None:
        super().__init__()
        self.run = run
        self.discovery = discovery


class DiscoveryFailed(Message):
    def __init__(self, run: int, reason: str, next_step: str) -> None:
        super().__init__()
        self.run = run
        self.reason = reason
        self.next_step = next_step


class SshTested(Message):
    def __init__(self, nodes: list[Node], trusted: str | None) -> None:
        super().__init__()
        self.nodes = nodes
        self.trusted = trusted


class SessionChanged(Message):
    """The session (site, discovery, saved files) changed: screens re-render from it."""

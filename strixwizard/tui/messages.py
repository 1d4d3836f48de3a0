"""Messages from workers to the app ("attributes down, messages up")."""

from __future__ import annotations

from textual.message import Message

from strixwizard.engine import Node
from strixwizard.live.results import Measurement
from strixwizard.tui.deploy_jobs import DeployPreview
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


class DeployPlanned(Message):
    """The deploy engine's plan (or refusal), or why planning failed (reason, next step)."""

    def __init__(self, run: int, preview: DeployPreview | None, error: tuple[str, str] | None) -> None:
        super().__init__()
        self.run = run
        self.preview = preview
        self.error = error


class MeasurementArrived(Message):
    """One result from the live tests' stream (`live.runner.run_tests`)."""

    def __init__(self, run: int, measurement: Measurement) -> None:
        super().__init__()
        self.run = run
        self.measurement = measurement


class TestsEnded(Message):
    """The stream ended: done, cancelled, or stopped by an error (reason, next step)."""

    def __init__(self, run: int, cancelled: bool, error: tuple[str, str] | None,
                 history: str | None = None) -> None:
        super().__init__()
        self.run = run
        self.cancelled = cancelled
        self.error = error
        self.history = history  # where a real-site run was stored, and how it compared

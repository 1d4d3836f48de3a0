"""Messages: screens ask the app for work, workers report to it ("attributes down, messages up").

A screen posts a request (it bubbles to the app); the app starts the worker; the
worker posts its results; the app updates the session and the screen re-renders.
"""

from __future__ import annotations

from textual.message import Message

from strixwizard.engine import Node
from strixwizard.live.results import Measurement
from strixwizard.services.deploy import DeployPreview
from strixwizard.services.discover import Discovery, SiteSource
from strixwizard.tui.views import NodePorts

# -- requests, from the screens ------------------------------------------------------


class OpenSite(Message):
    def __init__(self, source: SiteSource) -> None:
        super().__init__()
        self.source = source


class SaveProgress(Message):
    """Write the wizard's progress (step, saved reports) beside the site."""


class StartDiscovery(Message):
    """Probe every node again (r on Discover)."""


class CancelDiscovery(Message):
    pass


class TestSsh(Message):
    def __init__(self, names: list[str]) -> None:
        super().__init__()
        self.names = names


class ApplyFixes(Message):
    pass


class RollBackFixes(Message):
    pass


class PlanDeploy(Message):
    def __init__(self, again: bool = True) -> None:
        super().__init__()
        self.again = again  # False: only if there is no plan yet


class ApplyDeploy(Message):
    pass


class RollBackDeploy(Message):
    pass


class RunTests(Message):
    pass


class CancelTests(Message):
    pass


# -- results, from the workers ---------------------------------------------------------


class NodeProgress(Message):
    """A node's collection started, finished or failed (from the service's progress events)."""

    def __init__(self, run: int, node: str, event: str, text: str) -> None:
        super().__init__()
        self.run = run
        self.node = node
        self.event = event
        self.text = text


class DiscoveryDone(Message):
    def __init__(self, run: int, discovery: Discovery, ports: list[NodePorts]) -> None:
        super().__init__()
        self.run = run
        self.discovery = discovery
        self.ports = ports


class SshTested(Message):
    def __init__(self, nodes: list[Node], trusted: str | None) -> None:
        super().__init__()
        self.nodes = nodes
        self.trusted = trusted


class JobSaid(Message):
    """A fix or deploy run says what it does on a node (group: "fix" or "deploy")."""

    def __init__(self, group: str, line: str) -> None:
        super().__init__()
        self.group = group
        self.line = line


class JobDone(Message):
    """A fix or deploy apply/rollback finished; `result` is the service's typed result."""

    def __init__(self, group: str, action: str, result: object) -> None:
        super().__init__()
        self.group = group
        self.action = action  # "apply" or "rollback"
        self.result = result


class DeployPlanned(Message):
    """The deploy service's plan (or refusal)."""

    def __init__(self, run: int, preview: DeployPreview) -> None:
        super().__init__()
        self.run = run
        self.preview = preview


class MeasurementArrived(Message):
    """One result from the live tests' stream."""

    def __init__(self, run: int, measurement: Measurement) -> None:
        super().__init__()
        self.run = run
        self.measurement = measurement


class TestsEnded(Message):
    """The stream ended (done or cancelled); errors reach the app as the worker's error."""

    def __init__(self, run: int, history: str | None = None) -> None:
        super().__init__()
        self.run = run
        self.history = history  # where a real-site run was stored, and how it compared

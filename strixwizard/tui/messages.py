"""Messages: screens ask the app for work, workers report to it ("attributes down, messages up").

Messages with fields are dataclasses, as Textual's own are. A screen posts a
request (it bubbles to the app); the app starts the worker; the worker posts its
results; the app updates the session and the screen re-renders.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message

from strixwizard.discovery import DiscoveredNode
from strixwizard.live.results import Measurement
from strixwizard.live.soak import SoakProgress
from strixwizard.services.deploy import DeployPreview
from strixwizard.services.discover import Diagnosis, SiteSource
from strixwizard.tui.views import NodePorts
from strixwizard.tui.wizard import RunAction, RunGroup

# -- requests, from the screens ------------------------------------------------------


@dataclass
class OpenSite(Message):
    source: SiteSource


class SaveProgress(Message):
    """Write the wizard's progress (step, saved reports) beside the site."""


class StartDiscovery(Message):
    """Probe every node again (r on Discover)."""


class CancelDiscovery(Message):
    pass


@dataclass
class TestSsh(Message):
    names: list[str]


class ApplyFixes(Message):
    pass


class RollBackFixes(Message):
    pass


@dataclass
class PlanDeploy(Message):
    again: bool = True  # False: only if there is no plan yet


class ApplyDeploy(Message):
    pass


class RollBackDeploy(Message):
    pass


class RunTests(Message):
    pass


class CancelTests(Message):
    pass


@dataclass
class RunSoak(Message):
    """Soak these pairs (the Test step's soak dialog), each for `seconds` at most."""

    pairs: list[tuple[str, str]]
    seconds: float


# -- results, from the workers ---------------------------------------------------------


@dataclass
class NodeProgress(Message):
    """A node's collection started, finished or failed (from the service's progress events)."""

    run: int
    node: str
    event: str
    text: str


@dataclass
class DiscoveryDone(Message):
    run: int
    discovery: Diagnosis
    ports: list[NodePorts]


@dataclass
class SshTested(Message):
    nodes: list[DiscoveredNode]
    trusted: list[str] | None  # the nodes whose host keys the user just trusted


@dataclass
class JobSaid(Message):
    """A fix or deploy run says what it does on a node."""

    group: RunGroup
    line: str


@dataclass
class JobDone(Message):
    """A fix or deploy apply/rollback finished; `result` is the service's typed result."""

    group: RunGroup
    action: RunAction
    result: object


@dataclass
class DeployPlanned(Message):
    """The deploy service's plan (or refusal)."""

    run: int
    preview: DeployPreview


@dataclass
class MeasurementArrived(Message):
    """One result from the live tests' stream."""

    run: int
    measurement: Measurement


@dataclass
class TestsEnded(Message):
    """The stream ended (done or cancelled); errors reach the app as the worker's error."""

    run: int
    history: str | None = None  # where a real-site run was stored, and how it compared


@dataclass
class SoakProgressed(Message):
    """A soaking pair's bytes checked so far (about once a second)."""

    run: int
    progress: SoakProgress


@dataclass
class SoakMeasured(Message):
    """One result of the soak's stream (a pair's verdict, or the counters read around it)."""

    run: int
    measurement: Measurement


@dataclass
class SoakEnded(Message):
    """The soak's stream ended (done or cancelled); a finished soak was stored in the history."""

    run: int
    history: str | None = None  # where the soak was stored and how it compared, in words
    recorded: dict[str, object] | None = None  # the `history` field of its document

"""What the wizard knows right now: the site, the last discovery, saved files.

Screens read it; only the app changes it (then bumps `version`, and each
screen re-renders when it is next shown).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from strixwizard.live.results import Measurement
from strixwizard.site import Site
from strixwizard.tui.deploy_jobs import Deployed, DeployPreview
from strixwizard.tui.jobs import Applied, Discovery, SiteSource
from strixwizard.tui.state import WizardState, display_path, output_dir


@dataclass
class NodeStatus:
    event: str  # "waiting", "start", "done", "failed"
    text: str


@dataclass
class Session:
    source: SiteSource | None = None
    site: Site | None = None
    site_error: str | None = None
    state: WizardState = field(default_factory=WizardState)
    state_file: Path | None = None
    discovery: Discovery | None = None
    discovering: bool = False
    discovery_error: tuple[str, str] | None = None  # reason, next step
    run: int = 0  # the discovery run whose messages count; older ones are ignored
    progress: dict[str, NodeStatus] = field(default_factory=dict)
    ssh: dict[str, NodeStatus] = field(default_factory=dict)
    ssh_testing: bool = False
    saved: dict[str, Path] = field(default_factory=dict)
    fixing: bool = False  # an apply or rollback is running
    fix_log: list[str] = field(default_factory=list)
    applied: Applied | None = None
    fix_error: str | None = None
    rolled_back: str | None = None  # the outcome of the last rollback, in words
    save_error: str | None = None
    # step 5, deploy
    deploy_preview: DeployPreview | None = None
    deploy_planning: bool = False
    deploy_error: tuple[str, str] | None = None  # reason, next step (planning failed)
    deploying: bool = False  # an apply (+ smoke test) or a rollback is running
    deploy_log: list[str] = field(default_factory=list)
    deployed: Deployed | None = None
    deploy_run_error: str | None = None
    deploy_rolled_back: str | None = None
    # step 6, live tests
    test_run: int = 0  # the run whose messages count; older ones are ignored
    testing: bool = False
    cancelling: bool = False
    test_results: list[Measurement] = field(default_factory=list)
    test_pairs: list[tuple[str, str]] = field(default_factory=list)
    test_nodes: list[str] = field(default_factory=list)
    test_spark: dict[str, list[float]] = field(default_factory=dict)  # panel key -> points, kept across runs
    test_error: tuple[str, str] | None = None
    test_outcome: str | None = None  # "done", "cancelled"
    test_seconds: float | None = None
    test_file: Path | None = None  # where the last results were saved (Report step)
    test_history: str | None = None  # where the run was stored and how it compared, in words
    version: int = 0

    def changed(self) -> None:
        self.version += 1

    def forget_steps(self) -> None:
        """A new discovery or site: the deploy plan and the test results no longer apply."""
        self.deploy_preview, self.deploy_error, self.deploy_planning = None, None, False
        self.deployed, self.deploy_run_error, self.deploy_rolled_back = None, None, None
        self.deploy_log = []
        self.test_run += 1
        self.testing, self.cancelling = False, False
        self.test_results, self.test_pairs, self.test_nodes = [], [], []
        self.test_error, self.test_outcome, self.test_seconds, self.test_file = None, None, None, None
        self.test_history = None

    @property
    def is_demo(self) -> bool:
        return self.source is not None and self.source.demo

    @property
    def out_dir(self) -> Path:
        source = self.source or SiteSource()
        return output_dir(source.site_file, source.demo)

    def describe_source(self) -> str:
        if self.source is None:
            return "no site yet"
        if self.source.demo:
            return "the bundled demo (two Strix Halo nodes replayed from snapshots; nothing is probed)"
        return display_path(self.source.site_file or "")

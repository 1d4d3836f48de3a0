"""The four services as one object the wizard is given (and tests replace).

`Services()` calls the real services; a test passes a subclass, or other settings
(shorter live tests), to `WizardApp(services=...)` instead of patching modules.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from strixwizard.discovery import DiscoveredNode
from strixwizard.live.results import Measurement
from strixwizard.live.soak import SoakProgress, SoakSettings
from strixwizard.live.tcp import TcpSettings
from strixwizard.services import deploy, fix, measure
from strixwizard.services import discover as discovery
from strixwizard.services.common import Confirm, OnNode, OnStep
from strixwizard.services.discover import Diagnosis, SiteSource
from strixwizard.site import Site

if TYPE_CHECKING:
    from strixwizard.fixing.engine import RollbackReport
    from strixwizard.node.session import Connector


@dataclass
class Services:
    fix_options: fix.FixOptions | None = None
    deploy_options: deploy.DeployOptions | None = None
    tcp: TcpSettings | None = None  # the live tests' TCP settings (None: the defaults)
    demo_seconds: float = 2.0  # time bound of each demo loopback TCP loop
    soak_bytes: int = measure.SOAK_BYTES  # the Test step's soak: bytes each way at most
    #: How every node is reached (collect, fix, test); None: SSH or this machine, as the site says.
    #: Tests pass a `strixwizard.node.replay.ReplayConnector` instead of patching modules.
    connector: Connector | None = None
    #: What the wizard's Deploy step picked (stack, model, transport, nodes); None: defaults.
    deploy_choice: deploy.DeployChoice | None = None

    # -- discover --------------------------------------------------------------
    def discover(self, source: SiteSource, on_node: OnNode | None) -> Diagnosis:
        return discovery.discover(source.request(), on_node, connector=self.connector)

    def reach(self, site: Site, names: Sequence[str], trusted: Mapping[str, str],
              on_node: OnNode | None) -> list[DiscoveredNode]:
        return discovery.reach(site, names, trusted, on_node, self.connector)

    # -- fix -------------------------------------------------------------------
    def apply_fixes(self, found: Diagnosis, confirm: Confirm, on_step: OnStep | None
                    ) -> fix.Applied:
        assert found.plan is not None
        return fix.apply(found.found, found.report, found.plan, confirm, self._fix_options(),
                         on_step)

    def roll_back_fixes(self, run_id: str, confirm: Confirm, on_step: OnStep | None
                        ) -> RollbackReport:
        return fix.rollback(run_id, confirm, self._fix_options(), on_step)

    def _fix_options(self) -> fix.FixOptions:
        options = self.fix_options or fix.FixOptions()
        return options if self.connector is None else replace(options, connector=self.connector)

    # -- deploy ----------------------------------------------------------------
    def plan_deploy(self, found: Diagnosis) -> deploy.DeployPreview:
        return deploy.plan_choice(found.found, found.report, self.deploy_choice)

    def apply_deploy(self, site: Site, preview: deploy.DeployPreview, confirm: Confirm,
                     on_step: OnStep | None) -> deploy.Deployed:
        assert preview.plan is not None
        deploy.refuse_replayed(preview)
        return deploy.apply(site, preview.plan, confirm, self.deploy_options, on_step)

    def roll_back_deploy(self, run_id: str, confirm: Confirm, on_step: OnStep | None
                        ) -> RollbackReport:
        return deploy.rollback(run_id, confirm, self.deploy_options, on_step)

    # -- test ------------------------------------------------------------------
    def live_tests(self, found: Diagnosis, demo: bool, cancel: measure.Cancel
                   ) -> Iterator[Measurement]:
        return measure.wizard_stream(found.found, demo, cancel, self.tcp, self.demo_seconds,
                                     self.connector)

    def soak(self, found: Diagnosis, demo: bool, pairs: list[tuple[str, str]],
             seconds: float, cancel: measure.Cancel, progress: Callable[[SoakProgress], None]
             ) -> Iterator[Measurement]:
        settings = SoakSettings(bytes=self.soak_bytes, seconds=seconds, progress=progress)
        return measure.soak_stream(found.found, pairs, settings, cancel, demo, self.connector)

    def store_tests(self, site: str, started_at: str, results: list[Measurement],
                    demo: bool = False) -> str:
        """Store a finished Test step run; the demo's in the demo's own history, as
        `strixwizard test --demo` stores its runs."""
        from strixwizard.live.history import demo_history_path

        return measure.history_line(site, "wizard test", started_at, results,
                                 demo_history_path() if demo else None)

    def store_soak(self, site: str, started_at: str, results: list[Measurement], demo: bool
                   ) -> tuple[str, dict[str, object] | None]:
        """Store a finished soak as `strixwizard test soak` does (the demo's in the demo's own
        history, as `test soak --demo`): the line to show, and the `history` field of its
        document (None when the history could not be written)."""
        from strixwizard.live.history import demo_history_path

        line, recorded = measure.store(site, "test soak", started_at, results,
                                    demo_history_path() if demo else None)
        return line, recorded.to_json() if recorded is not None else None

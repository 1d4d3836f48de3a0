"""Step 5's work: plan the deploy in a worker, apply + smoke-test, roll back (real nodes only)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from strixwizard.site import Site
from strixwizard.tui import deploy_jobs
from strixwizard.tui.messages import DeployPlanned

if TYPE_CHECKING:
    from strixwizard.deploy.plan import DeployPlan
    from strixwizard.tui.app import WizardApp


class DeployFlow:
    def __init__(self, app: WizardApp) -> None:
        self.app = app

    # -- plan --------------------------------------------------------------------
    def ensure_plan(self) -> None:
        session = self.app.session
        if (session.discovery is not None and session.deploy_preview is None
                and not session.deploy_planning and session.deploy_error is None):
            self.plan()

    def plan(self) -> None:
        session = self.app.session
        discovery = session.discovery
        if discovery is None or session.deploying:
            return
        session.deploy_planning, session.deploy_error = True, None
        run = session.run
        self.app.screen_changed()

        def work() -> None:
            try:
                preview = deploy_jobs.plan_deploy(discovery.site, discovery.nodes)
            except Exception as error:  # never a traceback on screen
                self.app.post_message(DeployPlanned(run, None, (
                    f"planning the deploy failed: {error!r}",
                    "press p to plan again; if it repeats, report it with `strixwizard deploy --plan` "
                    "and `strixwizard capture`")))
                return
            self.app.post_message(DeployPlanned(run, preview, None))

        self.app.run_worker(work, thread=True, group="deploy-plan", exclusive=True, exit_on_error=False)

    def planned(self, message: DeployPlanned) -> None:
        session = self.app.session
        if message.run != session.run:
            return
        session.deploy_planning = False
        session.deploy_preview, session.deploy_error = message.preview, message.error
        self.app.screen_changed()

    # -- apply, smoke test, rollback -------------------------------------------------
    def can_apply(self) -> bool:
        session = self.app.session
        preview = session.deploy_preview
        return (preview is not None and preview.plan is not None and not preview.plan_only
                and not session.deploying and session.discovery is not None)

    def apply(self) -> None:
        session = self.app.session
        preview = session.deploy_preview
        if not self.can_apply() or preview is None or preview.plan is None or session.site is None:
            return
        session.deploying, session.deploy_log = True, []
        session.deployed, session.deploy_run_error, session.deploy_rolled_back = None, None, None
        self.app.screen_changed()
        site, plan = session.site, preview.plan

        def work() -> None:
            self._apply(site, plan)

        self.app.run_worker(work, thread=True, group="deploy", exit_on_error=False)

    def _apply(self, site: Site, plan: DeployPlan) -> None:
        try:
            deployed = deploy_jobs.apply_deploy(site, plan, self._say)
        except Exception as error:
            self.app.call_from_thread(self._applied, None, f"deploying stopped: {error!r}")
            return
        self.app.call_from_thread(self._applied, deployed, None)

    def _say(self, node: str, message: str) -> None:
        self.app.call_from_thread(self._log, f"{node}: {message}")

    def _log(self, line: str) -> None:
        self.app.session.deploy_log.append(line)
        self.app.screen_changed()

    def _applied(self, deployed: deploy_jobs.Deployed | None, error: str | None) -> None:
        session = self.app.session
        session.deploying, session.deployed, session.deploy_run_error = False, deployed, error
        self.app.screen_changed()

    def can_roll_back(self) -> bool:
        session = self.app.session
        deployed = session.deployed
        return (deployed is not None and deployed.report is not None and bool(deployed.report.run_id)
                and deployed.report.status not in ("aborted", "nothing-to-do") and not session.deploying)

    def roll_back(self) -> None:
        session = self.app.session
        deployed = session.deployed
        if not self.can_roll_back() or deployed is None or deployed.report is None:
            return
        run_id = deployed.report.run_id
        session.deploying, session.deploy_log = True, []
        self.app.screen_changed()

        def work() -> None:
            try:
                result = deploy_jobs.roll_back_deploy(run_id, self._say)
                outcome = ("rolled back: " if result.ok else "rollback incomplete: ") + "; ".join(
                    f"{n.node} {n.status} ({n.state})" for n in result.nodes)
            except Exception as error:
                outcome = (f"rollback stopped: {error!r}; the journals are kept for "
                           f"`strixwizard deploy --rollback {run_id}`")
            self.app.call_from_thread(self._rolled_back, outcome)

        self.app.run_worker(work, thread=True, group="deploy", exit_on_error=False)

    def _rolled_back(self, outcome: str) -> None:
        session = self.app.session
        session.deploying, session.deploy_rolled_back, session.deployed = False, outcome, None
        self.app.screen_changed()

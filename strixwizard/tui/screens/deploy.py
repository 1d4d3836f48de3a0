"""Step 5: the deploy plan (env with provenance, Ray, vLLM, container, RCCL notes); on real
nodes apply it (journalled, all-or-nothing), smoke-test it, roll it back. The demo: plan only."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Static

from strixwizard.model import Status
from strixwizard.services.deploy import Deployed, DeployPreview
from strixwizard.tui.messages import ApplyDeploy, PlanDeploy, RollBackDeploy
from strixwizard.tui.screens.base import StepScreen
from strixwizard.tui.screens.common import RunState, needs_discovery, show_run
from strixwizard.tui.screens.discover import DiscoverState
from strixwizard.tui.steps import keys, refer
from strixwizard.tui.widgets.notice import Notice
from strixwizard.tui.widgets.status import INDENT, badge

if TYPE_CHECKING:
    from strixwizard.deploy.plan import DeployPlan
    from strixwizard.deploy.smoke import SmokeReport

SMOKE_STATUS = {"pass": Status.PASS, "fail": Status.FAIL, "error": Status.ERROR}
HEAD = "bold $text-accent"


def env_content(plan: DeployPlan) -> Content:
    """Every variable with its value (per node where they differ) and where it came from."""
    env = plan.env
    shared = env.shared_names
    lines: list[Content] = []
    for var in env.nodes[0].variables:
        if var.name in shared:
            lines.append(Content.styled(f"{var.name}={var.value}", "bold"))
        else:
            values = ", ".join(f"{n.node} {getattr(n.get(var.name), 'value', '-')}" for n in env.nodes)
            lines.append(Content.assemble(Content.styled(var.name, "bold"), f"  per node: {values}"))
        sources = [n.get(var.name) for n in env.nodes]
        for source in dict.fromkeys(v.source for v in sources if v is not None):
            lines.append(Content.styled(f"{INDENT}← {source}", "$text-muted"))
    return Content("\n").join(lines)


def node_content(plan: DeployPlan, node: str) -> Content:
    env, settings = plan.env, plan.settings
    plans = plan.site_plan.for_node(node)
    changes = sum(len(p.steps) for p in plans)
    lines = [Content(f"{changes} change(s), each journalled and reversible (deploy --rollback)")]
    for p in plans:
        for step in p.steps:
            lines.append(Content.assemble(INDENT, Content.styled(p.fix, "$text-accent"), f"  {step.summary}"))
    ray = plan.ray_argv.get(node)
    if ray:
        lines.append(Content.styled("Ray", HEAD))
        lines.append(Content(f"{INDENT}sh -ac '. {settings.env_file}' {shlex.join(ray)}"))
    lines.append(Content.styled("Container (podman-run.sh)", HEAD))
    for p in plans:
        if p.fix == "deploy.container":
            for step in p.steps:
                options = [line.strip().rstrip("\\").strip() for line in str(step.after or "").splitlines()
                           if line.strip().startswith("'--") or line.strip().startswith("--")]
                lines.append(Content(f"{INDENT}" + " ".join(o.strip("'") for o in options)))
    notes = [n for p in plans if p.fix == "deploy.rccl" for n in p.notes]
    if notes:
        lines.append(Content.styled("RCCL", HEAD))
        lines += [Content(f"{INDENT}{note}") for note in notes]
    role = "Ray head" if node == env.head else "Ray worker"
    return Content("\n").join([Content.styled(f"{node} ({role}, {env.node(node).ip})", "bold"), *lines])


def smoke_content(smoke: SmokeReport) -> Content:
    lines = []
    for check in smoke.checks:
        status = SMOKE_STATUS.get(check.status, Status.ERROR)
        lines.append(Content.assemble(badge(status), f" {check.id}: {check.observed} "
                                      f"(expected {check.expected})"))
        if check.detail:
            lines.append(Content.styled(f"{INDENT}{check.detail}", "$text-muted"))
    return Content("\n").join(lines)


def deployed_content(deployed: Deployed) -> tuple[Content, str]:
    if deployed.report is None:
        return Content(f"Refused: {deployed.refused}\nNothing was changed."), "warning"
    report = deployed.report
    lines = [Content(f"deploy run {report.run_id}: {report.status}"
                     + (f" — {report.message}" if report.message else ""))]
    lines += [Content(f"{n.node}: {n.status}, {n.state}") for n in report.nodes]
    if deployed.smoke is not None:
        lines.append(Content.styled(f"Smoke test: {deployed.smoke.status.upper()}", "bold"))
        lines.append(smoke_content(deployed.smoke))
    elif report.ok:
        lines.append(Content("no smoke test was run"))
    lines.append(Content("u rolls this deploy back from its journals (files removed, ray stop; "
                         "you confirm first)."))
    return Content("\n").join(lines), "success" if deployed.ok else "warning"


@dataclass
class DeployState(RunState):
    preview: DeployPreview | None = None
    error: tuple[str, str] | None = None  # reason, next step (planning failed)
    deployed: Deployed | None = None


class DeployScreen(StepScreen, step="deploy", state=DeployState):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "apply", "Apply deploy"),
        Binding("u", "roll_back", "Roll back"),
        Binding("p", "plan", "Plan again"),
    ]

    def compose_body(self) -> ComposeResult:
        yield Notice(id="deploy-status", title="Deploy")
        yield Notice(id="deploy-run", title="Apply")
        with Vertical(id="deploy-plan"):
            yield Static(id="deploy-env", classes="deploy-box")
            yield Vertical(id="deploy-nodes")
            yield Static(id="deploy-vllm", classes="deploy-box")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        wizard = self.wizard
        state = self.session.of(DeployState)
        preview, deployed = state.preview, state.deployed
        running = wizard.busy("deploy")
        if action == "apply":
            return (preview is not None and preview.plan is not None and not preview.plan_only
                    and not running)
        if action == "roll_back":
            return (deployed is not None and deployed.report is not None and bool(deployed.report.run_id)
                    and deployed.report.status not in ("aborted", "nothing-to-do") and not running)
        if action == "plan":
            return self.session.of(DiscoverState).discovery is not None and not running
        return True

    def action_plan(self) -> None:
        self.post_message(PlanDeploy())

    def action_roll_back(self) -> None:
        """The deploy service asks first (a modal), then rolls the deploy back."""
        if self.check_action("roll_back", ()):
            self.post_message(RollBackDeploy())

    def action_apply(self) -> None:
        """The deploy service asks first (a modal), then applies and smoke-tests."""
        if self.check_action("apply", ()):
            self.post_message(ApplyDeploy())

    def _show_run(self) -> None:
        state = self.session.of(DeployState)
        result = None
        if state.deployed is not None:
            text, kind = deployed_content(state.deployed)
            result = (text, kind, "Deployed" if state.deployed.ok else "Deploy: not passed")
        show_run(self.query_one("#deploy-run", Notice), state, self.wizard.busy("deploy"),
                 running_title="Deploying", note="(this finishes or rolls back on its own)",
                 failed_title="Deploy failed", result=result)

    def _clear(self) -> None:
        self.query_one("#deploy-plan").display = False
        self.query_one("#deploy-run", Notice).display = False

    def refresh_view(self) -> None:
        notice = self.query_one("#deploy-status", Notice)
        self.refresh_bindings()
        if needs_discovery(self.wizard, notice):
            self._clear()
            return
        state = self.session.of(DeployState)
        if not self.wizard.busy("deploy-plan"):
            self.call_after_refresh(self.post_message, PlanDeploy(again=False))
        preview = state.preview
        if state.error:
            reason, next_step = state.error
            notice.say(f"{reason}\n\nNext: {next_step}", "error", title="No deploy plan")
            self._clear()
            return
        if preview is None:
            notice.say("The deploy engine is planning from the discovered facts…", "info",
                       title="Planning the deploy")
            self._clear()
            return
        if preview.plan is None:
            notice.say(f"{preview.refused}\n\nNothing is deployed: an RDMA profile needs a hardware "
                       "RDMA link (RoCE v2 or InfiniBand, ports ACTIVE) between every pair of nodes. "
                       f"Next: connect the nodes' RDMA NICs ({refer('links')} shows what links there are), "
                       f"fix what {refer('fix')} lists, then discover again ({keys('discover', 'r')}). "
                       "RCCL over TCP can be deployed "
                       "knowingly with `strixwizard deploy --transport tcp`.",
                       "warning", title="Deploy refused")
            self._clear()
            return
        self._show_plan(notice, preview.plan, preview.plan_only, preview.replayed)
        self._show_run()

    def _show_plan(self, notice: Notice, plan: DeployPlan, plan_only: bool,
                   replayed: tuple[str, ...]) -> None:
        env = plan.env
        head = (f"{env.profile} profile ({env.transport}) over {', '.join(env.links)}; "
                f"head {env.head}, {len(env.nodes)} nodes; files go to {plan.settings.target_dir}.")
        warnings = "".join(f"\n! {w}" for w in plan.notes)
        if plan_only:
            notice.say(f"PLAN ONLY: {', '.join(replayed)} are replayed from snapshots, so nothing can "
                       f"be deployed on them; applying needs real nodes (a site with SSH or local "
                       f"nodes).\n{head}{warnings}", "info", title="Deploy plan (demo: plan only)")
        else:
            notice.say(f"{head}{warnings}\n{plan.site_plan.changes} change(s) planned: a applies them "
                       "(you confirm first), then the smoke test runs; u rolls back.",
                       "warning" if plan.notes else "info", title="Deploy plan")
        self.query_one("#deploy-plan").display = True
        box = self.query_one("#deploy-env", Static)
        box.border_title = "Environment, and where each value comes from"
        box.update(env_content(plan))
        nodes = self.query_one("#deploy-nodes", Vertical)
        nodes.remove_children()
        views = []
        for node in plan.site_plan.nodes:
            view = Static(node_content(plan, node), classes="deploy-box")
            view.border_title = f"node {node}"
            views.append(view)
        nodes.mount_all(views)
        vllm = self.query_one("#deploy-vllm", Static)
        vllm.border_title = "vLLM launch line (written, never started)"
        notes = [n for p in plan.site_plan.for_node(env.head) if p.fix == "deploy.vllm" for n in p.notes]
        vllm.update(Content("\n").join([Content.styled(shlex.join(plan.vllm_argv), "bold"),
                                        *[Content.styled(n, "$text-muted") for n in notes[1:]]]))

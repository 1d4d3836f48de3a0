"""Step 5: pick the stack, the model, the transport, the nodes and the options the stack shows
here; see its plan as the stack declares its panel (the environment with its provenance when
it writes one, each node's changes and what starts there, boxes after the nodes); on real
nodes apply it (journalled, all-or-nothing), smoke-test it, roll it back. The demo: plan
only. Every pick plans again through the same deploy service as `strixwizard deploy`
(`services.deploy.plan_choice`). No stack is named here: the pickers and the panel come from
the stacks' declarations."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.widgets import Checkbox, Input, Label, Select, SelectionList, Static

from strixwizard.model import Status, link_text
from strixwizard.services.deploy import (
    TRANSPORTS,
    DeployChoice,
    Deployed,
    DeployPreview,
    model_hint,
    plan_panel,
    stack_labels,
    stack_name,
    wizard_options,
)
from strixwizard.tui.cliwords import in_wizard_terms
from strixwizard.tui.extras import APPLIED
from strixwizard.tui.messages import ApplyDeploy, PlanDeploy, RollBackDeploy
from strixwizard.tui.screens.base import StepScreen
from strixwizard.tui.screens.common import RunState, needs_discovery, show_run
from strixwizard.tui.screens.discover import DiscoverState
from strixwizard.tui.screens.fix import FixState, deploy_note
from strixwizard.tui.steps import keys, refer
from strixwizard.tui.text import outside, paragraph
from strixwizard.tui.widgets.hanging import Hanging
from strixwizard.tui.widgets.notice import Notice
from strixwizard.tui.widgets.status import INDENT, badge
from strixwizard.tui.workspace import KEEP_FOR_SITE

if TYPE_CHECKING:
    from strixwizard.deploy.declare import Box, Line, NodeView, Option
    from strixwizard.deploy.plan import DeployPlan
    from strixwizard.deploy.smoke import SmokeReport

SMOKE_STATUS = {"pass": Status.PASS, "fail": Status.FAIL, "error": Status.ERROR}
HEAD = "bold $text-accent"
#: How a panel line's style shows (`deploy/declare.py` `Line.style`).
LINE_STYLE = {"": "", "bold": "bold", "muted": "$text-muted", "heading": HEAD}


def env_content(plan: DeployPlan) -> Content:
    """Every variable with its value (per node where they differ) and where it came from."""
    env = plan.env
    shared = env.shared_names
    lines: list[Content] = []
    for var in env.nodes[0].variables:
        if var.name in shared:
            lines.append(outside(f"{var.name}={var.value}", "bold"))
        else:
            values = ", ".join(f"{n.node} {getattr(n.get(var.name), 'value', '-')}" for n in env.nodes)
            lines.append(Content.assemble(outside(var.name, "bold"), outside(f"  per node: {values}")))
        sources = [n.get(var.name) for n in env.nodes]
        for source in dict.fromkeys(v.source for v in sources if v is not None):
            lines.append(outside(f"{INDENT}← {source}", "$text-muted"))
    return Content("\n").join(lines)


def line_content(line: Line) -> Content:
    """A line of a stack's panel, as its style says."""
    text = in_wizard_terms(line.text) if line.cli_words else line.text
    indent = INDENT if line.indent else ""
    if line.label:
        return Content.assemble(indent, outside(line.label, "$text-accent"), outside(f"  {text}"))
    return outside(f"{indent}{text}", LINE_STYLE.get(line.style, ""))


def node_content(plan: DeployPlan, view: NodeView) -> Content:
    """A node's box: who it is, its changes (each step), then what the stack says of it."""
    node = view.node
    plans = plan.site_plan.for_node(node)
    changes = sum(len(p.steps) for p in plans)
    lasting = f"; {view.persistence}" if view.persistence else ""
    lines = [outside(f"{changes} change(s), each journalled and reversible (u on this step rolls "
                     f"them back){lasting}")]
    for p in plans:
        for step in p.steps:
            lines.append(Content.assemble(INDENT, outside(p.fix, "$text-accent"),
                                          outside(f"  {step.summary}")))
    lines += [line_content(line) for line in view.lines]
    return Content("\n").join([outside(f"{node} ({view.role}, {plan.env.node(node).ip})", "bold"),
                               *lines])


def box_content(box: Box) -> Content:
    return Content("\n").join([line_content(line) for line in box.lines])


def smoke_content(smoke: SmokeReport) -> Content:
    lines = []
    for check in smoke.checks:
        status = SMOKE_STATUS.get(check.status, Status.ERROR)
        lines.append(Content.assemble(badge(status), outside(f" {check.id}: {check.observed} "
                                                             f"(expected {check.expected})")))
        if check.detail:
            lines.append(outside(f"{INDENT}{check.detail}", "$text-muted"))
    return Content("\n").join(lines)


def deployed_content(deployed: Deployed) -> tuple[Content, str]:
    if deployed.report is None:
        return paragraph(f"Refused: {deployed.refused}\nNothing was changed."), "warning"
    report = deployed.report
    lines = [outside(f"deploy run {report.run_id}: {report.status}"
                     + (f" — {report.message}" if report.message else ""))]
    lines += [outside(f"{n.node}: {n.status}, {n.state}") for n in report.nodes]
    if deployed.smoke is not None:
        lines.append(outside(f"Smoke test: {deployed.smoke.status.upper()}", "bold"))
        lines.append(smoke_content(deployed.smoke))
    elif report.ok:
        lines.append(outside("no smoke test was run"))
    lines.append(outside("u rolls this deploy back from its journals (files removed, what it "
                         "started stopped; you confirm first)."))
    return Content("\n").join(lines), "success" if deployed.ok else "warning"


def resumed_content(document: dict[str, Any], saved_at: str | None) -> tuple[Content, str, str]:
    """What an earlier session's deploy did, from its saved report (text, kind, title)."""
    status = str(document.get("status"))
    apply = document.get("apply") if isinstance(document.get("apply"), dict) else {}
    run = f"deploy run {apply['run_id']}: " if apply and apply.get("run_id") else ""
    smoke = document.get("smoke") if isinstance(document.get("smoke"), dict) else None
    lines = [f"{run}{status}" + (f" — {document['reason']}" if document.get("reason") else ""),
             f"from an earlier session (its report saved {saved_at or 'before'})"]
    if smoke:
        lines.append(f"Smoke test: {str(smoke.get('status')).upper()}")
    if run and status in ("deployed", "failed"):
        lines.append("u rolls it back from its journals (you confirm first).")
    return (outside("\n".join(lines)), "success" if status == "deployed" else "warning",
            "Deployed (earlier session)")


@dataclass
class DeployState(RunState):
    preview: DeployPreview | None = None
    error: tuple[str, str] | None = None  # reason, next step (planning failed)
    deployed: Deployed | None = None
    choice: DeployChoice = field(default_factory=DeployChoice)  # what the pickers say
    #: what an earlier session's saved report says the deploy did (and when it was saved):
    #: shown, and reported, until this session applies or rolls back
    resumed: dict[str, Any] | None = field(default=None, metadata=KEEP_FOR_SITE)
    resumed_at: str | None = field(default=None, metadata=KEEP_FOR_SITE)

    def rollback_run(self) -> str | None:
        """The deploy run `u` rolls back: this session's, else the earlier session's."""
        deployed = self.deployed
        if deployed is not None:
            report = deployed.report
            if report is not None and report.run_id and report.status not in ("aborted", "nothing-to-do"):
                return report.run_id
            return None
        resumed = self.resumed or {}
        apply = resumed.get("apply")
        if (resumed.get("status") in ("deployed", "failed") and not self.rolled_back
                and isinstance(apply, dict) and isinstance(apply.get("run_id"), str)
                and apply.get("status") not in ("aborted", "nothing-to-do")):
            return str(apply["run_id"])
        return None


def headline(note: str) -> str:
    """A warning's first clause (up to its first colon), what fits one row at 80 columns; the
    rest is behind `i`."""
    head, colon, _rest = note.partition(": ")
    return f"{head} (…)" if colon else note


class DeployScreen(StepScreen, step="deploy", state=DeployState):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "apply", "Apply", tooltip="Apply deploy, then its smoke test (you confirm first)"),
        Binding("u", "roll_back", "Roll back"),
        Binding("p", "plan", "Plan again"),
        Binding("i", "details", "Details", tooltip="Each warning in full (again: one line each)"),
    ]

    DEFAULT_CSS = """
    #deploy-choice { height: auto; margin-bottom: 1; }
    .deploy-row { height: auto; }
    .deploy-row > Label { width: auto; padding: 0 1 0 0; color: $text-muted; }
    #deploy-stack, #deploy-transport { width: 1fr; margin-right: 2; }
    #deploy-model { width: 1fr; margin-right: 2; }
    #deploy-node-list { width: 1fr; height: auto; max-height: 4; }
    #deploy-after { height: auto; }
    """

    def __init__(self) -> None:
        super().__init__()
        self.details = False  # the warnings in full (i): one line each by default, to leave room

    def action_details(self) -> None:
        self.details = not self.details
        self.refresh_view()

    def compose_body(self) -> ComposeResult:
        yield Notice(id="deploy-status", title="Deploy")
        state = self.session.of(DeployState)
        site = self.session.site
        if not state.choice.stack and site is not None and site.stack:
            state.choice = replace(state.choice, stack=site.stack)  # the site's `stack:`
        choice = state.choice
        with Vertical(id="deploy-choice"):
            with Horizontal(classes="deploy-row"):
                yield Label("Stack")
                yield Select([(label, key) for key, label in stack_labels().items()],
                             value=stack_name(choice.stack),
                             allow_blank=False, compact=True, id="deploy-stack")
                yield Label("Transport")
                yield Select([(label, key) for key, label in TRANSPORTS.items()],
                             value=choice.transport, allow_blank=False, compact=True,
                             id="deploy-transport")
            with Horizontal(classes="deploy-row"):
                yield Label("Model")
                yield Input(choice.model or "", placeholder=model_hint(choice.stack),
                            compact=True, id="deploy-model")
                yield from self._option_pickers(choice)
            with Horizontal(classes="deploy-row"):
                yield Label("Nodes")
                yield SelectionList[str](compact=True, id="deploy-node-list")
        yield Notice(id="deploy-run", title="Apply")
        with Vertical(id="deploy-plan"):
            yield Static(id="deploy-env", classes="deploy-box")
            yield Vertical(id="deploy-nodes")
            yield Vertical(id="deploy-after")

    @staticmethod
    def _option_pickers(choice: DeployChoice) -> ComposeResult:
        """A checkbox (on/off) or an input per option a stack shows here, once per `dest`."""
        seen: dict[str, Option] = {}
        for options in wizard_options().values():
            for option in options:
                seen.setdefault(option.dest, option)
        for dest, option in seen.items():
            assert option.wizard is not None
            value = choice.value(dest)
            if option.switch:
                yield Checkbox(option.wizard.label, bool(value), compact=True, id=f"deploy-{dest}",
                               name=dest, classes="deploy-option")
            else:
                yield Input("" if value is None else str(value), compact=True, id=f"deploy-{dest}",
                            name=dest, placeholder=option.wizard.placeholder or option.wizard.label,
                            classes="deploy-option")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        wizard = self.wizard
        state = self.session.of(DeployState)
        preview = state.preview
        running = wizard.busy("deploy")
        if action == "apply":
            return (preview is not None and preview.plan is not None and not preview.plan_only
                    and not running)
        if action == "roll_back":
            return state.rollback_run() is not None and not running
        if action == "plan":
            return self.session.of(DiscoverState).discovery is not None and not running
        return True

    def action_plan(self) -> None:
        self.post_message(PlanDeploy())

    # -- the pickers: each change plans again -----------------------------------------
    def _pick(self, **changes: object) -> None:
        state = self.session.of(DeployState)
        choice = replace(state.choice, **changes)  # type: ignore[arg-type]
        if choice == state.choice:
            return
        state.choice = choice
        self._sync_pickers(choice)
        if self.session.of(DiscoverState).discovery is not None and not self.wizard.busy("deploy"):
            self.post_message(PlanDeploy())

    @on(Select.Changed, "#deploy-stack")
    def _picked_stack(self, event: Select.Changed) -> None:
        if isinstance(event.value, str):
            self._pick(stack=event.value)

    @on(Select.Changed, "#deploy-transport")
    def _picked_transport(self, event: Select.Changed) -> None:
        if isinstance(event.value, str):
            self._pick(transport=event.value)

    @on(Input.Changed, "#deploy-model")
    def _picked_model(self, event: Input.Changed) -> None:
        self._pick(model=event.value.strip() or None)

    @on(Checkbox.Changed, ".deploy-option")
    @on(Input.Changed, ".deploy-option")
    def _picked_option(self, event: Checkbox.Changed | Input.Changed) -> None:
        dest = event.control.name
        option = next((o for options in wizard_options().values() for o in options
                       if o.dest == dest), None)
        if dest is None or option is None:
            return
        value: object = event.value
        if isinstance(value, str):
            try:
                value = option.type(value.strip()) if option.type and value.strip() else \
                    value.strip() or None
            except ValueError:
                return  # not a value of its type yet: the plan stays as it was
        state = self.session.of(DeployState)
        choice = state.choice.with_option(dest, value if option.given(value) else None)
        self._pick(options=choice.options)

    @on(SelectionList.SelectedChanged, "#deploy-node-list")
    def _picked_nodes(self, event: SelectionList.SelectedChanged[str]) -> None:
        listed = [str(event.selection_list.get_option_at_index(i).value)
                  for i in range(event.selection_list.option_count)]
        picked = [name for name in listed if name in event.selection_list.selected]
        self._pick(nodes=() if picked == listed else tuple(picked))

    def _sync_pickers(self, choice: DeployChoice) -> None:
        """Only the options the chosen stack declares for the wizard are shown, and the model
        field asks for what that stack loads."""
        self.query_one("#deploy-model", Input).placeholder = model_hint(choice.stack)
        shown = {o.dest for o in wizard_options().get(stack_name(choice.stack), ())}
        for picker in self.query(".deploy-option"):
            picker.display = picker.name in shown

    def _fill_nodes(self) -> None:
        """The site's nodes, ticked as the choice says (all of them when it names none)."""
        discovery = self.session.of(DiscoverState).discovery
        listing = self.query_one("#deploy-node-list", SelectionList)
        if discovery is None:
            return
        names = [spec.name for spec in discovery.site.nodes]
        chosen = self.session.of(DeployState).choice.nodes
        wanted = [name for name in names if not chosen or name in chosen]
        listed = [str(listing.get_option_at_index(i).value) for i in range(listing.option_count)]
        if listed == names and list(listing.selected) == wanted:
            return
        with listing.prevent(SelectionList.SelectedChanged):
            listing.clear_options()
            listing.add_options([(outside(name), name, name in wanted) for name in names])

    def _show_choice(self, choice: DeployChoice) -> None:
        """The pickers show the step's state (a new discovery puts it back to the defaults)."""
        stack = self.query_one("#deploy-stack", Select)
        if stack.value != stack_name(choice.stack):
            with stack.prevent(Select.Changed):
                stack.value = stack_name(choice.stack)
        transport = self.query_one("#deploy-transport", Select)
        if transport.value != choice.transport:
            with transport.prevent(Select.Changed):
                transport.value = choice.transport
        model = self.query_one("#deploy-model", Input)
        if (model.value.strip() or None) != choice.model:
            with model.prevent(Input.Changed):
                model.value = choice.model or ""
        for box in self.query(".deploy-option").results(Checkbox):
            value = bool(choice.value(str(box.name)))
            if box.value != value:
                with box.prevent(Checkbox.Changed):
                    box.value = value
        for field_ in self.query(".deploy-option").results(Input):
            text = "" if choice.value(str(field_.name)) is None else str(choice.value(str(field_.name)))
            if field_.value.strip() != text:
                with field_.prevent(Input.Changed):
                    field_.value = text
        self._sync_pickers(choice)

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
        elif state.resumed is not None and state.resumed.get("status") in APPLIED and not state.rolled_back:
            result = resumed_content(state.resumed, state.resumed_at)
        show_run(self.query_one("#deploy-run", Notice), state, self.wizard.busy("deploy"),
                 running_title="Deploying", note="(this finishes or rolls back on its own)",
                 failed_title="Deploy failed", result=result)

    def _clear(self) -> None:
        self.query_one("#deploy-plan").display = False
        self.query_one("#deploy-run", Notice).display = False

    def refresh_view(self) -> None:
        notice = self.query_one("#deploy-status", Notice)
        self.refresh_bindings()
        self._show_choice(self.session.of(DeployState).choice)
        self.query_one("#deploy-choice").display = self.session.of(DiscoverState).discovery is not None
        if needs_discovery(self.wizard, notice):
            self._clear()
            return
        self._fill_nodes()
        state = self.session.of(DeployState)
        if not self.wizard.busy("deploy-plan"):
            self.call_after_refresh(self.post_message, PlanDeploy(again=False))
        preview = state.preview
        if state.error:
            reason, next_step = state.error
            notice.say(f"{in_wizard_terms(reason)}\n\nNext: {next_step}", "error", title="No deploy plan")
            self._clear()
            return
        if preview is None:
            notice.say("The deploy engine is planning from the discovered facts…", "info",
                       title="Planning the deploy")
            self._clear()
            return
        if preview.plan is None:
            rdma = state.choice.transport == "rdma"
            why = ("Nothing is deployed: an RDMA profile needs a hardware RDMA link (RoCE v2 or "
                   "InfiniBand, ports ACTIVE) between every pair of nodes. Next: connect the nodes' "
                   f"RDMA NICs ({refer('links')} shows what links there are), fix what {refer('fix')} "
                   f"lists, then discover again ({keys('discover', 'r')}); or pick the TCP transport "
                   "above, or fewer nodes."
                   if rdma else "Nothing is deployed. Next: pick other nodes or another stack above.")
            notice.say(f"{in_wizard_terms(str(preview.refused))}\n\n{why}", "warning", title="Deploy refused")
            self._clear()
            return
        self._show_plan(notice, preview.plan, preview.plan_only, preview.replayed)
        self._show_run()

    def _show_plan(self, notice: Notice, plan: DeployPlan, plan_only: bool,
                   replayed: tuple[str, ...]) -> None:
        env = plan.env
        stack = stack_labels().get(plan.settings.stack, plan.settings.stack)
        fabric = ", ".join(link_text(link) for link in env.links)
        head = (f"{stack}: {env.profile} profile ({env.transport}) over {fabric}; "
                f"head {env.head}, {len(env.nodes)} nodes; files go to {plan.settings.target_dir}.")
        notes = [in_wizard_terms(w) for w in plan.notes]
        applied = self.session.of(FixState).applied_here(self.session.of(DiscoverState).run)
        if applied is not None:
            notes.append(deploy_note(applied))
        warnings = "".join(f"\n! {note if self.details else headline(note)}" for note in notes)
        if notes and any(headline(note) != note for note in notes):
            warnings += "\ni: " + ("one line each" if self.details else "each warning in full")
        if plan_only:
            notice.say(f"PLAN ONLY: {', '.join(replayed)} are replayed from snapshots; applying "
                       f"needs real nodes.\n{head}{warnings}", "info",
                       title="Deploy plan (demo: plan only)")
        else:
            notice.say(f"{head}{warnings}\n{plan.site_plan.changes} change(s) planned: a applies them "
                       "(you confirm first), then the smoke test runs; u rolls back.",
                       "warning" if plan.notes else "info", title="Deploy plan")
        panel = plan_panel(plan)
        self.query_one("#deploy-plan").display = True
        box = self.query_one("#deploy-env", Static)
        box.display = panel.environment
        box.border_title = "Environment, and where each value comes from"
        box.update(Hanging(env_content(plan)))
        nodes = self.query_one("#deploy-nodes", Vertical)
        nodes.remove_children()
        views = []
        for view in panel.nodes:
            widget = Static(Hanging(node_content(plan, view)), classes="deploy-box")
            widget.border_title = outside(f"node {view.node}")
            views.append(widget)
        nodes.mount_all(views)
        self._show_after(panel.after)

    def _show_after(self, boxes: tuple[Box, ...]) -> None:
        """The boxes after the nodes: each one's widget kept by its key, updated in place."""
        after = self.query_one("#deploy-after", Vertical)
        existing = {str(child.id): child for child in after.children if isinstance(child, Static)}
        wanted = {f"deploy-{box.key}" for box in boxes}
        for name, widget in existing.items():
            widget.display = name in wanted
        for box in boxes:
            found = existing.get(f"deploy-{box.key}")
            widget = found or Static(id=f"deploy-{box.key}", classes="deploy-box")
            if found is None:
                after.mount(widget)
            widget.display = True
            widget.border_title = outside(box.title)
            widget.update(Hanging(box_content(box)))

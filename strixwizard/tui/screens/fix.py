"""Step 4: failing checks grouped by node and link, each with the fix that cures it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Static

from strixwizard.files import display_path
from strixwizard.fixing.model import SitePlan
from strixwizard.model import CheckResult
from strixwizard.services.fix import Applied, Tally, changed_nodes, tally, tally_ids
from strixwizard.tui.cliwords import in_wizard_terms
from strixwizard.tui.messages import ApplyFixes, RollBackFixes
from strixwizard.tui.screens.base import StepScreen
from strixwizard.tui.screens.common import RunState, needs_discovery, show_run
from strixwizard.tui.screens.discover import DiscoverState
from strixwizard.tui.steps import keys
from strixwizard.tui.text import outside
from strixwizard.tui.views import PlanView, fix_groups, plan_views
from strixwizard.tui.widgets.hanging import Hanging
from strixwizard.tui.widgets.notice import Notice
from strixwizard.tui.widgets.sections import FILTER_NOTE, Section, counted_title, failing
from strixwizard.tui.widgets.status import INDENT, badge


def finding_content(result: CheckResult) -> Content:
    where = f" {result.entity}" if result.entity and result.entity != result.host else ""
    lines = [Content.assemble(badge(result.status), outside(f" {result.id}{where}"))]
    observed = result.observed or result.detail
    if observed:
        want = f"  (want {result.expected})" if result.expected else ""
        lines.append(outside(f"{INDENT}{observed}{want}"))
    if result.fix is not None:
        extras = [] if result.fix.reversible else ["not reversible"]
        if result.fix.reboot:
            extras.append("needs a reboot")
        tail = f" ({', '.join(extras)})" if extras else ""
        lines.append(Content.assemble(INDENT, outside(f"fix {result.fix.id}", "bold $accent"),
                                      outside(f": {result.fix.summary}{tail}")))
    elif result.why:
        lines.append(outside(f"{INDENT}{result.why}", "$text-muted"))
    return Content("\n").join(lines)


def plan_content(plan: PlanView) -> Content:
    where = f" on {plan.entity}" if plan.entity and plan.entity != plan.node else ""
    head = Content.assemble(outside(f"plan {plan.fix}", "bold $accent"), outside(where))
    lines = [head]
    if not plan.steps:
        lines.append(outside(f"{INDENT}no change planned", "$text-muted"))
    for step in plan.steps:
        flags = f"  [{step.flags}]" if step.flags else ""
        lines.append(Content.assemble(outside(f"{INDENT}{step.summary}: "),
                                      outside(step.before, "$text-error"), " → ",
                                      outside(step.after, "$text-success"), outside(flags)))
    lines += [outside(f"{INDENT}note: {in_wizard_terms(note)}", "$text-muted") for note in plan.notes]
    return Content("\n").join(lines)


class FixGroupView(Static):
    def __init__(self, title: str, results: tuple[CheckResult, ...], plans: list[PlanView]) -> None:
        parts = [finding_content(r) for r in results] + [plan_content(p) for p in plans]
        super().__init__(Hanging(Content("\n").join(parts)), classes="fix-group")
        self.title = title


def fix_section(title: str, results: tuple[CheckResult, ...], plans: list[PlanView],
                failing_only: bool, folds: dict[str, bool]) -> Section | None:
    """A node's, link's or site's findings and plans in a foldable section; with the FAIL
    filter on, only its failing findings and the plans that cure them (None: nothing left)."""
    shown = failing(results, failing_only)
    if failing_only:
        cures = {r.fix.id for r in shown if r.fix is not None}
        plans = [p for p in plans if p.fix in cures]
    if not shown and not plans:
        return None
    return Section(FixGroupView(title, shown, plans), key=f"fix {title}",
                   title=counted_title(title, results), folds=folds, classes="fix-section")


def tally_words(counted: Tally, changes: int, nodes: int, plan_error: str | None) -> str:
    """`strixwizard fix`'s tally (`services.fix.tally`: the same counts, adding up the same
    way) said as the Fix step shows it: the plans are the sections below, not "above"."""
    kinds = ", ".join(f"{n} {word if n != 1 else word.removesuffix('s')}"
                      for n, word in ((counted.failed, "failed"), (counted.warnings, "warnings"),
                                      (counted.errors, "errors")) if n)
    noun = "problem" if counted.problems == 1 else "problems"
    head = (f"Discover finds {counted.problems} {noun} ({kinds})" if counted.problems
            else "Discover finds no problem")

    if plan_error is not None:
        return f"{head}; no plan: {plan_error}."
    where = f"{changes} change(s) planned on {nodes} node(s), shown as before → after under each node"
    if not counted.problems:
        return f"{head}, yet the fix engine has {where}."
    parts = [f"{len(counted.by_plan)} cured by the {where}" if counted.by_plan
             else f"none cured by the {where}" if changes else "none cured by a planned change"]
    if counted.by_hand:
        parts.append(f"{len(counted.by_hand)} to do by hand, as their plan's note says "
                     f"({tally_ids(counted.by_hand)})")
    if counted.unplanned:
        parts.append(f"{len(counted.unplanned)} with no plan here ({tally_ids(counted.unplanned)}), "
                     "each with the reason it matters below")
    return f"{head}: " + "; ".join(parts) + "."


def applied_text(applied: Applied) -> tuple[str, str]:
    """The apply report in words, and the notice kind."""
    report = applied.report
    lines = [f"run {report.run_id}: {report.status}" + (f" — {report.message}" if report.message else "")]
    if applied.dry_run_copies is not None:
        lines.append(f"DRY RUN on copies of the snapshots in {display_path(applied.dry_run_copies)}; "
                     "the demo itself is unchanged.")
    lines += [f"{n.node}: {n.status}, {n.state}" for n in report.nodes]
    lines += [f"  {v.fix} on {v.node}: {v.status}" + (f" ({v.detail})" if v.detail else "")
              for v in report.verification]
    lines.append("u rolls this run back from its journal (you confirm first).")
    return "\n".join(lines), "success" if report.ok else "warning"


@dataclass
class FixState(RunState):
    """The last apply or rollback. Kept across discoveries: a run stays rollbackable after the
    nodes are read again."""

    applied: Applied | None = None

    def reset(self, new_site: bool = False) -> None:
        """Nothing is cleared (see the class docstring)."""


class FixScreen(StepScreen, step="fix", state=FixState):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "apply", "Apply", tooltip="Apply fixes: the planned changes (you confirm first)"),
        Binding("u", "roll_back", "Roll back"),
        Binding("f", "failing_only", "FAIL only"),
    ]

    def compose_body(self) -> ComposeResult:
        yield Notice(id="fix-status", title="Fix")
        yield Notice(id="fix-run", title="Apply")
        yield Vertical(id="fix-groups")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        discovery = self.session.of(DiscoverState).discovery
        running = self.wizard.busy("fix")
        if action == "apply":
            return (discovery is not None and discovery.plan is not None and discovery.plan.changes > 0
                    and not running)
        if action == "roll_back":
            return self.session.of(FixState).applied is not None and not running
        return True

    def action_apply(self) -> None:
        """The fix service asks first (a modal), then applies."""
        discovery = self.session.of(DiscoverState).discovery
        if discovery is None or discovery.plan is None or not discovery.plan.changes:
            return
        self.post_message(ApplyFixes())

    def action_failing_only(self) -> None:
        """Only the FAIL and ERROR findings (again: every finding)."""
        self.session.failing_only = not self.session.failing_only
        self.session.changed()
        self.sync()

    def action_roll_back(self) -> None:
        """The fix service asks first (a modal), then rolls the run back."""
        self.post_message(RollBackFixes())

    def _show_run(self) -> None:
        state = self.session.of(FixState)
        run = self.query_one("#fix-run", Notice)
        if state.applied is not None and state.applied is not getattr(self, "_scrolled_to", None):
            self._scrolled_to = state.applied  # a new result: bring the Applied panel into view
            self.call_after_refresh(run.scroll_visible, animate=False, top=True)
        show_run(self.query_one("#fix-run", Notice), state, self.wizard.busy("fix"),
                 running_title="Running",
                 note="(this finishes or rolls back on its own; it cannot be interrupted halfway)",
                 failed_title="Apply failed",
                 result=None if state.applied is None else (*applied_text(state.applied), "Applied"))

    def refresh_view(self) -> None:
        notice = self.query_one("#fix-status", Notice)
        box = self.query_one("#fix-groups", Vertical)
        box.remove_children()
        self.refresh_bindings()
        if needs_discovery(self.wizard, notice):
            self.query_one("#fix-run", Notice).display = False
            return
        self._show_run()
        discovery = self.session.of(DiscoverState).discovery
        assert discovery is not None
        groups = fix_groups(discovery.report)
        plans = plan_views(discovery.plan) if discovery.plan is not None else {}
        changes = discovery.plan.changes if discovery.plan is not None else 0
        if not groups and not changes:
            notice.say("No failing check and no warning: nothing to fix.  n: deploy", "success",
                       title="Nothing to fix")
            return
        plan = discovery.plan or SitePlan(discovery.site.name)
        counted = tally(discovery.report, plan)
        said = tally_words(counted, changes, len(changed_nodes(plan)), discovery.plan_error)
        if discovery.plan is None:
            how = f"Apply them by hand, then discover again ({keys('discover', 'r')})."
        elif self.session.is_demo:
            how = "a applies them as a DRY RUN on copies of the demo's snapshots."
        else:
            how = "a applies them (you confirm first); u rolls the last run back (you confirm first)."
        only = self.session.failing_only
        shown = f"\n{FILTER_NOTE}" if only else ""
        notice.say(f"{said}\n{how}{shown}", "warning", title="Fix")
        fold = self.session.folds
        sections = [fix_section(g.title, g.results, plans.pop(g.title.removeprefix("node "), [])
                                if g.title.startswith("node ") else [], only, fold) for g in groups]
        sections += [fix_section(f"node {node}", (), node_plans, only, fold)
                     for node, node_plans in plans.items()]
        box.mount_all(section for section in sections if section is not None)

"""Step 4: failing checks grouped by node and link, each with the fix that cures it."""

from __future__ import annotations

from collections.abc import Sequence
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
from strixwizard.services.fix import Applied, Tally, changed_nodes, changes_words, tally, tally_ids
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

#: How a diff line is coloured: added, removed, the hunk's position.
DIFF_STYLE = {"+": "$text-success", "-": "$text-error", "@": "$text-muted"}


def cured_by(applied: Applied) -> set[tuple[str, str]]:
    """(check id, node) of every check the run's verification saw cured."""
    return {(check, verdict.node) for verdict in applied.report.verification
            if verdict.status == "cured" for check in verdict.cured}


def is_cured(result: CheckResult, cured: set[tuple[str, str]]) -> bool:
    """A node's result cured on its node, a link's on either end (as `services.fix.tally`)."""
    return any(result.id == check and (result.host == node or (
        result.host is None and f"{node}:" in result.entity)) for check, node in cured)


def finding_content(result: CheckResult, cured: str | None = None) -> Content:
    """A finding; `cured` says which run cured it (the rows stay what Discover read)."""
    where = f" {result.entity}" if result.entity and result.entity != result.host else ""
    lines = [Content.assemble(badge(result.status), outside(f" {result.id}{where}"))]
    if cured:
        lines.append(outside(f"{INDENT}✓ {cured}", "bold $text-success"))
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


def plan_content(plan: PlanView, applied: str | None = None) -> Content:
    """A plan's steps as before → after, a file's as the CLI's diff; `applied` says which run
    applied it."""
    where = f" on {plan.entity}" if plan.entity and plan.entity != plan.node else ""
    done = f"  ({applied})" if applied and plan.steps else ""
    head = Content.assemble(outside(f"plan {plan.fix}", "bold $accent"), outside(where),
                            outside(done, "$text-success"))
    lines = [head]
    if not plan.steps:
        lines.append(outside(f"{INDENT}no change planned", "$text-muted"))
    for step in plan.steps:
        flags = f"  [{step.flags}]" if step.flags else ""
        if step.diff:
            lines.append(outside(f"{INDENT}{step.summary}{flags}"))
            lines += [outside(f"{INDENT * 2}{line}", DIFF_STYLE.get(line[:1], "")) for line in step.diff]
            continue
        lines.append(Content.assemble(outside(f"{INDENT}{step.summary}: "),
                                      outside(step.before, "$text-error"), " → ",
                                      outside(step.after, "$text-success"), outside(flags)))
    lines += [outside(f"{INDENT}note: {in_wizard_terms(note)}", "$text-muted") for note in plan.notes]
    return Content("\n").join(lines)


@dataclass(frozen=True)
class AfterApply:
    """The last apply, as the rows of the discovery it was planned from show it: which checks
    it cured, and the words for a cured row and an applied plan."""

    cured: set[tuple[str, str]]
    row_note: str  # "cured on the dry-run copy"
    plan_note: str  # "applied on the dry-run copy"

    @classmethod
    def of(cls, applied: Applied) -> AfterApply:
        if applied.dry_run_copies is not None:
            return cls(cured_by(applied), "cured on the dry-run copy only (the demo is unchanged)",
                       "applied on the dry-run copy")
        run = applied.report.run_id
        return cls(cured_by(applied), f"cured by run {run} (read before it: discover again)",
                   f"applied by run {run}")


class FixGroupView(Static):
    def __init__(self, title: str, results: tuple[CheckResult, ...], plans: list[PlanView],
                 after: AfterApply | None = None) -> None:
        parts = [finding_content(r, after.row_note if after and is_cured(r, after.cured) else None)
                 for r in results]
        parts += [plan_content(p, after.plan_note if after else None) for p in plans]
        super().__init__(Hanging(Content("\n").join(parts)), classes="fix-group")
        self.title = title


def fix_section(title: str, results: tuple[CheckResult, ...], plans: list[PlanView],
                failing_only: bool, folds: dict[str, bool], after: AfterApply | None = None
                ) -> Section | None:
    """A node's, link's or site's findings and plans in a foldable section; with the FAIL
    filter on, only its failing findings and the plans that cure them (None: nothing left)."""
    shown = failing(results, failing_only)
    if failing_only:
        cures = {r.fix.id for r in shown if r.fix is not None}
        plans = [p for p in plans if p.fix in cures]
    if not shown and not plans:
        return None
    return Section(FixGroupView(title, shown, plans, after), key=f"fix {title}",
                   title=counted_title(title, results), folds=folds, classes="fix-section")


def after_apply_words(applied: Applied, counted: Tally, after: AfterApply) -> str:
    """The Fix step's head once its plan was applied: what the run cured, and what the rows
    below still are (the discovery the plan was made from)."""
    cured = sorted({check for check, _ in after.cured})
    what = (f"{len(cured)} of the {counted.problems} problems ({', '.join(cured)})" if cured
            else f"none of the {counted.problems} problems")
    if applied.dry_run_copies is not None:
        return (f"DRY RUN done on copies of the demo's snapshots: the plan would cure {what}. "
                "The demo itself is unchanged, so the rows below are still what Discover read; "
                "each one the copy cured is marked. u rolls the copies back.")
    return (f"Applied (run {applied.report.run_id}): it cured {what}. The rows below are what "
            f"Discover read before the run, each cured one marked; discover again "
            f"({keys('discover', 'r')}) to read the nodes afresh and plan what is left.")


def tally_words(counted: Tally, changes: int, nodes: Sequence[str], plan_error: str | None) -> str:
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
    where = f"{changes_words(changes)} planned below (on {', '.join(nodes)})"
    if not counted.problems:
        return f"{head}, yet the fix engine has {where}, each as before → after."
    parts = [f"the {where} would cure {len(counted.by_plan)} of them" if counted.by_plan
             else f"the {where} cure none of them" if changes else "no planned change cures any of them"]
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
        if applied.copies_site is not None:
            lines.append(f"strixwizard doctor --site {display_path(applied.copies_site)} reads the "
                         "site as the run left it.")
    lines += [f"{n.node}: {n.status}, {n.state}" for n in report.nodes]
    lines += [f"  {v.fix} on {v.node}: {v.status}" + (f" ({v.detail})" if v.detail else "")
              for v in report.verification]
    lines.append("u rolls this run back from its journal (you confirm first).")
    return "\n".join(lines), "success" if report.ok else "warning"


def deploy_note(applied: Applied) -> str:
    """What Deploy adds to its warnings once Fix applied the plan of the discovery it reads."""
    cured = ", ".join(sorted({check for check, _ in cured_by(applied)})) or "nothing"
    if applied.dry_run_copies is not None:
        return (f"the Fix step's dry run cured {cured} on copies only: this plan reads the demo's "
                "snapshots, which are unchanged, so the warnings above still hold for them")
    return (f"Fix run {applied.report.run_id} cured {cured} after these nodes were read: discover "
            f"again ({keys('discover', 'r')}) so this plan reads them as they are now")


@dataclass
class FixState(RunState):
    """The last apply or rollback. Kept across discoveries: a run stays rollbackable after the
    nodes are read again."""

    applied: Applied | None = None
    applied_on: int | None = None  # the discovery run the applied plan was made from

    def reset(self, new_site: bool = False) -> None:
        """Nothing is cleared (see the class docstring)."""

    def applied_here(self, discovery_run: int) -> Applied | None:
        """The last apply, when it applied the plan of discovery `discovery_run` (else None)."""
        return self.applied if self.applied is not None and self.applied_on == discovery_run else None


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
        if action == "apply":  # not the same plan twice: once applied, discover again first
            return (discovery is not None and discovery.plan is not None and discovery.plan.changes > 0
                    and not running and self._after_apply() is None)
        if action == "roll_back":
            return self.session.of(FixState).applied is not None and not running
        return True

    def action_apply(self) -> None:
        """The fix service asks first (a modal), then applies."""
        discovery = self.session.of(DiscoverState).discovery
        if discovery is None or discovery.plan is None or not discovery.plan.changes:
            return
        self.post_message(ApplyFixes())

    def _after_apply(self) -> AfterApply | None:
        """The last apply, when it was planned from the discovery shown (else None)."""
        state = self.session.of(FixState)
        applied = state.applied_here(self.session.of(DiscoverState).run)
        return None if applied is None else AfterApply.of(applied)

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
        said = tally_words(counted, changes, changed_nodes(plan), discovery.plan_error)
        after = self._after_apply()
        state = self.session.of(FixState)
        if after is not None and state.applied is not None:
            said, how = after_apply_words(state.applied, counted, after), ""
        elif discovery.plan is None:
            how = f"\nApply them by hand, then discover again ({keys('discover', 'r')})."
        elif self.session.is_demo:
            how = "\na applies them as a DRY RUN on copies of the demo's snapshots."
        else:
            how = "\na applies them (you confirm first); u rolls the last run back (you confirm first)."
        only = self.session.failing_only
        shown = f"\n{FILTER_NOTE}" if only else ""
        notice.say(f"{said}{how}{shown}", "info" if after else "warning",
                   title="Fix: dry run done" if after and state.applied and state.applied.dry_run_copies
                   else "Fix: applied" if after else "Fix")
        fold = self.session.folds
        sections = [fix_section(g.title, g.results, plans.pop(g.title.removeprefix("node "), [])
                                if g.title.startswith("node ") else [], only, fold, after)
                    for g in groups]
        sections += [fix_section(f"node {node}", (), node_plans, only, fold, after)
                     for node, node_plans in plans.items()]
        box.mount_all(section for section in sections if section is not None)

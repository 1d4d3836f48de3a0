"""Apply a site plan, verify it cured what it should, and roll runs back from their journals.

`apply_plan` promises, in this order:
1. drift check: every step's value is read again on every node; if one differs
   from the plan's `before` (or cannot be read), nothing is touched anywhere;
2. a journal per node, on the node and on the head, before the first step;
3. steps in order: each step's intent ("applying", with its `before`) is saved
   durably on the head and on the node before it runs, and "applied" after its
   read-back, so a run killed at any point leaves a journal that `rollback_run`
   can finish from (it re-reads every "applying" step); a step that fails rolls back
   that node's applied steps in reverse, and the report says what state the
   node is in; a node that stops answering is reported with its journal;
4. plans of a link (same `group`) are rolled back on every end when one end
   did not complete, so a link never keeps mismatched ends;
5. re-probe and re-run the checks that name each applied fix: a fix that did
   not cure is reported as such.

Faults of the head itself end the same way as a failed step: an OSError saving the head's
journal (disk full, read-only, I/O error) stops the run before the next step runs — a step
never runs without its "applying" on the head — the node in progress is rolled back, the
nodes not reached yet are left unchanged, and (4) runs; the node's own journal and memory
carry the record meanwhile. A signal (`node/signals.py`) lets the step in flight finish and
ends the run as cancelled the same way; a second signal stops at once, and the report still
says where each node stands.

The command decides once whether a run is a dry run (`discovery.replayed`: every node a
snapshot), takes the site's lock once (`fixing/lock.py`) and looks for unfinished runs once
under it (`refuse_unfinished`), before it asks; it hands the lock's holder to `apply_plan`
and `rollback_run`, which refuse to change a real node without one and take no lock of
their own (each node's lock is theirs).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from strixwizard.discovery import Discovery
from strixwizard.errors import os_error_line
from strixwizard.facts import NodeFacts
from strixwizard.fixing.journal import (
    JournalStatus,
    JournalStore,
    NodeJournal,
    StepRecord,
    StepStatus,
    new_run_id,
)
from strixwizard.fixing.lock import Holder, UnfinishedRun
from strixwizard.fixing.model import Kind, SitePlan
from strixwizard.fixing.readers import ReadError
from strixwizard.fixing.runner import Runner, StepFailed, Unreachable
from strixwizard.model import Status
from strixwizard.node import signals
from strixwizard.site import Site

if TYPE_CHECKING:
    from strixwizard.checking.declare import Check
    from strixwizard.checking.engine import Report
    from strixwizard.model import FixRef

Progress = Callable[[str, str], None]  # (node, message)

#: What became of a node in a run or a rollback: its journal's status, or one of these.
NodeStatus = JournalStatus | Literal["nothing-to-do", "unreachable"]
#: Whether an applied fix cured what its checks found.
#: "passing": its checks pass now but none of them failed or warned before the run (say, pause
#: turned off because the same run turned PFC on): kept right, not cured.
VerdictStatus = Literal["cured", "passing", "not-cured", "pending-reboot", "not-verified"]
#: A run as a whole.
RunStatus = Literal["applied", "failed", "aborted", "nothing-to-do", "partial", "stopped", "cancelled",
                    "interrupted"]


@dataclass
class NodeOutcome:
    node: str
    where: str
    status: NodeStatus
    state: str  # the node's state, in words
    journal: str | None = None  # on the head
    journal_on_node: str | None = None
    steps: list[StepRecord] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"node": self.node, "where": self.where, "status": self.status, "state": self.state,
                "journal": self.journal, "journal_on_node": self.journal_on_node,
                "steps": [s.to_json() for s in self.steps]}


@dataclass
class Verdict:
    fix: str
    node: str
    status: VerdictStatus
    detail: str = ""
    cured: tuple[str, ...] = ()  # the checks now passing that failed or warned before the run

    def to_json(self) -> dict[str, Any]:
        return {"fix": self.fix, "node": self.node, "status": self.status, "detail": self.detail}


@dataclass
class ApplyReport:
    run_id: str
    dry_run: bool
    status: RunStatus
    message: str = ""
    nodes: list[NodeOutcome] = field(default_factory=list)
    verification: list[Verdict] = field(default_factory=list)
    #: the signal that cancelled (or, a second one, interrupted) the run
    signal: int | None = None
    #: files of the head that could not be written, one line each (path and errno)
    journal_problems: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "dry_run": self.dry_run, "status": self.status,
                "message": self.message, "nodes": [n.to_json() for n in self.nodes],
                "verification": [v.to_json() for v in self.verification],
                "signal": signals.name(self.signal) if self.signal else None,
                "journal_problems": self.journal_problems}

    @property
    def ok(self) -> bool:
        return self.status in ("applied", "nothing-to-do") and all(
            v.status in ("cured", "passing", "pending-reboot") for v in self.verification)


class _Abort(Exception):
    def __init__(self, message: str, problem: str | None = None) -> None:
        super().__init__(message)
        self.problem = problem  # a head file that could not be written


class HeadWriteFailed(Exception):
    """A file of the head (its journal) could not be written; the message names the path and
    the errno."""


def _save_head(journal: NodeJournal, store: JournalStore) -> None:
    try:
        store.save(journal)
    except OSError as error:
        raise HeadWriteFailed(os_error_line(error, store.path(journal.run_id, journal.node))
                              ) from None


def refuse_unfinished(store: JournalStore, nodes: Sequence[str], command: str) -> None:
    """`UnfinishedRun` when an earlier run on any of `nodes` is unfinished in its journal
    (killed, interrupted, a node lost): a new run would start from values half-changed, and
    would take a program that run started for its own."""
    earlier = store.unfinished(set(nodes))
    if not earlier:
        return
    tool = command.split()[0]
    run_id, journals = list(earlier.items())[-1]
    where = "; ".join(f"{j.node}: {j.status}"
                      + (f" during {r[0].step.summary!r}" if (r := [s for s in j.steps if s.status
                                                                   in ("applying", "unknown")])
                         else "") for j in journals)
    more = f" (and {len(earlier) - 1} earlier unfinished run(s))" if len(earlier) > 1 else ""
    raise UnfinishedRun(
        f"an earlier run, {run_id}, did not finish ({where}){more}; nothing was changed. Finish "
        f"it first: `strixwizard {tool} --rollback {run_id}` (or `strixwizard {tool} "
        "--rollback`, which finishes every unfinished run), then apply again")


def _runnable(step_kind: Kind, reboot: bool, with_reboot: bool) -> bool:
    return with_reboot or not (reboot and step_kind is Kind.CMDLINE)


def apply_plan(plan: SitePlan, runners: dict[str, Runner], store: JournalStore, site: Site,
               descriptors: dict[str, dict[str, Any]], *, dry_run: bool, holder: Holder | None,
               with_reboot: bool = False,
               verify_with: Callable[[dict[str, NodeFacts]], list[Verdict]] | None = None,
               progress: Progress | None = None, run_id: str | None = None,
               break_lock: bool = False) -> ApplyReport:
    """Apply `plan` (see the module docstring). `dry_run` is the caller's one decision (every
    node a snapshot: its runners write private copies). Unless it is a dry run, the caller
    holds the site's lock (`holder`, from `fixing.lock.site_lock`, taken once per run) and has
    refused unfinished runs under it (`refuse_unfinished`); every changed node's lock is held
    here throughout (`LockHeld` when another run has it; `break_lock` replaces a stale one)."""
    if any(r.dry_run != dry_run for r in runners.values()):
        raise ValueError("a run is a dry run on every node or on none")
    if runners and not dry_run and holder is None:
        raise ValueError("changing real nodes needs the site's lock (fixing.lock.site_lock)")
    run_id = run_id or new_run_id()
    say = progress or (lambda node, message: None)
    journals: dict[str, NodeJournal] = {}
    for node in plan.nodes:
        plans = [p for p in plan.for_node(node) if p.steps]
        if not plans:
            continue
        records = [StepRecord(i, s) for i, p in enumerate(plans) for s in p.steps]
        for record in records:
            if not _runnable(record.step.kind, record.step.reboot, with_reboot):
                record.status = "skipped"
                record.error = "needs a reboot: applied only with --with-reboot-steps"
        runner = runners[node]
        journals[node] = NodeJournal(run_id, node, plan.site, runner.where, descriptors.get(node, {}),
                                     runner.dry_run, plans, records)
    report = ApplyReport(run_id, dry_run, "nothing-to-do")
    if not any(r.status == "pending" for j in journals.values() for r in j.steps):
        report.message = "nothing to apply: every selected fix is converged"
        for journal in journals.values():
            report.nodes.append(NodeOutcome(journal.node, journal.where, "nothing-to-do",
                                            "unchanged", steps=journal.steps))
        return report
    if dry_run or holder is None:  # copies only (a real run without a holder was refused above)
        with signals.deferred():
            return _apply_journals(report, journals, runners, store, say, verify_with)
    with signals.deferred():
        locked: list[Runner] = []
        try:
            for node in journals:
                with contextlib.suppress(Unreachable, StepFailed):  # the drift check tells
                    runners[node].lock({**holder, "run_id": run_id}, break_lock)
                    locked.append(runners[node])
            return _apply_journals(report, journals, runners, store, say, verify_with)
        finally:
            for runner in locked:
                if report.status == "interrupted":  # its channel may be mid-request
                    runner.close()  # the node's lock goes with its session
                    continue
                with contextlib.suppress(Unreachable, StepFailed):
                    runner.unlock()


def _apply_journals(report: ApplyReport, journals: dict[str, NodeJournal],
                    runners: dict[str, Runner], store: JournalStore, say: Progress,
                    verify_with: Callable[[dict[str, NodeFacts]], list[Verdict]] | None
                    ) -> ApplyReport:
    run_id = report.run_id
    try:
        _drift_check(journals, runners, say)
        if (signum := signals.requested()) is not None:
            raise _Abort(f"cancelled by {signals.name(signum)} before the first step")
        _write_journals(journals, runners, store)
    except (_Abort, signals.Interrupted) as abort:
        report.status = "aborted"
        if isinstance(abort, signals.Interrupted) or signals.requested() is not None:
            report.signal = abort.signum if isinstance(abort, signals.Interrupted) \
                else signals.requested()
            report.status = "cancelled"
        report.message = f"{abort} — nothing was changed on any node"
        if isinstance(abort, _Abort) and abort.problem:
            report.journal_problems.append(abort.problem)
        for journal in journals.values():
            was_saved = journal.status == "applying"
            journal.status, journal.state = "aborted", "unchanged"
            if was_saved and not journal.dry_run:  # never left as "applying" on the head
                _record(journal, runners[journal.node], store, report.journal_problems)
            report.nodes.append(NodeOutcome(journal.node, journal.where, "aborted", "unchanged",
                                            steps=journal.steps))
        return report
    stop: str | None = None
    current: NodeJournal | None = None
    try:
        for node, journal in journals.items():
            if stop is None and (signum := signals.requested()) is not None:
                stop = f"cancelled by {signals.name(signum)}"
            if stop is not None:
                _not_started(journal, runners[node], store, stop, report)
                continue
            current = journal
            stop = _run_node(journal, runners[node], store, say, report)
        current = None
        _keep_links_consistent(journals, runners, store, say, report)
    except signals.Interrupted as interrupted:
        return _interrupted(report, journals, store, current, interrupted)
    for journal in journals.values():
        report.nodes.append(NodeOutcome(
            journal.node, journal.where, journal.status, journal.state,
            str(store.path(run_id, journal.node)), journal.on_node, journal.steps))
    statuses = {j.status for j in journals.values()}
    report.status = "applied" if statuses == {"applied"} else (
        "failed" if "applied" not in statuses else "partial")
    if (signum := signals.requested()) is not None:
        report.status, report.signal = "cancelled", signum
        report.message = (f"cancelled by {signals.name(signum)}: the step in flight finished, "
                          "the steps after it did not run, and no link keeps mismatched ends")
        return report  # no verification: the user asked to stop
    if stop is not None:
        report.status = "stopped"
        report.message = (f"the run stopped: {stop}; the steps after it did not run, and no "
                          "link keeps mismatched ends")
        return report
    if verify_with is not None:
        changed: dict[str, NodeFacts] = {}
        for node, journal in journals.items():
            if journal.status == "applied":
                try:
                    changed[node] = NodeFacts(node, runners[node].probe())
                except Unreachable as error:
                    report.verification.append(Verdict("*", node, "not-verified", str(error)))
        report.verification += verify_with(changed)
    return report


def _not_started(journal: NodeJournal, runner: Runner, store: JournalStore, why: str,
                 report: ApplyReport) -> None:
    """A node the run did not reach: nothing of it changed."""
    journal.status = "cancelled" if why.startswith("cancelled") else "not-started"
    journal.state = f"unchanged: the run stopped before this node ({why})"
    _record(journal, runner, store, report.journal_problems)


def _interrupted(report: ApplyReport, journals: dict[str, NodeJournal], store: JournalStore,
                 current: NodeJournal | None, interrupted: signals.Interrupted) -> ApplyReport:
    """Stopped at once: no more node operations; what is known is saved on the head (when it
    can be) and reported, with the command that finishes the job."""
    report.status, report.signal = "interrupted", interrupted.signum
    report.message = (f"stopped at once ({interrupted.why}): a link may be half-changed; "
                      f"finish with `strixwizard fix --rollback {report.run_id}`")
    for journal in journals.values():
        in_flight = [r for r in journal.steps if r.status == "applying"]
        applied = [r.step.summary for r in journal.steps if r.status == "applied"]
        if journal is current or in_flight:
            journal.status = "interrupted"
            journal.state = (f"stopped at once during {in_flight[0].step.summary!r}: it may or may "
                             "not have landed" if in_flight else "stopped at once") + \
                f"; applied before it: {'; '.join(applied) or 'nothing'}"
        elif journal.status in ("applying", "planned"):
            journal.status = "cancelled"
            journal.state = "unchanged: the run stopped before this node"
        try:
            _save_head(journal, store)
        except HeadWriteFailed as error:
            report.journal_problems.append(str(error))
        report.nodes.append(NodeOutcome(
            journal.node, journal.where, journal.status, journal.state,
            str(store.path(report.run_id, journal.node)), journal.on_node, journal.steps))
    return report


def _drift_check(journals: dict[str, NodeJournal], runners: dict[str, Runner], say: Progress) -> None:
    for node, journal in journals.items():
        runner = runners[node]
        say(node, f"checking {sum(1 for r in journal.steps if r.status == 'pending')} values "
            f"against the plan ({runner.where})")
        for record in journal.steps:
            if record.status != "pending":
                continue
            step = record.step
            try:
                current = runner.read(step.read)
            except Unreachable as error:
                raise _Abort(f"{node} is unreachable: {error}") from None
            except (ReadError, StepFailed) as error:
                raise _Abort(f"{node}: cannot read the current value of {step.target} "
                             f"({step.summary}): {error}") from None
            record.observed_before = current
            if step.before_known and current != step.before:
                raise _Abort(f"{node}: {step.target} changed since the plan was made (planned from "
                             f"{step.before!r}, now {current!r}); re-run `strixwizard fix` to plan "
                             "again")


def _write_journals(journals: dict[str, NodeJournal], runners: dict[str, Runner],
                    store: JournalStore) -> None:
    for node, journal in journals.items():
        journal.status = "applying"
        try:
            _save_head(journal, store)
            journal.on_node = runners[node].save_journal(journal.run_id, journal.text())
            _save_head(journal, store)
        except HeadWriteFailed as error:
            raise _Abort(f"the head's journal could not be written: {error}", str(error)
                         ) from None
        except (Unreachable, StepFailed) as error:
            raise _Abort(f"{node}: the journal could not be written on the node: {error}") from None


def _save(journal: NodeJournal, runner: Runner, store: JournalStore) -> None:
    """The head's copy first (it is the record: `HeadWriteFailed` stops the run), then the
    node's, a convenience."""
    _save_head(journal, store)
    with contextlib.suppress(Unreachable, StepFailed):
        runner.save_journal(journal.run_id, journal.text())


def _record(journal: NodeJournal, runner: Runner | None, store: JournalStore,
            problems: list[str] | None) -> None:
    """Save the journal wherever it can go, after the run stopped: a head that cannot be
    written is noted (once per file), and the node's copy carries the record."""
    try:
        _save_head(journal, store)
    except HeadWriteFailed as error:
        if problems is not None and str(error) not in problems:
            problems.append(str(error))
    if runner is not None:
        with contextlib.suppress(Unreachable, StepFailed):
            runner.save_journal(journal.run_id, journal.text())


def _run_node(journal: NodeJournal, runner: Runner, store: JournalStore, say: Progress,
              report: ApplyReport) -> str | None:
    """Run a node's steps; the reason the whole run must stop (a head that cannot keep its
    journal, a signal), or None."""
    node = journal.node
    for record in journal.steps:
        if record.status != "pending":
            continue
        step = record.step
        if (signum := signals.requested()) is not None:
            why = f"cancelled by {signals.name(signum)}"
            say(node, f"{why}: rolling back this node")
            _stop_node(journal, runner, store, say, report, f"{why} before {step.summary!r}")
            return why
        say(node, step.summary)
        try:
            if not step.before_known:
                # read now, after this node's earlier steps ran: a configfs attribute, say, only
                # shows its value once the step before it made the directory
                record.observed_before = runner.read(step.read)
            record.status = "applying"  # intent first: a crash from here on may have applied it
            try:
                _save(journal, runner, store)
            except HeadWriteFailed:
                record.status = "pending"  # never run without its intent on the head
                raise
            runner.apply(step)
            now = runner.read(step.read)
            if now != step.after:
                raise StepFailed(f"{step.target} reads back {now!r} after setting {step.after!r}")
            record.status = "applied"
            _save(journal, runner, store)
        except HeadWriteFailed as error:
            why = f"the head's journal could not be saved: {error}"
            report.journal_problems.append(str(error))
            if record.status == "applied":
                record.status = "failed"  # landed, but not recorded: undone with the others
            record.error = why
            say(node, f"{why}; rolling back")
            _stop_node(journal, runner, store, say, report, f"step {step.summary!r}: {why}")
            return why
        except (StepFailed, ReadError) as error:
            record.status, record.error = "failed", str(error)
            say(node, f"failed: {error}; rolling back")
            _stop_node(journal, runner, store, say, report,
                       f"step {step.summary!r} failed: {error}")
            return None
        except Unreachable as error:
            record.status, record.error = "unknown", str(error)
            journal.status = "interrupted"
            done = [r.step.summary for r in journal.steps if r.status == "applied"]
            journal.state = (f"unreachable during {step.summary!r} ({error}); applied before it: "
                             f"{'; '.join(done) or 'nothing'}; roll back later with `strixwizard fix "
                             f"--rollback {journal.run_id}`")
            _record(journal, None, store, report.journal_problems)
            return None
    journal.status = "applied"
    journal.state = "changed as planned"
    try:
        _save(journal, runner, store)
    except HeadWriteFailed as error:
        why = f"the head's journal could not be saved: {error}"
        report.journal_problems.append(str(error))
        for record in journal.steps:
            if record.status == "applied":
                record.status = "failed"
        say(node, f"{why}; rolling back")
        _stop_node(journal, runner, store, say, report, f"after its last step: {why}")
        return why
    return None


def _stop_node(journal: NodeJournal, runner: Runner, store: JournalStore, say: Progress,
               report: ApplyReport, why: str) -> None:
    """Roll a node back from its journal in memory and save it wherever it can go."""
    _rollback_records(journal, runner, say)
    for record in journal.steps:
        if record.status == "failed" and record.error and "head's journal" in record.error:
            record.status = "rolled-back"  # the step itself worked: it is undone now
    journal.status = "rolled-back"
    journal.state = _state_after_rollback(journal, why)
    _record(journal, runner, store, report.journal_problems)


def _rollback_records(journal: NodeJournal, runner: Runner, say: Progress,
                      only_plans: set[int] | None = None) -> None:
    for record in reversed(journal.steps):
        if record.status not in ("applied", "failed", "unknown", "applying"):
            continue
        if only_plans is not None and record.plan_index not in only_plans:
            continue
        step = record.step
        before = record.observed_before if record.observed_before is not None else step.before
        try:
            if record.status in ("failed", "unknown", "applying"):
                now = runner.read(step.read)
                if now == before:
                    if record.status != "failed":
                        record.status = "rolled-back"
                    continue
            if not step.reversible:
                record.status, record.error = "undo-failed", "not reversible"
                continue
            runner.undo(step, before)
            record.status = "rolled-back"
        except (StepFailed, ReadError, Unreachable) as error:
            record.status, record.error = "undo-failed", str(error)
            say(journal.node, f"undo of {step.summary!r} failed: {error}")


def _state_after_rollback(journal: NodeJournal, why: str) -> str:
    stuck = [r for r in journal.steps if r.status == "undo-failed"]
    if not stuck:
        return f"{why}; every step already applied was rolled back: the node is as it was"
    return (f"{why}; NOT restored: " + "; ".join(f"{r.step.target} ({r.error})" for r in stuck))


def _keep_links_consistent(journals: dict[str, NodeJournal], runners: dict[str, Runner],
                           store: JournalStore, say: Progress, report: ApplyReport) -> None:
    """Roll back, on every end that completed, the link plans that another end did not
    complete — and, when the run was cancelled by a signal, every link plan of the run: a
    cancelled run leaves its links as they were."""
    broken: dict[str, str] = {}
    signum = signals.requested()
    for journal in journals.values():
        if journal.status != "applied" or signum is not None:
            for plan in journal.plans:
                if plan.group:
                    broken.setdefault(plan.group, journal.node if journal.status != "applied"
                                      else f"the run (cancelled by {signals.name(signum or 0)})")
    for journal in journals.values():
        if journal.status != "applied":
            continue
        plans = {i for i, p in enumerate(journal.plans) if p.group in broken}
        if not plans:
            continue
        runner = runners[journal.node]
        peers = sorted({broken[journal.plans[i].group or ""] for i in plans})
        say(journal.node, f"rolling back link changes: {', '.join(peers)} did not complete")
        with contextlib.suppress(Unreachable):
            _rollback_records(journal, runner, say, plans)
        journal.status = "rolled-back"
        journal.state = _state_after_rollback(
            journal, f"link changes rolled back because {', '.join(peers)} did not complete them"
        ) + ("" if len(plans) == len(journal.plans) else "; its other changes stay applied")
        _record(journal, runner, store, report.journal_problems)


# -- verification ------------------------------------------------------------

#: Fixes that take effect in sessions started after them: the checks, run in a session that
#: may be older, cannot judge them; what the user does instead.
AFTER_NEW_SESSIONS = {
    "limits.memlock": "new sessions pick it up: log in again (services: restart them), then run "
                      "strixwizard doctor",
}


def verify(before: Discovery, earlier: Report, plan: SitePlan, after: dict[str, NodeFacts], *,
           checks: Sequence[Check], fixes: dict[str, FixRef]) -> list[Verdict]:
    """Re-run the checks (of the registry `checks`, `checks.ALL`) that name each applied fix
    on the re-probed nodes; `fixes` is the fix registry doctor shows (`fixes.BY_ID`).

    Re-checking after the apply is the point: the re-probed facts are a new discovery (with
    the facts of `before` for the nodes not re-probed). What failed before the run is read
    from `earlier`, doctor's report of `before`, the discovery the plan was made from."""
    from strixwizard.checking.engine import run_doctor

    facts = {**before.facts_by_name, **after}
    verdicts: list[Verdict] = []
    applied = [(p.fix, p.node, p.reboot) for p in plan.plans if p.steps and p.node in after]
    fix_ids = {fix for fix, _, _ in applied}
    naming = [c for c in checks if c.fix in fix_ids]
    report = run_doctor(Discovery.of_facts(before.site, facts.values(), "fix"), naming, fixes)
    # What failed or warned before the run: "cured" names only those checks, never one that
    # already passed or could not be judged (a skip) before.
    named = {c.id for c in naming}
    was_bad = {(r.id, r.host, r.entity) for r in earlier.checks
               if r.id in named and r.status in (Status.FAIL, Status.WARN, Status.ERROR)}
    seen: set[tuple[str, str]] = set()
    for fix, node, reboot in applied:
        if (fix, node) in seen:
            continue
        seen.add((fix, node))
        if reboot:
            verdicts.append(Verdict(fix, node, "pending-reboot", "takes effect at the next boot"))
            continue
        names = {c.id for c in naming if c.fix == fix}
        relevant = [r for r in report.checks if r.id in names and (
            r.host == node or (r.host is None and f"{node}:" in r.entity))]
        bad = [r for r in relevant if r.status in (Status.FAIL, Status.WARN, Status.ERROR)]
        judged = [r for r in relevant if r.status is Status.PASS]
        if not relevant:
            verdicts.append(Verdict(fix, node, "not-verified", "no check judges this fix here"))
        elif not bad and not judged:  # a skip is "could not judge", never a pass
            verdicts.append(Verdict(fix, node, "not-verified", "every check that judges it "
                                    "skipped: " + "; ".join(
                                        f"{r.id} skip: {r.detail or r.observed}"
                                        for r in relevant)))
        elif bad and fix in AFTER_NEW_SESSIONS:
            verdicts.append(Verdict(fix, node, "not-verified", f"{AFTER_NEW_SESSIONS[fix]} (the checks "
                                    "ran in a session that still sees "
                                    + "; ".join(r.observed or r.detail for r in bad) + ")"))
        elif bad:
            verdicts.append(Verdict(fix, node, "not-cured", "still " + "; ".join(
                f"{r.id} {r.status.value}: {r.observed or '?'}" + (f" (want {r.expected})" if r.expected
                                                                    else "")
                + (f"; what to do: {r.detail}" if r.detail else "") for r in bad)))
        elif cured := sorted({r.id for r in judged if (r.id, r.host, r.entity) in was_bad}):
            verdicts.append(Verdict(fix, node, "cured", "now passing: " + ", ".join(cured),
                                    tuple(cured)))
        else:
            verdicts.append(Verdict(fix, node, "passing", ", ".join(sorted({r.id for r in judged}))
                                    + " passing (none of them failed or warned before the run)"))
    return verdicts


# -- rollback of a past run ----------------------------------------------------

#: Step states a rollback looks at: "applying"/"unknown" may or may not have landed (the run
#: stopped during the step), so their value is read again and `before` restored if it differs.
UNDONE_BY_ROLLBACK: tuple[StepStatus, ...] = ("applied", "applying", "unknown", "undo-failed")


def shown(value: str | None) -> str:
    """A value as a person reads it: never Python's None."""
    return "(absent)" if value is None else repr(value)


def restoring(target: str, kind: Kind, before: str | None) -> str:
    if before is None:
        return f"removing {target}, the file strixwizard created" if kind is Kind.FILE else \
            f"removing {target}, which strixwizard created"
    return f"restoring {target} to {before!r}"


def _found(journal: NodeJournal, record: StepRecord, now: str | None, before: str | None) -> str:
    number = journal.steps.index(record) + 1
    what = ("it had not landed" if now == before else
            "it had landed" if now == record.step.after else "neither value: restored")
    return (f"step {number} ({record.step.summary}) was in progress when the run stopped: "
            f"found {shown(now)} ({what}; before {shown(before)})")


@dataclass
class RollbackReport:
    run_id: str
    nodes: list[NodeOutcome] = field(default_factory=list)
    #: the signal that cancelled the rollback (it stopped at a step boundary, links whole)
    signal: int | None = None
    interrupted: bool = False  # a second signal: stopped at once
    journal_problems: list[str] = field(default_factory=list)
    #: earlier unfinished runs this rollback finished too (`--rollback` without a run)
    also_finished: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.signal is None and all(n.status in ("rolled-back", "nothing-to-do")
                                           for n in self.nodes)

    def to_json(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "ok": self.ok, "nodes": [n.to_json() for n in self.nodes],
                "signal": signals.name(self.signal) if self.signal else None,
                "interrupted": self.interrupted, "journal_problems": self.journal_problems}


def rollback_run(journals: Sequence[NodeJournal], runner_for: Callable[[NodeJournal], Runner],
                 store: JournalStore, progress: Progress | None = None, *,
                 holder: Holder | None, break_lock: bool = False) -> RollbackReport:
    """Restore every `before` value of a run, in reverse order, node by node, each node's lock
    held (`fixing/lock.py`; `LockHeld` otherwise). Unless every journal is a dry run's, the
    caller holds the site's lock on the head (`holder`, taken once per run).

    A value that is no longer the one the run set (someone changed it since) is
    left alone and reported, never overwritten; a step the run was in the middle of
    ("applying") is read again and restored to `before` when it differs. A signal stops
    it at a step boundary once every link it began restoring has both ends restored; the
    head's journal that cannot be written does not stop it (noted in `journal_problems`)."""
    say = progress or (lambda node, message: None)
    if not journals or all(j.dry_run for j in journals):
        with signals.deferred():
            return _rollback(journals, runner_for, store, say, None, False)
    if holder is None:
        raise ValueError("rolling back real nodes needs the site's lock (fixing.lock.site_lock)")
    with signals.deferred():
        return _rollback(journals, runner_for, store, say,
                         {**holder, "run_id": journals[0].run_id}, break_lock)


def _rollback(journals: Sequence[NodeJournal], runner_for: Callable[[NodeJournal], Runner],
              store: JournalStore, say: Progress, holder: dict[str, Any] | None,
              break_lock: bool) -> RollbackReport:
    report = RollbackReport(journals[0].run_id if journals else "")
    runners: dict[str, Runner | Unreachable] = {}
    begun: set[str] = set()  # link groups this rollback started restoring
    try:
        for journal in journals:  # every node reached and locked before anything changes
            if not any(r.status in UNDONE_BY_ROLLBACK for r in journal.steps):
                continue
            try:
                runner = runner_for(journal)
                runners[journal.node] = runner
                if holder is not None:
                    with contextlib.suppress(StepFailed):
                        runner.lock(holder, break_lock)
            except Unreachable as error:
                runners[journal.node] = error
        for journal in journals:
            report.nodes.append(_rollback_node(journal, runners.get(journal.node), store, say,
                                               report, begun))
    except signals.Interrupted as interrupted:
        report.signal, report.interrupted = interrupted.signum, True
        done = {n.node for n in report.nodes}
        for journal in journals:
            if journal.node in done:
                continue
            left = [r for r in journal.steps if r.status in UNDONE_BY_ROLLBACK]
            journal.state = (f"rollback stopped at once ({interrupted.why}): {len(left)} value(s) "
                             "not restored yet" if left else "nothing of this run is applied here")
            _record(journal, None, store, report.journal_problems)
            report.nodes.append(NodeOutcome(journal.node, journal.where,
                                            "interrupted" if left else "nothing-to-do",
                                            journal.state, str(store.path(journal.run_id,
                                                                          journal.node)),
                                            journal.on_node, journal.steps))
    finally:
        for reached in runners.values():
            if isinstance(reached, Runner):
                if not report.interrupted:
                    with contextlib.suppress(Unreachable, StepFailed):
                        reached.unlock()
                reached.close()
    if report.signal is None and (signum := signals.requested()) is not None:
        report.signal = signum
    return report


def _rollback_node(journal: NodeJournal, runner: Runner | Unreachable | None,
                   store: JournalStore, say: Progress, report: RollbackReport,
                   begun: set[str]) -> NodeOutcome:
    todo = [r for r in journal.steps if r.status in UNDONE_BY_ROLLBACK]
    head_path = str(store.path(journal.run_id, journal.node))
    if not todo or runner is None:
        if journal.unfinished and not todo:  # the run stopped before this node: now finished
            journal.status = "rolled-back"
            journal.state = "nothing of this run was applied here (it stopped before this node)"
            _record(journal, None, store, report.journal_problems)
        return NodeOutcome(journal.node, journal.where, "nothing-to-do",
                           "nothing of this run is applied here", head_path, journal.on_node,
                           journal.steps)
    if isinstance(runner, Unreachable):
        return NodeOutcome(journal.node, journal.where, "unreachable", str(runner), head_path)
    kept: list[str] = []
    found: list[str] = []
    left: list[str] = []  # not restored: the rollback was cancelled first
    try:
        for record in reversed(todo):
            step = record.step
            group = journal.plans[record.plan_index].group \
                if record.plan_index < len(journal.plans) else None
            if signals.requested() is not None and group not in begun:
                left.append(step.summary)  # cancelled: only links already begun are finished
                continue
            if group:
                begun.add(group)
            before = record.observed_before if record.observed_before is not None else step.before
            possibly = record.status in ("applying", "unknown")
            try:
                now = runner.read(step.read)
                if possibly:
                    found.append(_found(journal, record, now, before))
                if now == before:
                    record.status = "rolled-back"
                    continue
                if now != step.after and not possibly:
                    record.status = "undo-failed"
                    record.error = (f"now {shown(now)}, not what this run set ({shown(step.after)}): "
                                    "left alone")
                    kept.append(f"{step.target}: {record.error}")
                    continue
                say(journal.node, restoring(step.target, step.kind, before))
                runner.undo(step, before)
                record.status, record.error = "rolled-back", None
            except (StepFailed, ReadError) as error:
                record.status, record.error = "undo-failed", str(error)
                kept.append(f"{step.target}: {error}")
    except Unreachable as error:
        journal.state = f"unreachable during rollback: {error}"
        journal.status = "interrupted"
        _record(journal, None, store, None)
        return NodeOutcome(journal.node, journal.where, "unreachable", journal.state, head_path)
    except signals.Interrupted as interrupted:
        journal.status = "interrupted"
        journal.state = (f"rollback stopped at once ({interrupted.why}); restored so far: "
                         + "; ".join(r.step.summary for r in todo if r.status == "rolled-back"))
        _record(journal, None, store, None)
        report.nodes.append(NodeOutcome(journal.node, journal.where, "interrupted", journal.state,
                                        head_path, journal.on_node, journal.steps))
        raise
    journal.status = "rolled-back" if not kept and not left else "failed"
    signum = signals.requested()
    journal.state = "; ".join([
        "every value of this run restored" if not kept and not left else
        "not restored: " + "; ".join(kept + [
            f"{summary} (rollback cancelled by {signals.name(signum or 0)})" for summary in left]),
        *found])
    if left:
        journal.status = "cancelled"
    _record(journal, runner, store, report.journal_problems)
    return NodeOutcome(journal.node, journal.where, journal.status, journal.state, head_path,
                       journal.on_node, journal.steps)


"""Fix: plan, apply (drift check, journal, steps, verification), roll back a run.

`strixwizard fix` and the wizard's Fix step call these; both ask before any change
through the `confirm` they pass in. Snapshot nodes (the demo) get a dry run on
private copies of their snapshots.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from strixwizard.checking.engine import Report
from strixwizard.discovery import Discovery
from strixwizard.places import NODE_JOURNAL_DIR
from strixwizard.services.common import Confirm, OnStep, Question, ask, step_progress

if TYPE_CHECKING:
    from strixwizard.fixing.engine import ApplyReport, RollbackReport
    from strixwizard.fixing.journal import JournalStore, NodeJournal
    from strixwizard.fixing.lock import Holder
    from strixwizard.fixing.model import SitePlan
    from strixwizard.node.session import Connector
    from strixwizard.site import Site



@dataclass(frozen=True)
class FixOptions:
    journal_dir: Path | None = None  # this machine's journals (default: the user's state dir)
    node_journal_dir: str = NODE_JOURNAL_DIR
    dry_run_dir: Path | None = None  # where dry runs copy the snapshots (default: beside the journals)
    trust_new_hosts: bool = False
    with_reboot: bool = False
    break_lock: bool = False  # replace a stale lock (its run is gone) instead of refusing
    connector: Connector | None = None  # how nodes are reached (None: local or SSH as the site says)

    def store(self) -> JournalStore:
        from strixwizard.fixing.journal import JournalStore

        return JournalStore(self.journal_dir)

    def dry_run_root(self, store: JournalStore) -> Path:
        return self.dry_run_dir or store.root.parent / "dry-runs"


@dataclass(frozen=True)
class Applied:
    """An apply run: the engine's report and, for a dry run, where the changed copies are."""

    report: ApplyReport
    dry_run_copies: Path | None

    @property
    def copies_site(self) -> Path | None:
        """The site file that replays a dry run's copies (`copies_site_file`), if written."""
        if self.dry_run_copies is None:
            return None
        path = self.dry_run_copies / COPIES_SITE
        return path if path.is_file() else None


#: The site file a dry run writes beside its copies (`copies_site_file`).
COPIES_SITE = "site.yaml"


def copies_site_file(site: Site, copies: Path) -> Path | None:
    """A site file in `copies` (a dry run's folder) that replays the site as the run left it:
    each node by its own name, from its changed copy (`copies/NODE`) or, untouched, from its
    own snapshot, with the site's fabric and thresholds, so doctor judges the same nodes and
    links as before. None when the run made no copy (nothing changed) or it cannot be written."""
    import dataclasses

    import yaml

    if not copies.is_dir():
        return None
    nodes = []
    for spec in site.nodes:
        if spec.snapshot is None:
            return None  # only a site of snapshots is replayed
        copy = copies / spec.name
        node = {"name": spec.name, "snapshot": str(copy if copy.is_dir() else site.resolve(spec.snapshot))}
        if spec.fabric_address:
            node["fabric_address"] = spec.fabric_address
        nodes.append(node)
    document: dict[str, object] = {"site": site.name, "nodes": nodes,
                                   "fabric": dataclasses.asdict(site.fabric),
                                   "thresholds": dataclasses.asdict(site.thresholds)}
    if site.allow_soft_rdma:
        document["allow_soft_rdma"] = True
    path = copies / COPIES_SITE
    try:
        path.write_text("# The site as this dry run left it: the changed nodes from their copies "
                        "here, the others from their own snapshots.\n"
                        + yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    except OSError:
        return None
    return path


def plan(found: Discovery, only: Sequence[str] = (), persist: bool = True) -> SitePlan:
    """The fix engine's plan (before → after) for every reachable node of a discovery; pure,
    no change is made."""
    from fixes import FIXES
    from strixwizard.fixing.planning import plan_site

    return plan_site(found, list(only), persist=persist, fixes=FIXES)


@dataclass(frozen=True)
class Tally:
    """The problems doctor finds (failures, warnings, errors) beside a plan: which ones a planned
    change cures, which a manual plan leaves to the user, and which no plan here touches. Each
    problem is one check result (one check on one node, NIC or link), as doctor counts them."""

    failed: int
    warnings: int
    errors: int
    by_plan: tuple[str, ...]  # ids of the checks, once per result
    by_hand: tuple[str, ...]
    unplanned: tuple[str, ...]

    @property
    def problems(self) -> int:
        return self.failed + self.warnings + self.errors

    def to_json(self) -> dict[str, int]:
        return {"problems": self.problems, "failed": self.failed, "warnings": self.warnings,
                "errors": self.errors, "cured_by_plan": len(self.by_plan),
                "by_hand": len(self.by_hand), "not_planned": len(self.unplanned)}


def tally(report: Report, plan: SitePlan) -> Tally:
    """Doctor's problems in `report` matched to `plan`, both of the same discovery: a result is
    cured by a plan of its check's fix on its node (a link's result: on either end)."""
    from strixwizard.model import Status

    bad = [r for r in report.checks if r.status in (Status.FAIL, Status.WARN, Status.ERROR)]
    by_plan: list[str] = []
    by_hand: list[str] = []
    unplanned: list[str] = []
    for result in bad:
        plans = [p for p in plan.plans if result.fix is not None and p.fix == result.fix.id and (
            result.host == p.node or (result.host is None and f"{p.node}:" in result.entity))]
        bucket = by_plan if any(p.steps for p in plans) else by_hand if plans else unplanned
        bucket.append(result.id)
    count = {status: sum(1 for r in bad if r.status is status) for status in Status}
    return Tally(count[Status.FAIL], count[Status.WARN], count[Status.ERROR], tuple(by_plan),
                 tuple(by_hand), tuple(unplanned))


def tally_ids(names: tuple[str, ...]) -> str:
    """Each check id once, with how many of the problems it raised (`link.transport: 2`), so the
    ids add up to the count they follow."""
    return ", ".join(name if names.count(name) == 1 else f"{name}: {names.count(name)}"
                     for name in sorted(set(names)))


def tally_line(counted: Tally, changes: int) -> str:
    """The tally in one sentence whose counts add up: problems = cured + by hand + not planned."""
    if not counted.problems:
        return "doctor finds no problem on these nodes."
    kinds = [f"{n} {word}" for n, word in ((counted.failed, "failed"),
                                            (counted.warnings, "warnings" if counted.warnings != 1
                                             else "warning"),
                                            (counted.errors, "errors" if counted.errors != 1
                                             else "error")) if n]
    parts = [f"the {changes_words(changes)} above would cure {len(counted.by_plan)} of them "
             f"({tally_ids(counted.by_plan)})" if counted.by_plan else "no planned change cures any of them"]
    if counted.by_hand:
        parts.append(f"{len(counted.by_hand)} to do by hand, as the manual plans above say "
                     f"({tally_ids(counted.by_hand)})")
    if counted.unplanned:
        parts.append(f"{len(counted.unplanned)} with no plan here ({tally_ids(counted.unplanned)}): "
                     "`strixwizard explain ID` says what to do")
    noun = "problem" if counted.problems == 1 else "problems"
    return f"doctor finds {counted.problems} {noun} ({', '.join(kinds)}): " + "; ".join(parts) + "."


def changes_words(changes: int) -> str:
    """"1 change", "6 changes"."""
    return f"{changes} change" if changes == 1 else f"{changes} changes"


def changed_nodes(plan: SitePlan) -> list[str]:
    return [n for n in plan.nodes if any(p.steps for p in plan.for_node(n))]


def apply_question(plan: SitePlan, dry_run: bool) -> Question:
    targets = changed_nodes(plan)
    where = "on copies of the snapshots (dry run)" if dry_run else "on " + ", ".join(targets)
    detail = ("on private COPIES of the snapshots: a dry run, nothing real changes" if dry_run
              else "on " + ", ".join(targets) + ": these are REAL changes on the nodes")
    return Question(
        "Apply the fixes", f"Apply {plan.changes} change(s) {where}?",
        f"Apply {plan.changes} changes {detail}.\n\nEach value is checked against the plan first, a "
        "journal is written before the first step, a failing step rolls its node back, and the "
        "checks run again to verify. Steps that need a reboot are not run.", yes="Apply (y)")


def apply(found: Discovery, report: Report, plan: SitePlan, confirm: Confirm,
          options: FixOptions | None = None, on_step: OnStep | None = None,
          held: Holder | None = None) -> Applied:
    """Ask, then apply the plan (of `found`, whose doctor's report is `report`) with the fix
    engine. Raises NotConfirmed when the answer is no.

    A dry run (`found.dry_run`: every node is a snapshot) changes copies and takes no lock;
    otherwise the site's lock is taken here, once, unless the caller holds it already (`held`:
    `strixwizard fix` takes it before the nodes are read), and unfinished runs are looked for
    once, under it, before the question."""
    from checks import ALL
    from fixes import BY_ID
    from strixwizard.fixing.engine import refuse_unfinished
    from strixwizard.fixing.journal import new_run_id
    from strixwizard.fixing.site_apply import apply_site

    options = options or FixOptions()
    dry_run = found.dry_run
    store = options.store()
    changes = bool(changed_nodes(plan))
    with holding(held, not dry_run and changes, store, found.site.name, "fix --apply",
                 options.break_lock) as holder:  # refused before the question, not after it
        if not dry_run:
            refuse_unfinished(store, sorted({*plan.nodes, *(n.name for n in found.nodes),
                                             *(spec.name for spec in found.site.nodes)}),
                              "fix --apply")
        if changes:
            ask(confirm, apply_question(plan, dry_run))
        run_id = new_run_id()
        dry_root = options.dry_run_root(store)
        applied = apply_site(found, report, plan, store, node_journal_dir=options.node_journal_dir,
                             dry_run_root=dry_root, run_id=run_id, dry_run=dry_run, holder=holder,
                             trust_new_hosts=options.trust_new_hosts,
                             with_reboot=options.with_reboot, progress=step_progress(on_step),
                             connector=options.connector, break_lock=options.break_lock,
                             checks=ALL, fixes=BY_ID)
    if not applied.dry_run:
        return Applied(applied, None)
    copies_site_file(found.site, dry_root / run_id)
    return Applied(applied, dry_root / run_id)


@contextmanager
def holding(held: Holder | None, needed: bool, store: JournalStore, site: str, command: str,
            break_lock: bool) -> Iterator[Holder | None]:
    """The site's lock on the head (`fixing/lock.py`) for the block, taken once: `held` when
    the caller holds it already, else taken here when `needed` (a dry run, copies only, and a
    run with nothing to change need none; None is yielded then). `LockHeld` at once when
    another run holds it."""
    if held is not None or not needed:
        yield held
        return
    from strixwizard.fixing.lock import site_lock

    with site_lock(store.root, site, command, break_lock) as holder:
        yield holder


def load_run(store: JournalStore, run_id: str | None) -> list[NodeJournal]:
    """The journals of a run (None: the last one); a missing run is a usage error."""
    from strixwizard.errors import UsageError

    try:
        return store.load_run(run_id)
    except (FileNotFoundError, ValueError) as error:
        raise UsageError(str(error)) from None


def rollback_question(journals: Sequence[NodeJournal], what: str = "run",
                      earlier: Sequence[str] = ()) -> Question:
    run_id = journals[0].run_id
    nodes = ", ".join(j.node for j in journals)
    dry = all(j.dry_run for j in journals)
    also = f", and finish the unfinished run(s) {', '.join(earlier)}" if earlier else ""
    text = (f"Roll back {what} {run_id} on {nodes}" + (" (dry-run copies)" if dry else "")
            + also + "?")
    return Question(
        "Roll back", text, f"{text}\n\nEvery value the run changed is restored from its journal, "
        "in reverse order." + ("" if dry else " These are REAL changes on the nodes."),
        yes="Roll back (y)")


def rollback(run_id: str | None, confirm: Confirm, options: FixOptions | None = None,
             on_step: OnStep | None = None) -> RollbackReport:
    """Ask, then restore every value a run changed (None: the last run), from its journals."""
    from strixwizard.fixing.engine import rollback_run
    from strixwizard.fixing.site_apply import runner_from_journal

    options = options or FixOptions()
    connector = options.connector

    def undo(journals: list[NodeJournal], store: JournalStore, holder: Holder | None
             ) -> RollbackReport:
        return rollback_run(journals, lambda journal: runner_from_journal(journal, connector),
                            store, step_progress(on_step), holder=holder,
                            break_lock=options.break_lock)

    return roll_back_run(options.store(), run_id, confirm, "fix --rollback", "run",
                         options.break_lock, undo)


def roll_back_run(store: JournalStore, run_id: str | None, confirm: Confirm, command: str,
                  what: str, break_lock: bool,
                  undo: Callable[[list[NodeJournal], JournalStore, Holder | None], RollbackReport]
                  ) -> RollbackReport:
    """The one way a run is rolled back (fix and deploy): load its journals, take the site's
    lock once (not for dry-run copies), ask, then `undo` under it."""
    journals = load_run(store, run_id)
    # without RUN: the last run, then every other run that did not finish (newest first)
    earlier = [] if run_id is not None else list(store.unfinished(but=journals[0].run_id))[::-1]
    with holding(None, not all(j.dry_run for j in journals), store, journals[0].site, command,
                 break_lock) as holder:
        ask(confirm, rollback_question(journals, what, earlier))
        report = undo(journals, store, holder)
        for other in earlier:
            if report.signal is not None:  # cancelled: the rest waits for the next rollback
                break
            more = undo(store.load_run(other), store, holder)
            report.also_finished.append(other)
            for outcome in more.nodes:
                outcome.state = f"run {other}: {outcome.state}"
            report.nodes += more.nodes
            report.journal_problems += more.journal_problems
            report.signal, report.interrupted = more.signal, more.interrupted
        return report


def rollback_outcome(report: RollbackReport) -> str:
    """A rollback in one line of words."""
    return ("rolled back: " if report.ok else "rollback incomplete: ") + "; ".join(
        f"{n.node} {n.status} ({n.state})" for n in report.nodes)

"""Deploy orchestration on top of the fix engine: plan from facts, read the nodes' current
state, apply through the fix engine's executor and journal, roll back, smoke-test. Knows no
stack: each one's hooks come from its declaration (`deploy/base.py` `Stack`).

Deploy journals live apart from fix journals (`.../strixwizard/deploy-journal`), so
`deploy --rollback` never undoes a fix run and `fix --rollback` never a deploy.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from strixwizard.deploy.env import DeployRefused, generate_env
from strixwizard.deploy.plan import (
    STACKS,
    DeployPlan,
    DeploySettings,
    Progress,
    plan_deploy,
    stack_of,
    with_observed,
)
from strixwizard.deploy.remote import run
from strixwizard.deploy.smoke import SmokeReport
from strixwizard.discovery import DiscoveredNode, Discovery
from strixwizard.errors import UsageError
from strixwizard.fixing.journal import JournalStore, default_journal_dir
from strixwizard.fixing.model import Kind, Read, Step
from strixwizard.fixing.readers import ReadError
from strixwizard.fixing.runner import OpsRunner, Runner, StepFailed, Unreachable
from strixwizard.probe import Probe
from strixwizard.site import Site

if TYPE_CHECKING:
    from strixwizard.fixing.engine import ApplyReport, RollbackReport
    from strixwizard.fixing.journal import NodeJournal
    from strixwizard.fixing.lock import Holder

def deploy_store(root: Path | None = None) -> JournalStore:
    return JournalStore(root or default_journal_dir().parent / "deploy-journal")


def make_plan(found: Discovery, settings: DeploySettings, profile: str = "rdma",
              head: str | None = None) -> DeployPlan:
    """The deploy plan of every node of the discovery (or of `settings.nodes`); all of them
    must be reachable."""
    site = found.site
    nodes = selected(found.nodes, settings.nodes)
    down = {n.report.name: n.report.error or "unreachable" for n in nodes if n.facts is None}
    if down:
        raise DeployRefused("cannot deploy a cluster with nodes missing: " + "; ".join(
            f"{name}: {why}" for name, why in down.items()) + (
            "; leave them out with --nodes A,B" if not settings.nodes else ""))
    facts = [n.facts for n in nodes if n.facts is not None]
    management = {spec.name: spec.host for spec in site.nodes
                  if spec.host and spec.host != "local"}
    topology = found.topology.among({f.name for f in facts})
    env = generate_env(site.name, facts, topology, profile, head, management)
    return plan_deploy(env, {f.name: f for f in facts}, settings)


def selected(nodes: Sequence[DiscoveredNode], names: Sequence[str]) -> list[DiscoveredNode]:
    """The nodes named (in the site's order), or all of them; an unknown name is a usage
    error that lists the site's nodes."""
    if not names:
        return list(nodes)
    known = [n.report.name for n in nodes]
    unknown = [name for name in names if name not in known]
    if unknown:
        raise UsageError(f"--nodes: {', '.join(unknown)} not in the site "
                         f"(its nodes: {', '.join(known)})")
    return [n for n in nodes if n.report.name in names]


#: `sh -c WHO PIDFILE`: "PID 1234, running since 2026-12-01T22:10:05Z" of a launcher's pid
#: file (its start time is in clock ticks since boot: /proc/stat's btime turns it into a date).
WHO = r"""pid=$(head -n 1 "$0" 2>/dev/null); t=$(sed -n 3p "$0" 2>/dev/null)
case $pid in ''|*[!0-9]*) exit 0 ;; esac
since=""
if [ -n "$t" ]; then
  boot=$(sed -n 's/^btime //p' /proc/stat); hz=$(getconf CLK_TCK 2>/dev/null || echo 100)
  since=$(date -u -d "@$((boot + t / hz))" +%Y-%m-%dT%H:%M:%SZ 2>/dev/null)
fi
echo "PID $pid${since:+, running since $since}"
"""


def _started_by(store: JournalStore | None, node: str, target: str) -> str:
    """Which run's journal says it started `target` on `node` (and it was not rolled back)."""
    if store is None:
        return "no journal of this head was asked"
    for run_id in reversed(store.runs()):
        with contextlib.suppress(FileNotFoundError, ValueError, KeyError, TypeError, OSError):
            for journal in store.load_run(run_id):
                if journal.node != node:
                    continue
                for record in journal.steps:
                    if record.step.target == target and record.status in (
                            "applied", "applying", "unknown", "undo-failed"):
                        how = "an unfinished run" if journal.unfinished else "run"
                        return f"started by {how} {run_id} (its journal)"
    return "started by no run in this head's journals"


def _running_note(runner: Runner, node: str, step: Step, store: JournalStore | None) -> str:
    """A program found already running: named (pid, start time, who started it), counted as
    converged but never as this run's."""
    who = ""
    argv = step.read.argv
    if len(argv) == 4 and argv[:2] == ("sh", "-c") and isinstance(runner, OpsRunner):
        with contextlib.suppress(Unreachable, StepFailed, ValueError):
            rc, out, _ = run(runner, ("sh", "-c", WHO, argv[3]))
            who = out.strip() if rc == 0 else ""
    known = ", ".join(filter(None, [who, _started_by(store, node, step.target)]))
    return (f"{node}: {step.target} is already running ({known}): this run neither starts nor "
            "counts it as its own; the rollback of the run that started it stops it")


def observe(plan: DeployPlan, runners: dict[str, Runner], store: JournalStore | None = None
            ) -> DeployPlan:
    """Fill every step's `before` with what its node holds now and drop converged steps; the
    plan's stack refuses first what the nodes' state forbids (`Stack.observe`: e.g. a Ray that
    strixwizard did not start). A program found already running is named in the notes."""
    observed: dict[tuple[str, str], str | None] = {}
    for p in plan.site_plan.plans:
        runner = runners.get(p.node)
        if runner is None:
            continue
        for step in p.steps:
            try:
                observed[(p.node, step.target)] = runner.read(step.read)
            except Unreachable as error:
                raise UsageError(f"{p.node} is unreachable: {error}") from None
            except (ReadError, StepFailed) as error:
                raise UsageError(f"{p.node}: cannot read {step.target}: {error}") from None
    refuse = stack_of(plan.settings.stack).observe
    if refuse is not None:
        refuse(plan, observed)
    for p in plan.site_plan.plans:
        for step in p.steps:
            if step.kind is Kind.COMMAND and step.after == "running" and \
                    observed.get((p.node, step.target)) == "running" and p.node in runners:
                plan.notes.append(_running_note(runners[p.node], p.node, step, store))
    plan.site_plan = with_observed(plan.site_plan, observed)
    return plan


def smoke_cluster(plan: DeployPlan, runners: dict[str, Runner], say: Progress | None = None
                  ) -> SmokeReport:
    """The smoke test the plan's stack declares (Ray/RCCL, llama.cpp RPC, ...)."""
    return stack_of(plan.settings.stack).smoke(plan, runners, say)


def apply_deploy(plan: DeployPlan, runners: dict[str, Runner], store: JournalStore, site: Site,
                 descriptors: dict[str, dict[str, Any]], say: Progress | None = None,
                 smoke: bool = True, break_lock: bool = False, holder: Holder | None = None
                 ) -> tuple[ApplyReport, SmokeReport | None]:
    """Apply the plan through the fix engine (journalled, all-or-nothing; under the site's
    lock the caller holds, `holder`), then, if it went through, the smoke test on the head.
    The CLI and the wizard both call this."""
    from strixwizard.fixing.engine import apply_plan
    from strixwizard.fixing.journal import new_run_id

    report = apply_plan(plan.site_plan, runners, store, site, descriptors, dry_run=False,
                        holder=holder, run_id=new_run_id(), progress=say, break_lock=break_lock)
    checked = smoke_cluster(plan, runners, say) if report.ok and smoke else None
    return report, checked


class _Noting(Runner):
    """A node's runner that, after each undo, asks every stack's `after_undo` hook what the
    node still runs that the rollback leaves alone (e.g. another Ray), and keeps the note."""

    def __init__(self, inner: Runner, notes: dict[str, str]) -> None:
        self.inner, self.notes = inner, notes
        self.node, self.where, self.dry_run = inner.node, inner.where, inner.dry_run

    def read(self, read: Read) -> str | None:
        return self.inner.read(read)

    def apply(self, step: Step) -> None:
        self.inner.apply(step)

    def undo(self, step: Step, before: str | None) -> None:
        self.inner.undo(step, before)
        for stack in STACKS.values():
            note = stack.after_undo(self.inner, step) if stack.after_undo else None
            if note:
                self.notes[self.node] = note

    def save_journal(self, run_id: str, text: str) -> str:
        return self.inner.save_journal(run_id, text)

    def probe(self) -> Probe:
        return self.inner.probe()

    def lock(self, holder: dict[str, Any], break_stale: bool = False) -> None:
        self.inner.lock(holder, break_stale)

    def unlock(self) -> None:
        self.inner.unlock()

    def close(self) -> None:
        self.inner.close()


def rollback_deploy(journals: list[NodeJournal], store: JournalStore,
                    say: Progress | None = None, break_lock: bool = False,
                    holder: Holder | None = None) -> RollbackReport:
    """Undo a deploy run from its journals in the order the stacks declare (`stops_first`: a
    server before its workers; `stops_last`: a head after them, so a worker stops while its head
    still answers). What a stack's `after_undo` finds left alone on a node is said there."""
    from strixwizard.fixing.engine import rollback_run
    from strixwizard.fixing.site_apply import runner_from_journal

    first = frozenset().union(*(stack.stops_first for stack in STACKS.values()))
    last = frozenset().union(*(stack.stops_last for stack in STACKS.values()))

    def rank(journal: NodeJournal) -> int:
        targets = {r.step.target for r in journal.steps}
        return 0 if targets & first else 2 if targets & last else 1

    notes: dict[str, str] = {}
    ordered = sorted(journals, key=rank)
    report = rollback_run(ordered, lambda journal: _Noting(runner_from_journal(journal), notes),
                          store, say, holder=holder, break_lock=break_lock)
    for outcome in report.nodes:
        if outcome.node in notes:
            outcome.state += f"; left alone: {notes[outcome.node]}"
    return report

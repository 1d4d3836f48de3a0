"""Deploy: plan a deploy stack, apply it (then the smoke test), smoke-test, roll back. Knows no
stack: each one's declaration (`deploy/base.py` `Stack`) builds its settings and answers.

`strixwizard deploy` and the wizard's Deploy step call these. Planning is pure; a
node is reached only to read its state (`observe`), apply, smoke-test or roll back,
and every change is asked for first through the caller's `confirm`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from strixwizard.checking.engine import Report
from strixwizard.discovery import Discovery
from strixwizard.errors import UsageError
from strixwizard.model import LINK_ID_JOIN, link_text
from strixwizard.places import NODE_JOURNAL_DIR
from strixwizard.services.common import Confirm, OnStep, Question, ask, step_progress
from strixwizard.services.fix import holding, roll_back_run
from strixwizard.site import Site

if TYPE_CHECKING:
    from strixwizard.deploy.declare import Option, Panel
    from strixwizard.deploy.plan import DeployPlan, DeploySettings
    from strixwizard.deploy.smoke import SmokeReport
    from strixwizard.fixing.engine import ApplyReport, RollbackReport
    from strixwizard.fixing.journal import JournalStore, NodeJournal
    from strixwizard.fixing.lock import Holder
    from strixwizard.fixing.runner import Runner
    from strixwizard.model import CheckResult


@dataclass(frozen=True)
class DeployOptions:
    journal_dir: Path | None = None  # this machine's deploy journals (default: the user's state dir)
    node_journal_dir: str = NODE_JOURNAL_DIR
    trust_new_hosts: bool = False
    break_lock: bool = False  # replace a stale lock (its run is gone) instead of refusing

    def store(self) -> JournalStore:
        from strixwizard.deploy.engine import deploy_store

        return deploy_store(self.journal_dir)


@dataclass(frozen=True)
class DeployPreview:
    """The deploy plan, or why there is none. `replayed`: nodes that are snapshots (plan only)."""

    plan: DeployPlan | None
    refused: str | None = None
    replayed: tuple[str, ...] = ()
    #: what `strixwizard doctor` FAILs on these nodes (the same checks, the same facts): a
    #: deploy on top of them is planned, and warned about, never called ready
    doctor_failures: tuple[str, ...] = ()

    @property
    def plan_only(self) -> bool:
        return bool(self.replayed)


@dataclass(frozen=True)
class Deployed:
    report: ApplyReport | None  # None: `observe` refused, nothing was applied
    smoke: SmokeReport | None
    refused: str | None = None  # why `observe` refused (e.g. Ray already runs with another env)

    @property
    def ok(self) -> bool:
        return (self.report is not None and self.report.ok
                and (self.smoke is None or self.smoke.status == "pass"))


@dataclass
class Cluster:
    """The plan as observed on the real nodes, with a runner per node (closed by `opened`)."""

    plan: DeployPlan
    runners: dict[str, Runner] = field(default_factory=dict)
    descriptors: dict[str, dict[str, Any]] = field(default_factory=dict)
    refused: str | None = None  # `observe` refused: the nodes' state forbids this plan


TRANSPORTS = {"rdma": "RDMA", "tcp": "TCP (no RDMA)"}


def stack_labels() -> dict[str, str]:
    """Every deploy stack's name and label, as the stacks declare them (the default first)."""
    from strixwizard.deploy.plan import STACKS

    return {name: stack.label for name, stack in STACKS.items()}


def stack_name(name: str) -> str:
    """The stack's name ("": the default stack's); an unknown name as it is."""
    from strixwizard.deploy.env import DeployRefused
    from strixwizard.deploy.plan import stack_of

    try:
        return stack_of(name).name
    except DeployRefused:
        return name


def wizard_options() -> dict[str, tuple[Option, ...]]:
    """Each stack's options the wizard shows (`Option.wizard`), by stack name."""
    from strixwizard.deploy.plan import STACKS

    return {name: tuple(o for o in stack.options if o.wizard is not None)
            for name, stack in STACKS.items()}


def model_hint(name: str) -> str:
    """What the stack's model is (the wizard's Model field); "" for an unknown stack."""
    from strixwizard.deploy.plan import STACKS

    stack = STACKS.get(stack_name(name))
    return stack.model_hint if stack else ""


def plan_panel(plan: DeployPlan) -> Panel:
    """The plan as its stack shows it in the wizard."""
    from strixwizard.deploy.plan import panel_of

    return panel_of(plan)


@dataclass(frozen=True)
class DeployChoice:
    """What the user picks for a deploy (the CLI's --stack, --model, --transport, --nodes,
    --target-dir, and the stack's own options by `dest`: --serve, --persist, ...), as the
    wizard's Deploy step holds it. The stack's own builder turns it into settings, as it does
    the CLI's flags."""

    stack: str = ""  # "": the default stack
    model: str | None = None
    transport: str = "rdma"
    nodes: tuple[str, ...] = ()  # empty: every node of the site
    target_dir: str | None = None  # None: the default
    #: the stack's options set by the user, by `dest` (`("serve", True)`); the rest: defaults
    options: tuple[tuple[str, object], ...] = ()

    def value(self, dest: str) -> object:
        return dict(self.options).get(dest)

    def with_option(self, dest: str, value: object) -> DeployChoice:
        options = {**dict(self.options), dest: value}
        return replace(self, options=tuple((k, v) for k, v in options.items() if v is not None))

    def settings(self, site: Site | None = None) -> DeploySettings:
        """The stack's settings, built by the stack from this choice (an option not picked: the
        site file's value for it, as the CLI's flags)."""
        from strixwizard.deploy.plan import DEFAULT_TARGET_DIR, DeploySettings, settings_from

        common = DeploySettings(target_dir=self.target_dir or DEFAULT_TARGET_DIR, nodes=self.nodes)
        return settings_from(self.stack, {**dict(self.options), "model": self.model}, common,
                             site)


def plan_choice(found: Discovery, report: Report, choice: DeployChoice | None = None
                ) -> DeployPreview:
    """`plan` from what the user picked (the wizard's Deploy step)."""
    from strixwizard.deploy.env import DeployRefused

    choice = choice or DeployChoice()
    try:
        return plan(found, report, choice.settings(found.site), choice.transport)
    except (UsageError, DeployRefused) as error:  # a node name the site lacks, an unknown stack
        return DeployPreview(None, str(error))


def plan(found: Discovery, report: Report, settings: DeploySettings | None = None,
         transport: str = "rdma", head: str | None = None) -> DeployPreview:
    """The engine's deploy plan of a discovery (pure: no node is touched), with what doctor's
    `report` of the same discovery fails on its nodes; a refusal is a reason, not an error."""
    from strixwizard.deploy.engine import make_plan
    from strixwizard.deploy.env import DeployRefused
    from strixwizard.deploy.plan import DeploySettings

    try:
        planned = make_plan(found, settings or DeploySettings(), transport, head)
    except DeployRefused as refused:
        return DeployPreview(None, str(refused))
    site = found.site
    specs = {spec.name: spec for spec in site.nodes}
    replayed = tuple(n.node for n in planned.env.nodes
                     if specs.get(n.node) is None or specs[n.node].snapshot is not None)
    failures = doctor_failures(report, {n.node for n in planned.env.nodes})
    planned.notes.extend(failures)
    return DeployPreview(planned, None, replayed, failures)


def doctor_failures(report: Report, names: set[str]) -> tuple[str, ...]:
    """Each check doctor FAILs (or could not run) in `report` on the deployed nodes (`names`),
    the links between them, or the site, one line each: deploy reads the nodes with the
    doctor's own report of the same discovery."""
    from strixwizard.model import Status

    lines = []
    for result in report.checks:
        if result.status not in (Status.FAIL, Status.ERROR) or not _among(result, names):
            continue
        where = result.host or link_text(result.entity)
        seen = f": {result.observed}" if result.observed else ""
        want = f" (want {result.expected})" if result.expected else ""
        lines.append(f"doctor {result.status.value.upper()}s {result.id} on {where}{seen}{want}")
    return tuple(dict.fromkeys(lines))


def _among(result: CheckResult, names: set[str]) -> bool:
    """A node's result on one of `names`, a link's with both ends among them, or the site's."""
    if result.host is not None:
        return result.host in names
    ends = [end.strip().partition(":")[0] for end in result.entity.split(LINK_ID_JOIN)]
    return len(ends) != 2 or all(end in names for end in ends)


def refuse_replayed(preview: DeployPreview) -> None:
    """Applying or smoke-testing needs real nodes: snapshots are a usage error."""
    if preview.replayed:
        raise UsageError(f"{', '.join(preview.replayed)} replayed from snapshots: nothing to deploy "
                         "on or test; `strixwizard deploy --plan` shows the plan")


@contextmanager
def opened(site: Site, planned: DeployPlan, options: DeployOptions | None = None
           ) -> Iterator[Cluster]:
    """Reach every node of the plan and read its state (`observe`); runners closed on exit."""
    from strixwizard.deploy.engine import observe
    from strixwizard.deploy.env import DeployRefused
    from strixwizard.fixing.site_apply import runner_for

    options = options or DeployOptions()
    specs = {spec.name: spec for spec in site.nodes}
    cluster = Cluster(planned)
    try:
        for name in [n.node for n in planned.env.nodes]:
            cluster.runners[name], cluster.descriptors[name] = runner_for(
                site, specs[name], trust_new_hosts=options.trust_new_hosts,
                node_journal_dir=options.node_journal_dir, dry_run_root=Path("/nonexistent"))
        try:
            cluster.plan = observe(planned, cluster.runners, options.store())
        except DeployRefused as refused:
            cluster.refused = str(refused)
        yield cluster
    finally:
        for runner in cluster.runners.values():
            runner.close()


def apply_question(planned: DeployPlan) -> Question:
    """The confirmation before a deploy: the changes, the nodes, and what the stack starts."""
    from strixwizard.deploy.plan import stack_of

    changes, nodes = planned.site_plan.changes, ", ".join(planned.site_plan.nodes)
    return Question(
        "Apply the deploy", f"Deploy {changes} change(s) on {nodes}?",
        f"Deploy {changes} change(s) on {nodes}: these are REAL changes on the nodes.\n\n"
        + stack_of(planned.settings.stack).question(planned), yes="Deploy (y)")


def apply_on(cluster: Cluster, site: Site, confirm: Confirm, options: DeployOptions | None = None,
             on_step: OnStep | None = None, smoke: bool = True, held: Holder | None = None
             ) -> Deployed:
    """Ask, then apply the observed plan through the fix engine (journalled, all-or-nothing),
    then the smoke test on the head. The site's lock is taken here, once, unless the caller
    holds it (`held`), and unfinished runs are looked for once, under it, before the question."""
    from strixwizard.deploy.engine import apply_deploy
    from strixwizard.fixing.engine import refuse_unfinished

    if cluster.refused is not None:
        return Deployed(None, None, cluster.refused)
    options = options or DeployOptions()
    store = options.store()
    with holding(held, bool(cluster.plan.site_plan.changes), store, site.name, "deploy --apply",
                 options.break_lock) as holder:  # refused before the question, not after it
        refuse_unfinished(store, sorted({*(n.node for n in cluster.plan.env.nodes),
                                         *(spec.name for spec in site.nodes)}), "deploy --apply")
        if cluster.plan.site_plan.changes:
            ask(confirm, apply_question(cluster.plan))
        report, checked = apply_deploy(cluster.plan, cluster.runners, store, site,
                                       cluster.descriptors, step_progress(on_step), smoke=smoke,
                                       break_lock=options.break_lock, holder=holder)
    return Deployed(report, checked)


def apply(site: Site, planned: DeployPlan, confirm: Confirm, options: DeployOptions | None = None,
          on_step: OnStep | None = None, smoke: bool = True) -> Deployed:
    """Reach the nodes, read their state, ask, apply, smoke-test (real nodes only); the site's
    lock is taken once, before the nodes are reached."""
    options = options or DeployOptions()
    with (holding(None, True, options.store(), site.name, "deploy --apply",
                  options.break_lock) as holder,
          opened(site, planned, options) as cluster):
        return apply_on(cluster, site, confirm, options, on_step, smoke, held=holder)


def smoke_on(cluster: Cluster, on_step: OnStep | None = None) -> SmokeReport:
    """Only the smoke test, on a deployed cluster, as the plan's stack declares it."""
    from strixwizard.deploy.engine import smoke_cluster

    return smoke_cluster(cluster.plan, cluster.runners, step_progress(on_step))


def rollback(run_id: str | None, confirm: Confirm, options: DeployOptions | None = None,
             on_step: OnStep | None = None) -> RollbackReport:
    """Ask, then undo a deploy run (None: the last one): files removed, the programs it started
    stopped (only those)."""
    from strixwizard.deploy.engine import rollback_deploy

    options = options or DeployOptions()

    def undo(journals: list[NodeJournal], store: JournalStore, holder: Holder | None
             ) -> RollbackReport:
        return rollback_deploy(journals, store, step_progress(on_step),
                               break_lock=options.break_lock, holder=holder)

    return roll_back_run(options.store(), run_id, confirm, "deploy --rollback", "deploy",
                         options.break_lock, undo)

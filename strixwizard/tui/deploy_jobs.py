"""The deploy engine calls the wizard makes (step 5), run inside Textual thread workers.

Composed from the engine's public pieces exactly as `strixwizard deploy` composes
them (`deploy.cli.cmd_deploy`): `make_plan` → (real nodes) `runner_for` per node →
`observe` → the fix engine's `apply_plan` with the deploy journal store →
`smoke_test` on the head; rollback is the fix engine's `rollback_run` on a deploy run.
Blocking and thread-safe; errors stay exceptions here (the app shows reason + next step).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from strixwizard.engine import Node
from strixwizard.site import Site

if TYPE_CHECKING:
    from strixwizard.deploy.plan import DeployPlan
    from strixwizard.deploy.smoke import SmokeReport
    from strixwizard.fixing.engine import ApplyReport, RollbackReport

NODE_JOURNAL_DIR = "/var/lib/strixwizard/journal"  # the node's copy, as `strixwizard deploy` keeps it
Say = Callable[[str, str], None]


@dataclass(frozen=True)
class DeployPreview:
    """The deploy plan, or why there is none. `replayed`: nodes that are snapshots (plan only)."""

    plan: DeployPlan | None
    refused: str | None = None
    replayed: tuple[str, ...] = ()

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


def plan_deploy(site: Site, nodes: Sequence[Node], model: str | None = None) -> DeployPreview:
    """The engine's deploy plan (pure: no node is touched); a refusal is a reason, not an error."""
    from strixwizard.deploy.engine import make_plan
    from strixwizard.deploy.env import DeployRefused
    from strixwizard.deploy.plan import DeploySettings

    try:
        plan = make_plan(site, nodes, DeploySettings(model=model))
    except DeployRefused as refused:
        return DeployPreview(None, str(refused))
    specs = {spec.name: spec for spec in site.nodes}
    replayed = tuple(n.node for n in plan.env.nodes
                     if specs.get(n.node) is None or specs[n.node].snapshot is not None)
    return DeployPreview(plan, None, replayed)


def apply_deploy(site: Site, plan: DeployPlan, say: Say | None, smoke: bool = True) -> Deployed:
    """Read each node's state, apply the plan through the fix engine (journalled, all-or-nothing),
    then the smoke test on the head. Real nodes only: snapshots are refused by the caller."""
    from strixwizard.deploy.engine import apply_deploy as apply_through_engine
    from strixwizard.deploy.engine import deploy_store, observe
    from strixwizard.deploy.env import DeployRefused
    from strixwizard.fixing.runner import Runner
    from strixwizard.fixing.targets import runner_for

    specs = {spec.name: spec for spec in site.nodes}
    runners: dict[str, Runner] = {}
    descriptors: dict[str, dict[str, Any]] = {}
    try:
        for name in [n.node for n in plan.env.nodes]:
            runners[name], descriptors[name] = runner_for(
                site, specs[name], trust_new_hosts=False, node_journal_dir=NODE_JOURNAL_DIR,
                dry_run_root=Path("/nonexistent"))
        try:
            plan = observe(plan, runners)
        except DeployRefused as refused:
            return Deployed(None, None, str(refused))
        report, checked = apply_through_engine(plan, runners, deploy_store(), site, descriptors,
                                               say, smoke=smoke)
    finally:
        for runner in runners.values():
            runner.close()
    return Deployed(report, checked)


def roll_back_deploy(run_id: str, say: Say | None) -> RollbackReport:
    """Undo a deploy run from its journals (files removed, `ray stop`), workers before the head."""
    from strixwizard.deploy.engine import deploy_store, rollback_deploy

    store = deploy_store()
    return rollback_deploy(store.load_run(run_id), store, say)

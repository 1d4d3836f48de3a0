"""One runner per node of a run, and how a journal reaches its node again for a rollback."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from strixwizard.fixing.journal import NodeJournal
from strixwizard.fixing.runner import (
    DEFAULT_NODE_JOURNAL_DIR,
    LocalRunner,
    Runner,
    SessionRunner,
    SnapshotRunner,
    Unreachable,
)
from strixwizard.fixing.ssh import SshRunner
from strixwizard.node.connect import connect
from strixwizard.node.replay import SnapshotSession
from strixwizard.node.target import (
    LocalTarget,
    SnapshotTarget,
    SshTarget,
    Target,
    target_for,
    target_from_json,
)
from strixwizard.site import NodeSpec, Site

if TYPE_CHECKING:
    from strixwizard.checking.declare import Check
    from strixwizard.checking.engine import Report
    from strixwizard.discovery import Discovery
    from strixwizard.fixing.engine import ApplyReport
    from strixwizard.fixing.journal import JournalStore
    from strixwizard.fixing.lock import Holder
    from strixwizard.fixing.model import SitePlan
    from strixwizard.model import FixRef
    from strixwizard.node.session import Connector, NodeSession


def runner_for_session(target: Target, session: NodeSession,
                       journal_dir: str = DEFAULT_NODE_JOURNAL_DIR) -> Runner:
    """The fix engine's runner over a session of `target`: a dry run into a snapshot's private
    copy, or the node's ops channel (this machine, or SSH)."""
    if isinstance(session, SnapshotSession):
        if session.copy is None:
            session.close()
            raise Unreachable(f"{target.name} is a snapshot without a private copy: "
                              "nothing may be written to it")
        return SnapshotRunner(target.name, session.copy)
    if isinstance(target, SshTarget):
        return SshRunner(target, journal_dir, session=session)
    if isinstance(target, LocalTarget):
        return LocalRunner(target.name, target.netns, journal_dir, session)
    return SessionRunner(target.name, session, journal_dir)  # a replay: it refuses every change


def descriptor(target: Target, journal_dir: str) -> dict[str, Any]:
    """What a node's journal keeps to reach it again: the target, and where on the node the
    journals are (a dry run keeps its journal inside its copy)."""
    if isinstance(target, SnapshotTarget):
        return target.to_json()
    return {**target.to_json(), "journal_dir": journal_dir}


def runner_for(site: Site, spec: NodeSpec, *, trust_new_hosts: bool, node_journal_dir: str,
               dry_run_root: Path, connector: Connector | None = None
               ) -> tuple[Runner, dict[str, Any]]:
    """The runner for one node of the site through a session from `connector` (`connect` by
    default), and the descriptor its journal keeps; a snapshot node gets a private copy under
    `dry_run_root`."""
    target = target_for(site, spec, trust_new_hosts=trust_new_hosts, dry_run_root=dry_run_root)
    runner = runner_for_session(target, (connector or connect)(target), node_journal_dir)
    return runner, descriptor(target, node_journal_dir)


def runner_from_journal(journal: NodeJournal, connector: Connector | None = None) -> Runner:
    """Reach the node a journal was written for, as the run reached it."""
    try:
        target = target_from_json(journal.node, journal.runner)
    except ValueError as error:
        raise Unreachable(str(error)) from None
    return runner_for_session(target, (connector or connect)(target),
                              journal.runner.get("journal_dir", DEFAULT_NODE_JOURNAL_DIR))


def apply_site(found: Discovery, report: Report, plan: SitePlan, store: JournalStore, *,
               node_journal_dir: str, dry_run_root: Path, dry_run: bool, holder: Holder | None,
               run_id: str | None = None, trust_new_hosts: bool = False, with_reboot: bool = False,
               progress: Callable[[str, str], None] | None = None,
               connector: Connector | None = None, break_lock: bool = False,
               checks: Sequence[Check], fixes: dict[str, FixRef]) -> ApplyReport:
    """Apply a discovery's plan the one way the CLI and the wizard both use: a runner per node
    with changes (a dry run, snapshot nodes, under `dry_run_root`), the engine's drift check,
    journal and steps under the site's lock the caller holds (`holder`; None for a dry run),
    then verification against the discovery and doctor's `report` of it by the registry's
    `checks` (`checks.ALL`;
    `fixes` is `fixes.BY_ID`); runners closed."""
    from strixwizard.fixing.engine import apply_plan, verify
    from strixwizard.fixing.journal import new_run_id

    run_id = run_id or new_run_id()
    site = found.site
    specs = {spec.name: spec for spec in site.nodes}
    runners: dict[str, Runner] = {}
    descriptors: dict[str, dict[str, Any]] = {}
    try:
        for name in [n for n in plan.nodes if any(p.steps for p in plan.for_node(n))]:
            spec = specs.get(name)
            if spec is None:  # this machine, run without a site file
                here = LocalTarget(name)
                runners[name] = runner_for_session(here, (connector or connect)(here), node_journal_dir)
                descriptors[name] = descriptor(here, node_journal_dir)
            else:
                runners[name], descriptors[name] = runner_for(
                    site, spec, trust_new_hosts=trust_new_hosts, node_journal_dir=node_journal_dir,
                    dry_run_root=dry_run_root / run_id, connector=connector)
        return apply_plan(plan, runners, store, site, descriptors, dry_run=dry_run, holder=holder,
                          with_reboot=with_reboot,
                          run_id=run_id, progress=progress, break_lock=break_lock,
                          verify_with=lambda after: verify(found, report, plan, after,
                                                          checks=checks, fixes=fixes))
    finally:
        for runner in runners.values():
            runner.close()

"""The engine calls the wizard makes, run inside Textual thread workers.

Each function is blocking and thread-safe, takes plain arguments, and returns
engine objects (plus the rows the screens show, read while still off the UI
thread). Errors stay exceptions here; the app turns them into a reason and a
next step on screen.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from strixwizard.engine import Node, Report, run_doctor
from strixwizard.site import Site, load_site
from strixwizard.targets import Progress, RunRequest, demo_site, resolve_run, site_nodes
from strixwizard.tui.views import NodePorts, all_ports

if TYPE_CHECKING:
    from strixwizard.fixing.engine import ApplyReport, RollbackReport
    from strixwizard.fixing.model import SitePlan

NODE_JOURNAL_DIR = "/var/lib/strixwizard/journal"  # the node's copy, as `strixwizard fix` keeps it


@dataclass(frozen=True)
class SiteSource:
    """Where the wizard's site comes from: the bundled demo or a site file."""

    site_file: Path | None = None
    demo: bool = False

    def request(self) -> RunRequest:
        return RunRequest(site_file=self.site_file, demo=self.demo)

    def load(self) -> Site:
        if self.demo:
            return demo_site()
        if self.site_file is None:
            raise ValueError("no site file")
        return load_site(self.site_file)


@dataclass(frozen=True)
class Discovery:
    site: Site
    nodes: list[Node]
    report: Report
    ports: list[NodePorts]
    plan: SitePlan | None = None  # what the fix engine would change; None if it could not plan
    plan_error: str | None = None


def plan_fixes(site: Site, nodes: list[Node]) -> tuple[SitePlan | None, str | None]:
    """The fix engine's plan (before → after) for every reachable node; pure, no change is made."""
    try:
        from strixwizard.fixing.planning import plan_site
    except ImportError as error:
        return None, f"the fix engine is not available in this version ({error})"
    facts = [n.facts for n in nodes if n.facts is not None]
    unreachable = {n.report.name: n.report.error or "unreachable" for n in nodes if n.facts is None}
    try:
        return plan_site(site, facts, unreachable=unreachable), None
    except Exception as error:  # a planning bug must not lose the discovery
        return None, f"planning the fixes failed: {error!r}; please report it with `strixwizard capture`"


def discover(source: SiteSource, progress: Progress | None) -> Discovery:
    """Probe every node of the site (SSH in parallel), run every check, read the port rows,
    and plan the fixes."""
    from checks import ALL
    from fixes import BY_ID

    site, nodes = resolve_run(source.request(), progress)
    report = run_doctor(site, nodes, ALL, BY_ID)
    plan, plan_error = plan_fixes(site, nodes)
    return Discovery(site, nodes, report, all_ports(nodes), plan, plan_error)


def test_ssh(site: Site, names: list[str], trust_new_hosts: bool, progress: Progress | None) -> list[Node]:
    """Collect the named nodes over SSH; `trust_new_hosts` only for the node the user confirmed."""
    specs = tuple(spec for spec in site.nodes if spec.name in names)
    return site_nodes(replace(site, nodes=specs), trust_new_hosts, progress)


@dataclass(frozen=True)
class Applied:
    report: ApplyReport
    dry_run_copies: Path | None  # where the changed snapshot copies are (dry run)


def apply_fixes(site: Site, nodes: list[Node], plan: SitePlan,
                progress: Callable[[str, str], None] | None) -> Applied:
    """Apply the plan with the fix engine: drift check, journal, steps, verification.

    Snapshot nodes (the demo) get a dry run on private copies of their snapshots;
    the same runner choice as `strixwizard fix` (`fixing.targets.runner_for`)."""
    from strixwizard.fixing.journal import JournalStore, new_run_id
    from strixwizard.fixing.targets import apply_site

    store = JournalStore()
    run_id = new_run_id()
    dry_root = store.root.parent / "dry-runs"
    report = apply_site(site, nodes, plan, store, node_journal_dir=NODE_JOURNAL_DIR,
                        dry_run_root=dry_root, run_id=run_id, progress=progress)
    return Applied(report, dry_root / run_id if report.dry_run else None)


def roll_back(run_id: str, progress: Callable[[str, str], None] | None) -> RollbackReport:
    """Restore every value a run changed, from its journals (the fix engine's rollback)."""
    from strixwizard.fixing.engine import rollback_run
    from strixwizard.fixing.journal import JournalStore
    from strixwizard.fixing.targets import runner_from_journal

    store = JournalStore()
    return rollback_run(store.load_run(run_id), runner_from_journal, store, progress)

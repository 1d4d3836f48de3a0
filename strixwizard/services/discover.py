"""Discover: reach every node of a site, run the checks, and plan the fixes.

`strixwizard doctor` and the wizard's Discover step both call `discover`; the
wizard's Site step calls `reach` to test SSH to some nodes (trusting exactly the
host keys the user confirmed).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from strixwizard.checking.engine import Report, run_doctor
from strixwizard.discovery import DiscoveredNode
from strixwizard.services.common import OnNode, node_progress
from strixwizard.services.nodes import RunRequest, demo_site, resolve_run, site_nodes
from strixwizard.site import Site, load_site

if TYPE_CHECKING:
    from strixwizard.checking.declare import Check
    from strixwizard.fixing.model import SitePlan
    from strixwizard.node.session import Connector


@dataclass(frozen=True)
class SiteSource:
    """Where a site comes from: the bundled demo or a site file."""

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
    """One discovery: the nodes as read, the checks' report, and the fix engine's plan."""

    site: Site
    nodes: list[DiscoveredNode]
    report: Report
    plan: SitePlan | None = None  # what the fix engine would change; None if it could not plan
    plan_error: str | None = None


def plan_fixes(site: Site, nodes: Sequence[DiscoveredNode]) -> tuple[SitePlan | None, str | None]:
    """The fix engine's plan for a discovery. A planning bug is returned as a reason, so the
    discovery is not lost."""
    from strixwizard.services.fix import plan

    try:
        return plan(site, nodes), None
    except Exception as error:
        return None, f"planning the fixes failed: {error!r}; please report it with `strixwizard capture`"


def read_nodes(request: RunRequest, on_node: OnNode | None = None,
               connector: Connector | None = None) -> tuple[Site, list[DiscoveredNode]]:
    """The site and its nodes (SSH nodes collected in parallel, each through a session from
    `connector`: SSH or this machine by default); progress per node."""
    return resolve_run(request, node_progress(on_node), connector)


def check(site: Site, nodes: Sequence[DiscoveredNode], checks: Sequence[Check] | None = None) -> Report:
    """Run the checks (all of them by default) on nodes already read."""
    from checks import ALL
    from fixes import BY_ID

    return run_doctor(site, nodes, ALL if checks is None else checks, BY_ID)


def discover(request: RunRequest, on_node: OnNode | None = None,
             checks: Sequence[Check] | None = None, plan: bool = True,
             connector: Connector | None = None) -> Discovery:
    """Read every node, run the checks, and (unless `plan` is false) plan the fixes."""
    site, nodes = read_nodes(request, on_node, connector)
    report = check(site, nodes, checks)
    fixes, plan_error = plan_fixes(site, nodes) if plan else (None, None)
    return Discovery(site, nodes, report, fixes, plan_error)


def reach(site: Site, names: Sequence[str], trusted: Mapping[str, str] | None = None,
          on_node: OnNode | None = None, connector: Connector | None = None,
          trust_new_hosts: bool = False) -> list[DiscoveredNode]:
    """Collect the named nodes over SSH. `trusted` (node → SHA256 fingerprint) accepts exactly
    the unknown host keys the user confirmed, and no other (`trust_new_hosts`: any new one)."""
    specs = tuple(spec for spec in site.nodes if spec.name in names)
    return site_nodes(replace(site, nodes=specs), trust_new_hosts, node_progress(on_node), trusted,
                      connector=connector)

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
from strixwizard.discovery import DiscoveredNode, Discovery
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
class Diagnosis:
    """One discovery and what the engines made of it: the checks' report and the fix engine's
    plan, both of this same discovery (its nodes, facts and topology)."""

    found: Discovery
    report: Report
    plan: SitePlan | None = None  # what the fix engine would change; None if it could not plan
    plan_error: str | None = None

    @property
    def site(self) -> Site:
        return self.found.site

    @property
    def nodes(self) -> tuple[DiscoveredNode, ...]:
        return self.found.nodes


def plan_fixes(found: Discovery) -> tuple[SitePlan | None, str | None]:
    """The fix engine's plan for a discovery. A planning bug is returned as a reason, so the
    discovery is not lost."""
    from strixwizard.services.fix import plan

    try:
        return plan(found), None
    except Exception as error:
        return None, f"planning the fixes failed: {error!r}; please report it with `strixwizard capture`"


def read_nodes(request: RunRequest, on_node: OnNode | None = None,
               connector: Connector | None = None) -> Discovery:
    """Read the site's nodes once (SSH nodes collected in parallel, each through a session
    from `connector`: SSH or this machine by default; progress per node): the one discovery
    the engines are then handed."""
    return Discovery.of(*resolve_run(request, node_progress(on_node), connector))


def check(found: Discovery, checks: Sequence[Check] | None = None) -> Report:
    """Run the checks (all of them by default) on a discovery."""
    from checks import ALL
    from fixes import BY_ID

    return run_doctor(found, ALL if checks is None else checks, BY_ID)


def discover(request: RunRequest, on_node: OnNode | None = None,
             checks: Sequence[Check] | None = None, plan: bool = True,
             connector: Connector | None = None) -> Diagnosis:
    """Read every node, run the checks, and (unless `plan` is false) plan the fixes."""
    found = read_nodes(request, on_node, connector)
    report = check(found, checks)
    fixes, plan_error = plan_fixes(found) if plan else (None, None)
    return Diagnosis(found, report, fixes, plan_error)


def reach(site: Site, names: Sequence[str], trusted: Mapping[str, str] | None = None,
          on_node: OnNode | None = None, connector: Connector | None = None,
          trust_new_hosts: bool = False) -> list[DiscoveredNode]:
    """Collect the named nodes over SSH. `trusted` (node → SHA256 fingerprint) accepts exactly
    the unknown host keys the user confirmed, and no other (`trust_new_hosts`: any new one)."""
    specs = tuple(spec for spec in site.nodes if spec.name in names)
    return site_nodes(replace(site, nodes=specs), trust_new_hosts, node_progress(on_node), trusted,
                      connector=connector)

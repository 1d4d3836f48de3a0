"""What one discovery found: the site, each node with how it was reached and its facts, and
the fabric between the reachable ones.

The services build one `Discovery` per reading of the nodes (`services/discover.py`
`read_nodes`) and hand it to the check, fix, deploy and measurement engines, so the
topology of one discovery is worked out once, the first time an engine asks for it. A new
reading of the nodes (after a fix, say) is a new `Discovery`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property

from strixwizard.facts import NodeFacts
from strixwizard.model import HostReport
from strixwizard.probe import Probe
from strixwizard.site import Site
from strixwizard.topology import Topology, build_topology


@dataclass
class DiscoveredNode:
    """A node of a discovery: how it was reached (its report entry: address, source, or why
    it could not be) and, when it was, its facts."""

    report: HostReport
    facts: NodeFacts | None

    @property
    def name(self) -> str:
        return self.report.name


def reached_node(name: str, probe: Probe, address: str, source: str) -> DiscoveredNode:
    """A node whose facts were read through `probe` (a session's, or a snapshot's)."""
    return DiscoveredNode(HostReport(name=name, address=address, source=source, reachable=True),
                          NodeFacts(name, probe))


def replayed(site: Site, names: Iterable[str]) -> bool:
    """Whether a run on these nodes is a dry run: each is a snapshot in the site file, so a
    change is made on a private copy of it. The one rule for it, for fix and deploy alike."""
    specs = {spec.name: spec for spec in site.nodes}
    return all(specs.get(name) is not None and specs[name].snapshot is not None for name in names)


@dataclass(frozen=True)
class Discovery:
    """The site and its nodes as one discovery read them; `topology` is built on first use."""

    site: Site
    nodes: tuple[DiscoveredNode, ...]

    @classmethod
    def of(cls, site: Site, nodes: Iterable[DiscoveredNode]) -> Discovery:
        return cls(site, tuple(nodes))

    @classmethod
    def of_facts(cls, site: Site, facts: Iterable[NodeFacts], source: str = "facts") -> Discovery:
        """A discovery of facts already read (a fix's re-probe, a test's fixture)."""
        return cls(site, tuple(DiscoveredNode(HostReport(f.name, f.name, source, True), f)
                               for f in facts))

    @property
    def facts(self) -> list[NodeFacts]:
        """The reachable nodes' facts, in the nodes' order."""
        return [n.facts for n in self.nodes if n.facts is not None]

    @property
    def facts_by_name(self) -> dict[str, NodeFacts]:
        return {n.name: n.facts for n in self.nodes if n.facts is not None}

    @property
    def unreachable(self) -> dict[str, str]:
        """Each node that could not be read, with why."""
        return {n.name: n.report.error or "unreachable" for n in self.nodes if n.facts is None}

    @property
    def dry_run(self) -> bool:
        """Every node read is a snapshot (`replayed`): applying changes copies only."""
        return replayed(self.site, [n.name for n in self.nodes if n.facts is not None])

    @cached_property
    def topology(self) -> Topology:
        """The fabric of the reachable nodes (`topology.build_topology`), built once."""
        return build_topology(self.facts, self.site)

"""What a fix's plan function gets: the site's wanted state, every node's facts, the links."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from strixwizard.facts import NodeFacts
from strixwizard.fixing.model import Plan
from strixwizard.model import FixRef
from strixwizard.site import Site
from strixwizard.topology import FabricPort, Link, Topology


@dataclass(frozen=True)
class PlanContext:
    """What a fix plans from: the site, the nodes' facts, the topology, and the user's choices."""

    site: Site
    nodes: tuple[NodeFacts, ...]
    topology: Topology
    persist: bool = True  # also plan how each change survives a reboot
    #: fix ids the user named (`--only`): such a fix may also plan what no check can judge
    #: (e.g. create an rdma_cm directory whose values a read-only probe cannot see)
    asked: frozenset[str] = frozenset()

    def link_of(self, port: FabricPort) -> Link | None:
        """The link this interface is an end of (None for an interface with no peer)."""
        for link in self.topology.links:
            for end in link.ends:
                if end.node.name == port.node.name and end.netdev.name == port.netdev.name:
                    return link
        return None


PlanFn = Callable[[PlanContext], Iterable[Plan]]


@dataclass(frozen=True)
class Fix:
    """A registered fix: its metadata (what checks show) and the function that plans it."""

    ref: FixRef
    plan: PlanFn
    automated: bool = True  # False: plans carry instructions only, never steps

    @property
    def id(self) -> str:
        return self.ref.id

"""What to measure between two nodes, taken from their facts and the site file. Pure.

The RDMA device, port, GID index and MTU come from the link the topology
found between the two nodes (sysfs and `ibv_devinfo` on each end); nothing is
guessed. The TCP baseline goes over the same fabric link, to the far end's
fabric address; only when the nodes share no fabric link does it fall back to
the management address, and the result says so.
"""

from __future__ import annotations

from dataclasses import dataclass

from strixwizard.discovery import Discovery
from strixwizard.topology import SOFT_RDMA_KINDS, FabricPort, Link


@dataclass(frozen=True)
class RdmaEnd:
    """One end of an RDMA link, as the perftest/verbs runners need it."""

    node: str
    device: str
    port: int
    gid_index: int | None  # None on InfiniBand (LID routed): perftest then takes no -x
    mtu: int | None  # the port's active MTU (256..4096); None = let the tool use the port's own
    address: str | None  # IPv4 of the end's netdev, for the out-of-band exchange
    netdev: str | None
    rate_gbps: float | None
    link_layer: str | None
    pcie_gbps: float | None = None  # usable PCIe bandwidth of the end's NIC as trained

    @property
    def label(self) -> str:
        gid = f" gid {self.gid_index}" if self.gid_index is not None else ""
        mtu = f" mtu {self.mtu}" if self.mtu else ""
        return f"{self.node}:{self.device}:{self.port}{gid}{mtu}"


@dataclass(frozen=True)
class PairPlan:
    a: str  # client side
    b: str  # server side
    a_host: str  # management address (SSH)
    b_host: str
    tcp_address: str  # where the TCP baseline's server listens (on b)
    tcp_path: str  # "node0:fab0 -> node1:fab0 10.99.3.2"
    over_fabric: bool
    rdma: tuple[RdmaEnd, RdmaEnd] | None
    rdma_why_not: str = ""
    transport: str | None = None  # the link's: roce-v2, infiniband, ethernet...
    software_rdma: bool = False  # rxe/siw ends, opted in with the site's allow_soft_rdma

    @property
    def pair(self) -> tuple[str, str]:
        return (self.a, self.b)

    @property
    def link_rate_gbps(self) -> float | None:
        if self.rdma is None:
            return None
        rates = [e.rate_gbps for e in self.rdma if e.rate_gbps]
        return min(rates) if rates else None

    @property
    def pcie_gbps(self) -> float | None:
        """The narrower end's usable PCIe bandwidth (None when not captured)."""
        if self.rdma is None:
            return None
        links = [e.pcie_gbps for e in self.rdma if e.pcie_gbps]
        return min(links) if links else None


def rdma_end(end: FabricPort) -> RdmaEnd | None:
    port = end.port
    if port is None:
        return None
    gid = port.roce_v2_ipv4_gid(end.netdev.name) if port.is_ethernet else None
    address = end.ipv4.address if end.ipv4 else None
    nic = end.node.nic_of(end.netdev)
    return RdmaEnd(
        node=end.node.name, device=port.device, port=port.number,
        gid_index=gid.index if gid else None, mtu=port.active_mtu, address=address,
        netdev=end.netdev.name, rate_gbps=port.rate_gbps, link_layer=port.link_layer,
        pcie_gbps=nic.pcie.gbps if nic is not None and nic.pcie is not None else None,
    )


def _best_link(links: list[Link]) -> Link | None:
    rdma = [link for link in links if link.rdma]
    ordered = rdma or links
    return ordered[0] if ordered else None


def _oriented(link: Link, a: str) -> tuple[FabricPort, FabricPort]:
    return (link.a, link.b) if link.a.node.name == a else (link.b, link.a)


def plan_pair(found: Discovery, a: str, b: str) -> PairPlan:
    """The plan for pair (a, b) of a discovery: `a` runs the clients, `b` the servers."""
    site, facts = found.site, found.facts_by_name
    specs = {spec.name: spec for spec in site.nodes}
    a_host = (specs[a].host if a in specs else None) or a
    b_host = (specs[b].host if b in specs else None) or b
    known = [facts[name] for name in (a, b) if name in facts]
    link = _best_link(found.topology.links_from(a, b)) if len(known) == 2 else None
    if link is None:
        reason = ("no facts for both nodes" if len(known) < 2
                  else f"no fabric link found between {a} and {b} (no interfaces in a shared subnet)")
        return PairPlan(a, b, a_host, b_host, tcp_address=b_host,
                        tcp_path=f"{a} -> {b} {b_host} (management network: {reason})",
                        over_fabric=False, rdma=None, rdma_why_not=reason)
    end_a, end_b = _oriented(link, a)
    address = end_b.ipv4.address if end_b.ipv4 else b_host
    path = f"{end_a.label} -> {end_b.label} {address}"
    rdma = None
    why = ""
    if link.rdma:
        ra, rb = rdma_end(end_a), rdma_end(end_b)
        if ra is not None and rb is not None:
            rdma = (ra, rb)
        else:
            why = "the link's RDMA port could not be read on both ends"
    else:
        why = f"the link {link.id} is {link.transport}: no hardware RDMA on both ends"
    soft = link.rdma and bool({e.device.kind for e in link.ends if e.device} & SOFT_RDMA_KINDS)
    return PairPlan(a, b, a_host, b_host, tcp_address=address, tcp_path=path,
                    over_fabric=end_b.ipv4 is not None, rdma=rdma, rdma_why_not=why,
                    transport=link.transport, software_rdma=soft)

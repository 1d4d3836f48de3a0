"""Which interfaces form the fabric, and how they pair into links between nodes.

A *fabric interface* is a netdev that could carry the cluster's traffic: one
with an RDMA port on it, one on an RDMA-capable NIC (E810, ConnectX), an
InfiniBand (IPoIB) or Thunderbolt (thunderbolt-net) interface, or the one
holding a node's `fabric_address` from site.yaml. The onboard management NIC
is none of these and stays out of the links.

Two fabric interfaces on different nodes form a *link* when their IPv4
addresses sit in the same subnet (a back-to-back cable or a switch). Each link
gets a transport: `roce-v2`, `roce-v1`, `infiniband`, `iwarp` (hardware RDMA on
both ends), `link-layer-mismatch` (an InfiniBand end cabled to an Ethernet one: nothing
passes), `thunderbolt-net` (TCP only, whatever soft verbs ride on it), or
`ethernet` (at least one end without hardware RDMA).

Which programs can use a link follows from its transport, once (`STACKS`): RCCL/NCCL
(NET/IB) and llama.cpp's RDMA transport connect their own RC queue pairs to a peer's
GID, which RoCE v2 and InfiniBand give and iWARP does not: an iWARP RC queue pair is
connected through rdma_cm only (UCX's maintainers on its missing iWARP support:
"bootstrap RC transport over rdma_cm", https://github.com/openucx/ucx/issues/2507;
perftest needs `-R` on irdma/cxgb4 iWARP ports; llama.cpp's RDMA probe finds no
IP-mapped GID on iWARP and RPC silently stays on TCP, an rdma_cm path being proposed in
https://github.com/ggml-org/llama.cpp/pull/28494, not released). perftest's default
exchange is the same GID-addressed one. `Link.rdma` is true when those verbs stacks
can run over the link; `link.transport`, `site.rdma_path`, the report's `links[]` and
`deploy` all read it from here.

A discovery's topology is built once (`discovery.Discovery.topology`) and handed to the
check, fix, deploy and measurement engines; this module keeps no state between calls.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Collection
from dataclasses import dataclass, field, replace
from typing import Any

from strixwizard.facts import NodeFacts
from strixwizard.facts.netdev import IpAddress, Netdev
from strixwizard.facts.rdma import RdmaDevice, RdmaPort
from strixwizard.model import LINK_ID_JOIN, LinkEnd
from strixwizard.site import Site

#: RDMA device kinds a site may opt in to as its fabric's RDMA (`allow_soft_rdma`)
SOFT_RDMA_KINDS = frozenset({"rxe", "siw"})
SOFT_RDMA_LABEL = "software RDMA: tests the setup and the tool, not production speed"
MISMATCH = "link-layer-mismatch"
TRANSPORTS = ("roce-v2", "roce-v1", "infiniband", "iwarp", MISMATCH, "thunderbolt-net", "ethernet")
#: transports with RDMA in NIC hardware on both ends (whether a given stack can use it: STACKS)
RDMA_TRANSPORTS = frozenset({"roce-v2", "roce-v1", "infiniband", "iwarp"})

#: The stacks strixwizard deploys, tests or names, by the key `Link.stacks` holds.
RCCL = "rccl"  # RCCL/NCCL NET/IB: RC QPs to the peer's GID (NCCL_IB_GID_INDEX)
LLAMA_RDMA = "llama-rdma"  # llama.cpp ggml-rpc's RDMA transport: RC QPs to the peer's GID
PERFTEST = "perftest"  # ib_write_lat/bw with their default (non rdma_cm) connection exchange
RDMA_CM = "rdma_cm"  # programs that connect through librdmacm (rping, perftest -R, NFS/iSER)
STACK_NAMES = {RCCL: "RCCL/NCCL", LLAMA_RDMA: "llama.cpp RDMA", PERFTEST: "perftest",
               RDMA_CM: "rdma_cm programs"}
#: The verbs stacks that address a peer by GID over RC QPs they connect themselves.
VERBS_STACKS = frozenset({RCCL, LLAMA_RDMA, PERFTEST})
STACKS: dict[str, frozenset[str]] = {
    "roce-v2": VERBS_STACKS | {RDMA_CM},
    "infiniband": VERBS_STACKS | {RDMA_CM},
    # strixwizard's RCCL and llama.cpp environments address peers by their IPv4-mapped RoCE v2
    # GID; RoCE v1 (one L2 segment, deprecated) still carries perftest and rdma_cm
    "roce-v1": frozenset({PERFTEST, RDMA_CM}),
    "iwarp": frozenset({RDMA_CM}),
    MISMATCH: frozenset(),
    "thunderbolt-net": frozenset(),
    "ethernet": frozenset(),
}


def stack_names(stacks: frozenset[str]) -> str:
    """ "RCCL/NCCL, llama.cpp RDMA, perftest" (in STACK_NAMES order), or "none"."""
    return ", ".join(name for key, name in STACK_NAMES.items() if key in stacks) or "none"


@dataclass(frozen=True)
class FabricPort:
    """A netdev of a node that belongs to the fabric, with its hardware RDMA port if any."""

    node: NodeFacts
    netdev: Netdev
    port: RdmaPort | None
    device: RdmaDevice | None

    @property
    def label(self) -> str:
        return f"{self.node.name}:{self.netdev.name}"

    @property
    def ipv4(self) -> IpAddress | None:
        return self.netdev.ipv4[0] if self.netdev.ipv4 else None


def hardware_port(node: NodeFacts, netdev: str, allow_soft: bool = False
                  ) -> tuple[RdmaPort | None, RdmaDevice | None]:
    """The netdev's hardware RDMA port; with `allow_soft`, an rxe/siw port counts as well."""
    for port in node.ports_on(netdev):
        device = node.rdma_device(port.device)
        if device is not None and (device.is_hardware or (allow_soft and device.kind in SOFT_RDMA_KINDS)):
            return port, device
    return None, None


def fabric_ports(node: NodeFacts, site: Site | None = None) -> tuple[FabricPort, ...]:
    """The node's fabric interfaces (see the module docstring), in name order."""
    wanted = {
        spec.fabric_address for spec in (site.nodes if site else ())
        if spec.name == node.name and spec.fabric_address
    }
    found = []
    for netdev in node.netdevs:
        port, device = hardware_port(node, netdev.name, site is not None and site.allow_soft_rdma)
        nic = node.nic_of(netdev)
        addresses = {a.address for a in netdev.ipv4}
        if (
            port is not None
            or (nic is not None and nic.rdma_capable)
            or netdev.is_thunderbolt
            or netdev.is_infiniband
            or addresses & wanted
        ):
            found.append(FabricPort(node, netdev, port, device))
    return tuple(found)


def in_use(fabric: FabricPort) -> bool:
    """An interface is in use when it has an IPv4 address, or when addresses are unknown."""
    return fabric.netdev.addresses is None or bool(fabric.netdev.ipv4)


@dataclass(frozen=True)
class Link:
    """A link between two nodes' fabric ports, its transport, and the evidence for it."""

    a: FabricPort
    b: FabricPort
    transport: str
    rdma: bool
    evidence: str

    @property
    def id(self) -> str:
        return f"{self.a.label}{LINK_ID_JOIN}{self.b.label}"

    @property
    def ends(self) -> tuple[FabricPort, FabricPort]:
        return self.a, self.b

    @property
    def hosts(self) -> frozenset[str]:
        return frozenset({self.a.node.name, self.b.node.name})

    @property
    def stacks(self) -> frozenset[str]:
        """The stacks that can use this link (keys of STACK_NAMES)."""
        return STACKS.get(self.transport, frozenset())

    def carries(self, stack: str) -> bool:
        return stack in self.stacks


def _network(address: IpAddress) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
    return ipaddress.ip_interface(address.cidr).network


def _roce_version(end: FabricPort) -> str | None:
    if end.port is None:
        return None
    if end.port.roce_v2_ipv4_gid(end.netdev.name):
        return "roce-v2"
    types = {(g.type or "").lower() for g in end.port.gids}
    if "roce v2" in types:
        return "roce-v2"
    if "ib/roce v1" in types:
        return "roce-v1"
    return None


def link_layer(end: FabricPort) -> str:
    """ "InfiniBand" or "Ethernet": the RDMA port's link layer, else the netdev's type."""
    if end.port is not None and end.port.link_layer:
        return "Ethernet" if end.port.is_ethernet else "InfiniBand"
    return "InfiniBand" if end.netdev.is_infiniband else "Ethernet"


def transport_of(a: FabricPort, b: FabricPort) -> str:
    """The transport of a link between two fabric interfaces (see the module docstring)."""
    if a.netdev.is_thunderbolt or b.netdev.is_thunderbolt:
        return "thunderbolt-net"
    if link_layer(a) != link_layer(b):
        return MISMATCH
    if a.port is None or b.port is None or a.device is None or b.device is None:
        return "ethernet"
    if not a.port.is_ethernet and not b.port.is_ethernet:
        return "infiniband"
    if a.device.is_iwarp or b.device.is_iwarp:
        return "iwarp"
    versions = {_roce_version(a), _roce_version(b)}
    if versions == {"roce-v1"}:
        return "roce-v1"
    return "roce-v2"


def classify(a: FabricPort, b: FabricPort) -> tuple[str, bool]:
    """The transport of a link and whether the verbs stacks (RCCL/NCCL, llama.cpp RDMA,
    perftest) can run over it: iWARP and a link-layer mismatch cannot."""
    transport = transport_of(a, b)
    return transport, bool(STACKS[transport] & VERBS_STACKS)


@dataclass
class Topology:
    """The nodes, the links found between them, and each node's fabric ports."""

    nodes: list[NodeFacts]
    links: list[Link] = field(default_factory=list)
    fabric: dict[str, tuple[FabricPort, ...]] = field(default_factory=dict)

    def links_between(self, x: str, y: str) -> list[Link]:
        return [link for link in self.links if link.hosts == {x, y}]

    def addresses_known(self, node: str) -> bool:
        return all(p.netdev.addresses is not None for p in self.fabric.get(node, ()))

    def links_from(self, a: str, b: str) -> list[Link]:
        """The links between `a` and `b` with `a`'s end first, in the order of `a`'s fabric
        ports, then `b`'s (as the topology of `a` and `b` alone lists them)."""
        ports_a, ports_b = self.fabric.get(a, ()), self.fabric.get(b, ())
        oriented = [link if link.a.node.name == a else replace(link, a=link.b, b=link.a)
                    for link in self.links_between(a, b)]
        return sorted(oriented, key=lambda link: (ports_a.index(link.a), ports_b.index(link.b)))

    def among(self, names: Collection[str]) -> Topology:
        """The topology of the named nodes alone: the same links and ports, in the same order,
        as building it from their facts would give."""
        return Topology(nodes=[n for n in self.nodes if n.name in names],
                        links=[link for link in self.links if link.hosts <= set(names)],
                        fabric={n: ports for n, ports in self.fabric.items() if n in names})


def build_topology(nodes: list[NodeFacts], site: Site | None = None) -> Topology:
    """The fabric of these nodes. Each discovery builds it once (`discovery.Discovery.topology`)
    and hands it to the engines; a new set of facts is a new discovery."""
    return _build(tuple(nodes), site)


def _build(nodes: tuple[NodeFacts, ...], site: Site | None) -> Topology:
    topology = Topology(nodes=list(nodes))
    for node in nodes:
        topology.fabric[node.name] = fabric_ports(node, site)
    for i, first in enumerate(nodes):
        for second in nodes[i + 1:]:
            for a in topology.fabric[first.name]:
                for b in topology.fabric[second.name]:
                    evidence = _same_subnet(a, b)
                    if evidence:
                        transport, rdma = classify(a, b)
                        kinds = {end.device.kind for end in (a, b) if end.device is not None}
                        if rdma and kinds & SOFT_RDMA_KINDS:
                            evidence = f"{evidence}; {SOFT_RDMA_LABEL}"
                        topology.links.append(Link(a, b, transport, rdma, evidence))
    return topology


def _same_subnet(a: FabricPort, b: FabricPort) -> str | None:
    for x in a.netdev.ipv4:
        for y in b.netdev.ipv4:
            if x.address != y.address and _network(x) == _network(y):
                return f"same subnet {_network(x)}"
    return None


def link_end(end: FabricPort) -> LinkEnd:
    """One end of a link as the report keeps it (typed; `to_json()` is the doctor schema's)."""
    gid = end.port.roce_v2_ipv4_gid(end.netdev.name) if end.port else None
    nic = end.node.nic_of(end.netdev)
    return LinkEnd(
        host=end.node.name,
        netdev=end.netdev.name,
        address=end.ipv4.cidr if end.ipv4 else None,
        rdma_device=end.port.device if end.port else None,
        port=end.port.number if end.port else None,
        gid_index=gid.index if gid else None,
        mtu=end.netdev.mtu,
        speed_mbps=end.netdev.speed_mbps,
        active_mtu=end.port.active_mtu if end.port else None,
        link_layer=end.port.link_layer if end.port else None,
        pci_address=end.netdev.pci_address,
        nic=nic.model if nic else None,
        bus=end.netdev.bus,
    )


def end_json(end: FabricPort) -> dict[str, Any]:
    return link_end(end).to_json()

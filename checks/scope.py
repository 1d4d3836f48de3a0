"""What checks run over and what they require, declared once (see `strixwizard.checking.declare`).

`Each` values pick the items a per-item check judges on a node (RoCE ports,
RDMA NICs...) with the skip reason for a node that has none; `Requires` values
are preconditions. Fixes use the same selections, so a check and its fix look
at the same ports.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from strixwizard.checking.declare import Each, Requires
from strixwizard.facts import NodeFacts
from strixwizard.facts.nic import Nic
from strixwizard.facts.rdma import RdmaDevice, RdmaPort
from strixwizard.site import Site
from strixwizard.topology import FabricPort, Link, fabric_ports, in_use
from strixwizard.vendors import GENERIC, Vendor

T = TypeVar("T")


def vendor_of(port: FabricPort) -> Vendor:
    """The NIC family behind a fabric interface (GENERIC when it is not a known NIC)."""
    nic = port.node.nic_of(port.netdev)
    return nic.vendor if nic is not None else GENERIC


def rdma_ports(node: NodeFacts, site: Site) -> list[FabricPort]:
    """Fabric netdevs with a hardware RDMA port on them."""
    return [f for f in fabric_ports(node, site) if f.port is not None]


@dataclass(frozen=True)
class HardwarePort:
    """A fabric netdev with its hardware RDMA port and device, never missing: what the
    rdma.* checks judge, one at a time."""

    fabric: FabricPort
    port: RdmaPort
    device: RdmaDevice

    @property
    def netdev(self) -> str:
        return self.fabric.netdev.name

    @property
    def entity(self) -> str:
        """"node:device/port (netdev)", how the rdma.* checks name what they judge."""
        return f"{self.fabric.node.name}:{self.port.name} ({self.netdev})"


def hardware_ports(keep: Callable[[HardwarePort], bool], none: str) -> Each[HardwarePort]:
    """The node's hardware RDMA ports on the fabric that `keep` accepts."""
    def select(node: NodeFacts, site: Site) -> list[HardwarePort]:
        found = [HardwarePort(f, f.port, f.device) for f in rdma_ports(node, site)
                 if f.port is not None and f.device is not None]
        return [p for p in found if keep(p)]

    return Each(select, none)


def roce_fabric(node: NodeFacts, site: Site) -> list[FabricPort]:
    """Fabric netdevs in use with a hardware RoCE port on them."""
    return [
        f for f in rdma_ports(node, site)
        if f.port is not None and f.port.is_ethernet and f.device is not None
        and not f.device.is_iwarp and in_use(f)
    ]


def rdma_nics(node: NodeFacts, site: Site | None = None) -> list[Nic]:
    return [nic for nic in node.nics if nic.rdma_capable]


ROCE_INTERFACES = Each(roce_fabric, "no RoCE interface in use on this node")
RDMA_PORTS = hardware_ports(lambda p: True, "no hardware RDMA port on this node")
ROCE_PORTS = hardware_ports(lambda p: p.port.is_ethernet, "no RoCE port on this node")
RDMA_PORTS_IN_USE = hardware_ports(lambda p: in_use(p.fabric), "no RDMA port in use on this node")
ROCE_PORTS_IN_USE = hardware_ports(lambda p: p.port.is_ethernet and not p.device.is_iwarp
                                   and in_use(p.fabric), "no RoCE port in use on this node")
RDMA_NICS = Each(rdma_nics, "no RDMA-capable NIC on this node")

# Vendor rules: the ports and NICs a family-specific rule applies to. The skip reasons name
# E810, the one family that declares these rules today (scripts read the reasons).
FW_LLDP_INTERFACES = Each(lambda node, site: [f for f in roce_fabric(node, site)
                                              if vendor_of(f).qos.fw_lldp_flag],
                          "no E810 RoCE interface in use on this node")
PFC_TC_LIMITED_PORTS = Each(lambda node, site: [f for f in rdma_ports(node, site)
                                                if vendor_of(f).qos.max_pfc_tcs is not None],
                            "no E810 RDMA interface on this node")
ROCE_SWITCH_NICS = Each(lambda node, site: [n for n in node.nics if n.vendor.roce_switch],
                        "no Intel E810 on this node")

PCI_CAPTURED: Requires[NodeFacts] = Requires(lambda node: bool(node.pci),
                                             "PCI devices were not captured")
STRIX_HALO: Requires[NodeFacts] = Requires(
    lambda node: node.cpu is None or node.cpu.is_strix_halo, "not a Strix Halo node")
ROCE_LINK: Requires[Link] = Requires(lambda link: link.transport in ("roce-v2", "roce-v1"),
                                     lambda link: f"not a RoCE link ({link.transport})",
                                     "not a RoCE link")


def captured(fact: Callable[[NodeFacts], T | None], missing: str) -> Each[T]:
    """One fact as the single item a check judges; a node where it was not captured skips."""
    def select(node: NodeFacts, site: Site) -> list[T]:
        value = fact(node)
        return [] if value is None else [value]

    return Each(select, missing)


CPU_CAPTURED = captured(lambda node: node.cpu, "CPU information (/proc/cpuinfo) was not captured")
IOMMU_CAPTURED = captured(lambda node: node.iommu,
                          "the kernel command line (/proc/cmdline) was not captured")
MEMLOCK_CAPTURED = captured(lambda node: node.memlock, "/proc/self/limits was not captured")

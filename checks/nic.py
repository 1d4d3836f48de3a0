"""NICs and RDMA devices: is there real RDMA hardware, with the right driver, on a wide enough link."""

from __future__ import annotations

from collections.abc import Iterator

from checks.scope import PCI_CAPTURED, RDMA_NICS, rdma_nics
from strixwizard.checking.declare import failed, node_check, passed, skipped, verdict, warned
from strixwizard.facts import NodeFacts
from strixwizard.facts.ethtool import driver_info_argv
from strixwizard.facts.nic import PCIE_RDMA_EFFICIENCY, Nic, PcieTunnel, lane_gbps
from strixwizard.model import Finding
from strixwizard.site import Site
from strixwizard.vendors import rdma_nic_families


@node_check("nic.rdma_capable", requires=(PCI_CAPTURED,))
def rdma_capable(node: NodeFacts, site: Site) -> Iterator[Finding]:
    """Passes when a hardware RDMA device exists (irdma, mlx5_ib, mlx4_ib...); soft devices do not count."""
    hardware = [d for d in node.rdma if d.is_hardware]
    soft = [d for d in node.rdma if not d.is_hardware]
    capable = rdma_nics(node)
    if hardware:
        names = ", ".join(f"{d.name} ({d.driver})" for d in hardware)
        yield passed(node.name, observed=names, expected="a hardware RDMA device")
    elif capable:
        nic = capable[0]
        rdma_driver = nic.vendor.rdma_driver
        yield failed(
            f"{node.name}/{nic.address}", observed=f"{nic.model}, no RDMA device",
            expected=f"{rdma_driver} loaded, a device in /sys/class/infiniband",
            detail=f"Load {rdma_driver} (`modprobe {rdma_driver}`, rdma-core installed) so the NIC "
            "exposes RDMA verbs.",
        )
    else:
        extra = f"; only software/experimental devices: {', '.join(d.name for d in soft)}" if soft else ""
        yield failed(
            node.name, observed="no RDMA-capable NIC" + extra,
            expected=" or ".join(f"{v.name} ({v.rdma_driver})" for v in rdma_nic_families()),
            detail="Add an RDMA NIC (E810-CQDA1, ConnectX-4 Lx or newer, ConnectX-3 for "
            "InfiniBand); USB4/thunderbolt-net and soft-RoCE are not hardware RDMA.",
            fixable=False,  # no driver to load: the hardware is missing
        )


def _version(text: str) -> tuple[int, ...] | None:
    head = text.split()[0] if text.split() else ""
    parts = head.split(".")
    return tuple(int(p) for p in parts) if all(p.isdigit() for p in parts) and parts else None


@node_check("nic.driver", per=RDMA_NICS)
def nic_driver(node: NodeFacts, site: Site, nic: Nic) -> Iterator[Finding]:
    """Expects ice (E810), mlx5_core (ConnectX-4+), mlx4_core (ConnectX-3); firmware from ethtool -i."""
    entity = f"{node.name}/{nic.address}"
    expected = f"driver {nic.expected_driver}, firmware reported"
    if nic.pci.driver != nic.expected_driver:
        yield failed(entity, observed=f"{nic.model}: driver {nic.pci.driver or 'none'}",
                     expected=expected,
                     detail=f"Bind {nic.expected_driver} to the NIC (is the module installed "
                     "and not blacklisted?).")
        return
    if nic.driver_info is None:
        reason = (node.why_unknown(driver_info_argv(nic.netdevs[0])) if nic.netdevs
                  else "the NIC has no netdev")
        yield skipped(entity, f"firmware unknown: {reason}")
        return
    firmware = nic.firmware or "?"
    observed = f"{nic.model}: {nic.pci.driver}, firmware {firmware}"
    version = _version(firmware)
    rule = nic.vendor.firmware
    if rule is not None and version is not None and version[:len(rule.minimum)] < rule.minimum:
        yield warned(entity, observed=observed, expected=rule.expected, detail=rule.advice)
    else:
        yield passed(entity, observed=observed, expected=expected)


def _port_gbps(node: NodeFacts, nic: Nic) -> tuple[float | None, str]:
    speeds = [d.speed_mbps for d in node.netdevs if d.name in nic.netdevs and d.speed_mbps]
    if speeds:
        return max(speeds) / 1000, "link speed"
    rates = [p.rate_gbps for d in node.rdma if d.pci_address == nic.address for p in d.ports
             if p.rate_gbps]
    if rates:
        return max(rates), "port rate"
    if nic.nominal_gbps:
        return float(nic.nominal_gbps), "nominal speed"
    return None, ""


#: The PCIe a USB4/Thunderbolt link tunnels: Thunderbolt 3, Thunderbolt 4 and USB4 40 Gb/s carry
#: PCIe 3.0 x4 (Thunderbolt 4 requires the full 32 Gb/s of it, Thunderbolt 3 only 16), Thunderbolt
#: 5 / USB4 v2 (80 Gb/s) PCIe 4.0 x4
#: (https://en.wikipedia.org/wiki/Thunderbolt_(interface); Thunderbolt 4's 32 Gb/s PCIe
#: requirement: https://www.purplelec.com/info-detail/thunderbolt-4-certification).
def tunnel_pcie_gbps(usb4_gbps: float | None) -> float:
    return lane_gbps(16.0) * 4 if usb4_gbps is not None and usb4_gbps > 40 else lane_gbps(8.0) * 4


def _tunnel(node: NodeFacts, tunnel: PcieTunnel) -> tuple[float, str]:
    """The tunnel's ceiling in Gb/s and its description: the PCIe it carries, and the USB4 link
    it shares (the slowest connected USB4 device when there are several: sysfs does not say
    which router holds which PCIe tunnel)."""
    devices = [p for p in node.usb4.peers if p.kind == "device" and p.link_gbps]
    where = f"host port {tunnel.host_port or '?'} -> enclosure port {tunnel.enclosure_port}"
    if not devices:
        pcie = tunnel_pcie_gbps(None)
        return pcie, (f"behind a USB4/Thunderbolt PCIe tunnel ({where}; USB4 link rate not "
                      f"read): at most {pcie:.0f} Gb/s of PCIe")
    slowest = min(devices, key=lambda p: p.link_gbps or 0.0)
    usb4 = float(slowest.link_gbps or 0.0)
    pcie = tunnel_pcie_gbps(usb4)
    which = "one of the USB4 devices, " if len(devices) > 1 else ""
    name = " ".join(x for x in (slowest.vendor_name, slowest.device_name) if x) or slowest.name
    lanes = f"{slowest.rx_lanes} x {slowest.rx_speed_gbps:g} Gb/s = " if slowest.rx_lanes else ""
    return min(usb4, pcie), (f"behind a USB4/Thunderbolt PCIe tunnel ({where}; {which}{name} "
                             f"[{slowest.name}], USB4 link {lanes}{usb4:g} Gb/s): at most "
                             f"{min(usb4, pcie):.0f} Gb/s of PCIe")


@node_check("nic.pcie_link", per=RDMA_NICS)
def pcie_link(node: NodeFacts, site: Site, nic: Nic) -> Iterator[Finding]:
    """Compares usable PCIe bandwidth (trained speed x width) with the port speed; notes downgrades.
    Behind a USB4/Thunderbolt PCIe tunnel, the tunnel's ceiling counts too, and is named."""
    entity = f"{node.name}/{nic.address}"
    link = nic.pcie
    if link is None or link.gbps is None:
        yield skipped(entity, "PCIe link speed/width not captured")
        return
    port, what = _port_gbps(node, nic)
    observed = f"{nic.model}: PCIe {link.describe()} = {link.gbps:.0f} Gb/s"
    ceiling, cure = link.gbps, "Move the card to a wider/faster slot if the board has one."
    if nic.tunnel is not None:
        tunnel_gbps, named = _tunnel(node, nic.tunnel)
        observed += f"; {named}"
        ceiling = min(ceiling, tunnel_gbps)
        if tunnel_gbps < link.gbps:
            cure = ("The tunnel, not the card's slot, is the limit: a PCIe slot or M.2/OCuLink "
                    "adapter inside the node lifts it; otherwise accept it.")
    if port is None:
        yield skipped(entity, f"{observed}; port speed unknown")
        return
    yield verdict(ceiling >= port, entity, observed, f">= {port:g} Gb/s ({what})",
                  f"RDMA bandwidth is capped near {ceiling * PCIE_RDMA_EFFICIENCY:.0f} Gb/s; latency "
                  f"is not affected. {cure}")

"""NICs and RDMA devices: is there real RDMA hardware, with the right driver, on a wide enough link."""

from __future__ import annotations

from collections.abc import Iterator

from checks.scope import PCI_CAPTURED, RDMA_NICS, rdma_nics
from strixwizard.checking.declare import failed, node_check, passed, skipped, verdict, warned
from strixwizard.facts import NodeFacts
from strixwizard.facts.ethtool import driver_info_argv
from strixwizard.facts.nic import Nic
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


@node_check("nic.pcie_link", per=RDMA_NICS)
def pcie_link(node: NodeFacts, site: Site, nic: Nic) -> Iterator[Finding]:
    """Compares usable PCIe bandwidth (trained speed x width) with the port speed; notes downgrades."""
    entity = f"{node.name}/{nic.address}"
    link = nic.pcie
    if link is None or link.gbps is None:
        yield skipped(entity, "PCIe link speed/width not captured")
        return
    port, what = _port_gbps(node, nic)
    observed = f"{nic.model}: PCIe {link.describe()} = {link.gbps:.0f} Gb/s"
    if port is None:
        yield skipped(entity, f"{observed}; port speed unknown")
        return
    yield verdict(link.gbps >= port, entity, observed, f">= {port:g} Gb/s ({what})",
                  f"RDMA bandwidth is capped near {link.rdma_ceiling_gbps or 0:.0f} Gb/s; latency is not "
                  "affected. Move the card to a wider/faster slot if the board has one.")

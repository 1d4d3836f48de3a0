"""USB4/Thunderbolt: soft or experimental verbs devices are not the hardware RDMA the cluster
needs; the trained link rate; a round-robin bond of USB4 links needs TCP to tolerate reordering."""

from __future__ import annotations

from collections.abc import Iterator

from strixwizard.checking.declare import node_check, passed, skipped, verdict, warned
from strixwizard.facts import NodeFacts
from strixwizard.facts.bond import PUBLISHED_TCP_REORDERING
from strixwizard.model import Finding
from strixwizard.site import Site
from strixwizard.vendors import rdma_nic_families, softrdma, usb4net


@node_check("usb4.soft_rdma")
def soft_rdma(node: NodeFacts, site: Site) -> Iterator[Finding]:
    """Flags usb4_rdma* devices and rxe/siw devices (noting those bound to a thunderbolt netdev)."""
    soft = [d for d in node.rdma if not d.is_hardware]
    if not soft:
        if node.usb4.routers or any(n.is_thunderbolt for n in node.netdevs):
            yield passed(node.name, observed="no USB4 or software verbs devices",
                         expected="hardware RDMA only")
        else:
            yield skipped(node.name, "no USB4 networking and no software RDMA devices")
        return
    hardware = ", ".join(str(v.rdma_driver) for v in rdma_nic_families())
    for device in soft:
        netdev = device.parent_netdev or next((p.netdev for p in device.ports if p.netdev), None)
        over_tb = node.netdev(netdev) is not None and node.netdev(netdev).is_thunderbolt  # type: ignore[union-attr]
        if device.kind == "usb4":
            observed = f"{device.name}: experimental USB4 verbs (thunderbolt_ibverbs)"
            detail = usb4net.VERBS
        else:
            where = f" over {netdev}" + (" (thunderbolt-net)" if over_tb else "") if netdev else ""
            observed = f"{device.name}: software {device.kind}{where}"
            detail = softrdma.OVER_THUNDERBOLT if over_tb else softrdma.IN_CPU
        yield warned(f"{node.name}/{device.name}", observed=observed,
                     expected=f"hardware RDMA ({hardware})", detail=detail)


@node_check("usb4.link_rate")
def link_rate(node: NodeFacts, site: Site) -> Iterator[Finding]:
    """Reads rx_speed x rx_lanes of each XDomain peer (another host) under /sys/bus/thunderbolt."""
    hosts = [peer for peer in node.usb4.peers if peer.kind == "xdomain"]
    if not hosts:
        yield skipped(node.name, "no USB4 link to another host")
        return
    full = usb4net.FULL_RATE_GBPS
    for peer in hosts:
        entity = f"{node.name}/{peer.name}" + (f" ({peer.device_name})" if peer.device_name else "")
        rate = peer.link_gbps
        if rate is None:
            yield skipped(entity, "the USB4 link's rx_speed was not captured")
            continue
        yield verdict(rate >= full, entity,
                      f"{rate:g} Gb/s ({peer.rx_lanes or 1} x {peer.rx_speed_gbps:g} Gb/s)",
                      f">= {full:g} Gb/s (2 x 20 Gb/s)", usb4net.HALF_RATE)


@node_check("usb4.bond_reordering")
def bond_reordering(node: NodeFacts, site: Site) -> Iterator[Finding]:
    """A bond of thunderbolt-net links (bonding/mode, bonding/slaves): in balance-rr, one flow's
    segments take both cables and arrive out of order, so net.ipv4.tcp_reordering must be at
    least the published 127 (facts/bond.py) or TCP takes the reordering for loss."""
    bonded = [b for b in node.bonds if b.thunderbolt_slaves]
    if not bonded:
        yield skipped(node.name, "no bond of thunderbolt-net interfaces")
        return
    wanted = PUBLISHED_TCP_REORDERING
    for bond in bonded:
        entity = f"{node.name}:{bond.name}"
        slaves = " ".join(bond.slaves)
        if bond.mode is None:
            yield skipped(entity, f"the mode of bond {bond.name} ({slaves}) was not captured")
            continue
        if not bond.round_robin:
            yield passed(entity, observed=f"{bond.mode} over {slaves}",
                         expected="balance-rr needs tcp_reordering raised; other modes do not",
                         detail=(f"{bond.mode} keeps each flow on one link: no reordering to "
                                 "tolerate, and one flow gets one cable's rate"))
            continue
        value = node.tcp_reordering
        if value is None:
            yield skipped(entity, f"balance-rr over {slaves}; net.ipv4.tcp_reordering not captured")
            continue
        yield verdict(value >= wanted, entity,
                      f"balance-rr over {slaves}, net.ipv4.tcp_reordering = {value}",
                      f"net.ipv4.tcp_reordering >= {wanted} (published)", usb4net.BOND_REORDERING)

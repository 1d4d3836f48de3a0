"""Lossless RoCE: flow control present, PFC on the site's priority, no pause with PFC, DSCP trust."""

from __future__ import annotations

from collections.abc import Iterator

from strixwizard.checking import failed, node_check, passed, skipped, warned
from strixwizard.facts import NodeFacts
from strixwizard.facts.ethtool import pause_argv
from strixwizard.model import Finding, Severity
from strixwizard.site import Site
from strixwizard.topology import FabricPort, fabric_ports, in_use


def roce_fabric(node: NodeFacts, site: Site) -> list[FabricPort]:
    """Fabric netdevs in use with a hardware RoCE port on them."""
    return [
        f for f in fabric_ports(node, site)
        if f.port is not None and f.port.is_ethernet and f.device is not None
        and not f.device.is_iwarp and in_use(f)
    ]


def effective_trust(node: NodeFacts, netdev: str) -> tuple[tuple[str, ...] | None, str]:
    """The trust order of an interface, and how it was learned (or why it is unknown).

    E810 (ice) has no apptrust: it switches a port to L3 DSCP QoS mode as soon as a
    DSCP APP entry exists (dcb app dscp-prio), and stays in L2 PCP mode otherwise.
    """
    dcb = node.dcb(netdev)
    if dcb.trust is not None:
        return dcb.trust, "dcb apptrust"
    nic = node.nic_of(node.netdev(netdev))
    if nic is not None and nic.family == "e810" and dcb.dscp_prio is not None:
        if dcb.dscp_prio:
            return ("dscp",), "E810 L3 mode: dscp-prio entries present"
        return ("pcp",), "E810 L2 mode: no dscp-prio entries"
    return None, dcb.trust_note


def _prios(prios: tuple[int, ...]) -> str:
    return "priority " + ",".join(map(str, prios)) if prios else "off on all priorities"


@node_check(
    "dcb.flow_control",
    title="RoCE interfaces have flow control (PFC or link-level pause)",
    why="Without any flow control RoCE runs lossy: drops trigger go-back-N retransmits and "
    "'retry count exceeded' errors under load.",
    severity=Severity.HIGH,
    fix="dcb.pfc",
)
def flow_control(node: NodeFacts, site: Site) -> Iterator[Finding]:
    """PFC on some priority (dcb pfc) or RX+TX pause (ethtool -a) passes; neither fails."""
    ports = roce_fabric(node, site)
    if not ports:
        yield skipped(node.name, "no RoCE interface in use on this node")
        return
    for fabric in ports:
        name = fabric.netdev.name
        entity = fabric.label
        dcb = node.dcb(name)
        pause = node.pause(name)
        expected = f"PFC on priority {site.fabric.pfc_priority} (or link-level pause)"
        if dcb.pfc_enabled:
            yield passed(entity, observed=f"PFC {_prios(dcb.pfc_enabled)}", expected=expected)
        elif pause is not None and pause.rx and pause.tx:
            yield passed(entity, observed="link-level pause rx/tx on, PFC off", expected=expected)
        elif dcb.pfc_enabled is None or pause is None:
            missing = dcb.pfc_note if dcb.pfc_enabled is None else node.why_unknown(pause_argv(name))
            yield skipped(entity, f"flow control unknown: {missing}")
        else:
            yield failed(
                entity, observed="PFC off, link-level pause off", expected=expected,
                detail=f"Enable PFC on priority {site.fabric.pfc_priority} on both ends "
                f"(`dcb pfc set dev {name} prio-pfc all:off {site.fabric.pfc_priority}:on`); on E810 "
                "the driver otherwise quietly runs RoCE de-tuned.",
            )


@node_check(
    "dcb.pause_and_pfc",
    title="No link-level pause together with PFC",
    why="Link-level pause stops all traffic and conflicts with PFC; drivers reject or ignore one of them.",
    severity=Severity.HIGH,
    fix="ethtool.pause_off",
)
def pause_and_pfc(node: NodeFacts, site: Site) -> Iterator[Finding]:
    """Fails when `ethtool -a` shows RX or TX pause on while `dcb pfc` has a priority enabled."""
    ports = roce_fabric(node, site)
    if not ports:
        yield skipped(node.name, "no RoCE interface in use on this node")
        return
    for fabric in ports:
        name = fabric.netdev.name
        dcb = node.dcb(name)
        pause = node.pause(name)
        if dcb.pfc_enabled is None:
            yield skipped(fabric.label, f"PFC state unknown: {dcb.pfc_note}")
        elif pause is None:
            yield skipped(fabric.label, f"pause state unknown: {node.why_unknown(pause_argv(name))}")
        else:
            observed = (f"pause rx {'on' if pause.rx else 'off'} tx {'on' if pause.tx else 'off'}, "
                        f"PFC {_prios(dcb.pfc_enabled)}")
            if dcb.pfc_enabled and pause.any_on:
                yield failed(fabric.label, observed=observed, expected="pause off when PFC is on",
                             detail=f"`ethtool -A {name} rx off tx off` on both ends.")
            else:
                yield passed(fabric.label, observed=observed, expected="pause off when PFC is on")


@node_check(
    "dcb.pfc_priority",
    title="PFC is enabled on the site's RoCE priority",
    why="Lossless RoCE needs PFC on exactly the priority RoCE traffic is sent with.",
    severity=Severity.MEDIUM,
    fix="dcb.pfc",
)
def pfc_priority(node: NodeFacts, site: Site) -> Iterator[Finding]:
    """Compares the PFC-enabled priorities from `dcb -j pfc show` with fabric.pfc_priority."""
    ports = roce_fabric(node, site)
    if not ports:
        yield skipped(node.name, "no RoCE interface in use on this node")
        return
    wanted = (site.fabric.pfc_priority,)
    for fabric in ports:
        dcb = node.dcb(fabric.netdev.name)
        expected = f"PFC on priority {wanted[0]} only"
        if dcb.pfc_enabled is None:
            yield skipped(fabric.label, f"PFC state unknown: {dcb.pfc_note}")
        elif dcb.pfc_enabled == wanted:
            yield passed(fabric.label, observed=f"PFC {_prios(dcb.pfc_enabled)}", expected=expected)
        else:
            yield warned(fabric.label, observed=f"PFC {_prios(dcb.pfc_enabled)}", expected=expected,
                         detail=f"`dcb pfc set dev {fabric.netdev.name} prio-pfc all:off {wanted[0]}:on` "
                         "on both ends.")


@node_check(
    "dcb.trust",
    title="The NIC classifies RoCE traffic by the site's trust mode (DSCP)",
    why="Untagged RoCE v2 is classified by DSCP only in DSCP trust; under PCP trust it lands on "
    "priority 0, outside PFC.",
    severity=Severity.MEDIUM,
    fix="dcb.trust_dscp",
)
def trust(node: NodeFacts, site: Site) -> Iterator[Finding]:
    """Reads `dcb -j apptrust show`; unknown on older iproute2 or drivers without apptrust."""
    ports = roce_fabric(node, site)
    if not ports:
        yield skipped(node.name, "no RoCE interface in use on this node")
        return
    for fabric in ports:
        order, source = effective_trust(node, fabric.netdev.name)
        expected = f"{site.fabric.trust} first"
        if order is None:
            yield skipped(fabric.label, f"trust mode unknown: {source}")
            continue
        observed = "order " + (" ".join(order) or "default") + f" ({source})"
        if order and order[0] == site.fabric.trust:
            yield passed(fabric.label, observed=observed, expected=expected)
        else:
            yield warned(fabric.label, observed=observed, expected=expected,
                         detail=f"`dcb apptrust set dev {fabric.netdev.name} order {site.fabric.trust}`"
                         " on both ends (E810: add a DSCP APP entry, `dcb app add dev "
                         f"{fabric.netdev.name} dscp-prio 26:{site.fabric.pfc_priority}`).")


@node_check(
    "dcb.congestion",
    title="ECN congestion control (DCQCN) on the RoCE priority",
    why="PFC alone stops a congested link with pauses; DCQCN slows the senders instead. Back to "
    "back it matters little, behind a switch it keeps PFC storms away.",
    severity=Severity.LOW,
)
def ecn_congestion(node: NodeFacts, site: Site) -> Iterator[Finding]:
    """Reads the mlx5 per-priority ECN switches or irdma's configfs DCQCN flag, with CNP counters."""
    ports = roce_fabric(node, site)
    if not ports:
        yield skipped(node.name, "no RoCE interface in use on this node")
        return
    wanted = site.fabric.pfc_priority
    for fabric in ports:
        device = fabric.device.name if fabric.device else None
        number = fabric.port.number if fabric.port else None
        state = node.congestion(fabric.netdev.name, device, number)
        counters = ", ".join(f"{name} {value}" for name, value in state.counters.items())
        counted = f" ({counters})" if counters else ""
        expected = f"ECN/DCQCN on priority {wanted}"
        enabled = state.enabled_on(wanted)
        if enabled is None:
            reason = (f"/sys/kernel/config/irdma/{device} does not exist (a read-only probe does not "
                      "create it); DCQCN is off by default on irdma" if fabric.device
                      and fabric.device.driver == "irdma" else "the driver exposes no ECN settings")
            yield skipped(fabric.label, f"congestion control unknown: {reason}{counted}")
        elif enabled:
            yield passed(fabric.label, observed=f"on ({state.source}){counted}", expected=expected)
        else:
            yield warned(fabric.label, observed=f"off on priority {wanted} ({state.source}){counted}",
                         expected=expected,
                         detail="Lossless rests on PFC alone. Fine back to back; behind a switch "
                         "enable ECN/DCQCN on the RoCE priority on both ends.")

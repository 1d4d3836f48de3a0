"""Lossless RoCE: flow control present, PFC on the site's priority, no pause with PFC, DSCP trust."""

from __future__ import annotations

from collections.abc import Iterator

from checks.scope import ROCE_INTERFACES, vendor_of
from strixwizard.checking.declare import failed, node_check, passed, skipped, verdict
from strixwizard.facts import NodeFacts
from strixwizard.facts.ethtool import pause_argv
from strixwizard.model import Finding, Status
from strixwizard.site import Site
from strixwizard.topology import FabricPort
from strixwizard.vendors import by_driver


def effective_trust(port: FabricPort) -> tuple[tuple[str, ...] | None, str]:
    """The trust order of an interface, and how it was learned (or why it is unknown).

    A family without apptrust that classifies by DSCP once a DSCP APP entry exists
    (E810/ice, ConnectX/mlx5: `Qos.trust` "dscp-app-entry") is in L3 DSCP mode with such
    entries and in L2 PCP mode without; a ConnectX with MLNX_OFED's `mlnx_qos` says its
    trust state itself.
    """
    dcb = port.node.dcb(port.netdev.name)
    if dcb.trust is not None:
        return dcb.trust, "dcb apptrust"
    vendor = vendor_of(port)
    qos = port.node.mlnx_qos(port.netdev.name).value if vendor.qos.tool.startswith("mlnx_qos") \
        else None
    if qos is not None and qos.trust:
        return (qos.trust,), "mlnx_qos: Priority trust state"
    if vendor.qos.trust_by_dscp_entry and dcb.dscp_prio is not None:
        if dcb.dscp_prio:
            return ("dscp",), f"{vendor.short} L3 mode: dscp-prio entries present"
        return ("pcp",), f"{vendor.short} L2 mode: no dscp-prio entries"
    return None, dcb.trust_note


def _prios(prios: tuple[int, ...]) -> str:
    return "priority " + ",".join(map(str, prios)) if prios else "off on all priorities"


@node_check("dcb.flow_control", per=ROCE_INTERFACES)
def flow_control(node: NodeFacts, site: Site, fabric: FabricPort) -> Iterator[Finding]:
    """PFC on some priority (dcb pfc) or RX+TX pause (ethtool -a) passes; neither fails."""
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


@node_check("dcb.pause_and_pfc", per=ROCE_INTERFACES)
def pause_and_pfc(node: NodeFacts, site: Site, fabric: FabricPort) -> Iterator[Finding]:
    """Fails when `ethtool -a` shows RX or TX pause on while `dcb pfc` has a priority enabled."""
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
        yield verdict(not (dcb.pfc_enabled and pause.any_on), fabric.label, observed,
                      "pause off when PFC is on",
                      f"`ethtool -A {name} rx off tx off` on {node.name}.",
                      Status.FAIL)


@node_check("dcb.pfc_priority", per=ROCE_INTERFACES)
def pfc_priority(node: NodeFacts, site: Site, fabric: FabricPort) -> Iterator[Finding]:
    """Compares the PFC-enabled priorities from `dcb -j pfc show` with fabric.pfc_priority."""
    wanted = (site.fabric.pfc_priority,)
    dcb = node.dcb(fabric.netdev.name)
    expected = f"PFC on priority {wanted[0]} only"
    if dcb.pfc_enabled is None:
        yield skipped(fabric.label, f"PFC state unknown: {dcb.pfc_note}")
    else:
        yield verdict(dcb.pfc_enabled == wanted, fabric.label, f"PFC {_prios(dcb.pfc_enabled)}",
                      expected, f"`dcb pfc set dev {fabric.netdev.name} prio-pfc all:off "
                      f"{wanted[0]}:on` on {node.name}.")


@node_check("dcb.trust", per=ROCE_INTERFACES)
def trust(node: NodeFacts, site: Site, fabric: FabricPort) -> Iterator[Finding]:
    """Reads `dcb -j apptrust show`, else `mlnx_qos -i IF` (ConnectX), else the vendor's rule
    (DSCP trust while DSCP APP entries exist); unknown when none is readable. Shows the RoCE
    traffic class of /sys/class/infiniband/DEV/tc/1 where the driver exposes it."""
    order, source = effective_trust(fabric)
    expected = f"{site.fabric.trust} first"
    if order is None:
        yield skipped(fabric.label, f"trust mode unknown: {source}")
        return
    observed = "order " + (" ".join(order) or "default") + f" ({source})"
    tclass = node.traffic_class(fabric.device.name) if fabric.device else None
    if tclass is not None and tclass.global_tclass is not None:
        observed += f"; RoCE traffic class {tclass.global_tclass} (DSCP {tclass.dscp})"
    yield verdict(bool(order) and order[0] == site.fabric.trust, fabric.label, observed, expected,
                  f"`dcb apptrust set dev {fabric.netdev.name} order {site.fabric.trust}` on both "
                  f"ends (E810: add a DSCP APP entry, `dcb app add dev {fabric.netdev.name} "
                  f"dscp-prio 26:{site.fabric.pfc_priority}`).")


@node_check("dcb.congestion", per=ROCE_INTERFACES)
def ecn_congestion(node: NodeFacts, site: Site, fabric: FabricPort) -> Iterator[Finding]:
    """Reads the mlx5 per-priority ECN switches or irdma's configfs DCQCN flag, with CNP counters."""
    wanted = site.fabric.pfc_priority
    device = fabric.device.name if fabric.device else None
    number = fabric.port.number if fabric.port else None
    state = node.congestion(fabric.netdev.name, device, number)
    counters = ", ".join(f"{name} {value}" for name, value in state.counters.items())
    counted = f" ({counters})" if counters else ""
    expected = f"ECN/DCQCN on priority {wanted}"
    enabled = state.enabled_on(wanted)
    if enabled is None:
        unknown = by_driver(fabric.device.driver if fabric.device else None).qos.ecn_unknown
        reason = unknown.format(device=device) if unknown else "the driver exposes no ECN settings"
        yield skipped(fabric.label, f"congestion control unknown: {reason}{counted}")
    else:
        observed = f"on ({state.source})" if enabled else f"off on priority {wanted} ({state.source})"
        yield verdict(enabled, fabric.label, observed + counted, expected,
                      "Lossless rests on PFC alone. Fine back to back; behind a switch enable "
                      "ECN/DCQCN on the RoCE priority on both ends.")

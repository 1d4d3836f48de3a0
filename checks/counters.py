"""Fabric health counters since boot, and the kernel's RDMA link list against sysfs."""

from __future__ import annotations

from collections.abc import Iterator

from checks.scope import vendor_of
from strixwizard.checking.declare import Each, node_check, passed, skipped, warned
from strixwizard.facts import NodeFacts
from strixwizard.facts.counters import ERROR_KINDS, KINDS, CounterSet, counter_kind
from strixwizard.model import Finding
from strixwizard.site import Site
from strixwizard.topology import FabricPort, fabric_ports, in_use


def _counted(node: NodeFacts, site: Site) -> list[FabricPort]:
    """Fabric interfaces in use with an RDMA port on them (software RDMA too, when the site
    allows it), and thunderbolt-net interfaces in use or enslaved to a bond (a bond's slaves
    carry no address, yet carry its traffic)."""
    enslaved = {s for bond in node.bonds for s in bond.thunderbolt_slaves}
    return [f for f in fabric_ports(node, site)
            if (f.port is not None and in_use(f))
            or (f.netdev.is_thunderbolt and (in_use(f) or f.netdev.name in enslaved))]


COUNTED_INTERFACES = Each(_counted, "no RDMA or thunderbolt-net interface in use on this node")
#: What a thunderbolt-net error counter means (drivers/net/thunderbolt/main.c) and the published
#: case of a cable that corrupted data the driver accepted.
USB4_CABLE = (
    "thunderbolt-net counts a frame the USB4 host router flagged with a CRC error, an overrun or "
    "a bad size and drops it (drivers/net/thunderbolt/main.c, tbnet_check_frame); TCP resends "
    "it, so only speed suffers, unless corruption also slipped past the CRC: one published USB4 "
    "cable showed NHI CRC errors at about 1 frame in 10^6 and about 1 in 4 large duplex transfers "
    "arrived corrupted, while another cable of the same model was clean "
    "(https://github.com/wkljohn/llama.cpp-strix-halo-RCCL-RDMA, odinlink/RESULTS.md)")


def totals_text(sets: tuple[CounterSet, ...], kinds: tuple[str, ...]) -> str:
    """ "pause: rx_prio3_pause 12 (ethtool -S); cnp: np_cnp_sent 3 (hw_counters)" for the
    non-zero counters of `kinds`; "" when all are zero."""
    parts = []
    for kind in kinds:
        named = [f"{name} {value} ({s.source})" for s in sets for name, value in s.values.items()
                 if value and counter_kind(name) == kind]
        if named:
            parts.append(f"{kind}: " + ", ".join(named))
    return "; ".join(parts)


@node_check("fabric.counters", per=COUNTED_INTERFACES)
def fabric_counters(node: NodeFacts, site: Site, fabric: FabricPort) -> Iterator[Finding]:
    """Totals of `ethtool -S IF`, the netdev statistics in sysfs and the RDMA port's
    hw_counters/counters (facts/counters.py): warns naming every non-zero retransmit,
    sequence-error, discard or corrupt-frame counter; the RDMA port's packet counts are named,
    never judged."""
    device = fabric.device.name if fabric.device else None
    number = fabric.port.number if fabric.port else None
    counters = node.counters(fabric.netdev.name, device, number)
    if not counters.sets:
        yield skipped(fabric.label, "counters unknown: " + "; ".join(counters.notes))
        return
    read = ", ".join(f"{len(s.values)} from {s.source} of {s.device}" for s in counters.sets)
    flow = totals_text(counters.sets, ("pause", "cnp", "ecn"))
    dropped = totals_text(counters.sets, ("dropped",))
    packets = totals_text(counters.sets, ("packets",)).removeprefix("packets: ")
    errors = totals_text(counters.sets, tuple(k for k in KINDS if k in ERROR_KINDS))
    expected = ("CRC, frame, length and other error counters at 0" if fabric.netdev.is_thunderbolt
                else "retransmit, sequence-error and discard counters at 0")
    totals = f"Totals since boot ({read}): " + (errors or "no error counter above 0") + (
        f"; flow control at work: {flow}" if flow else "; no pause, CNP or ECN counter above 0") + (
        f"; not judged (the stack did not take them: unknown protocol, no memory): {dropped}"
        if dropped else "") + (f"; over RDMA since boot: {packets}" if packets else "")
    if errors and fabric.netdev.is_thunderbolt:
        yield warned(fabric.label, observed=errors, expected=expected, detail=(
            f"{totals}. {USB4_CABLE}. These count since boot: run `strixwizard test "
            "bandwidth` over this link and see whether they grow under load; if they do, "
            "reseat or replace the cable (try a certified 40/80 Gb/s one) and compare."),
            fixable=False)
        return
    if errors:
        tool = vendor_of(fabric).qos.tool_command(fabric.netdev.name, "").strip()
        show = f"`{tool}`" if tool else f"`dcb pfc show dev {fabric.netdev.name}`"
        yield warned(fabric.label, observed=errors, expected=expected, detail=(
            f"{totals}. These count since boot: run `strixwizard test` to see whether they grow "
            f"under load; if they do, the fabric is lossy: check PFC on both ends ({show}) "
            "and the cable."), fixable=False)
        return
    yield passed(fabric.label, observed=f"no error counter above 0 ({read})", expected=expected,
                 detail=totals)


@node_check("rdma.link_cross_check")
def rdma_link_cross_check(node: NodeFacts, site: Site) -> Iterator[Finding]:
    """Compares `rdma -j link show` (state, netdev) with the ports read from sysfs; a link
    without netdev (a container that lacks it) is noted, not judged."""
    reading = node.rdma_links
    if reading.value is None:
        yield skipped(node.name, f"rdma link unknown: {reading.note}")
        return
    sysfs = {p.name: p for p in node.rdma_ports}
    if not reading.value and not sysfs:
        yield skipped(node.name, "no RDMA device on this node")
        return
    disagree: list[str] = []
    notes: list[str] = []
    for link in reading.value:
        port = sysfs.get(link.name)
        if port is None:
            disagree.append(f"{link.name} is listed by rdma link but not in sysfs")
            continue
        if link.state != port.state:
            disagree.append(f"{link.name}: rdma link says {link.state}, sysfs {port.state}")
        if link.netdev is None:
            notes.append(f"{link.name}: rdma link shows no netdev (not visible from here: a "
                         "container?)")
        elif port.netdev is not None and link.netdev != port.netdev:
            disagree.append(f"{link.name}: rdma link says netdev {link.netdev}, sysfs {port.netdev}")
    listed = {link.name for link in reading.value}
    disagree += [f"{name} is in sysfs but not listed by rdma link" for name in sysfs
                 if name not in listed]
    seen = ", ".join(f"{lk.name} {lk.state} {lk.netdev or '(no netdev)'}" for lk in reading.value)
    expected = "the same ports, states and netdevs as sysfs"
    if disagree:
        yield warned(node.name, observed="; ".join(disagree), expected=expected, detail=(
            f"rdma link: {seen or 'no links'}. Re-run doctor; if it persists, compare "
            "`rdma link show` with /sys/class/infiniband on the node."), fixable=False)
        return
    yield passed(node.name, observed=f"rdma link: {seen}", expected=expected,
                 detail="; ".join(notes))

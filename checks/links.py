"""Links between nodes, judged on both ends at once, and the site's RDMA path verdict."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from ipaddress import ip_network

from checks.lossless import effective_trust
from checks.scope import ROCE_LINK
from strixwizard.checking.declare import (
    Requires,
    failed,
    link_check,
    passed,
    site_check,
    skipped,
    verdict,
    warned,
)
from strixwizard.model import Finding, Status
from strixwizard.site import Site
from strixwizard.topology import FabricPort, Link, Topology
from strixwizard.vendors import usb4net


def _pair(link: Link, value: object, unit: str = "") -> str:
    def show(end: FabricPort) -> str:
        return f"{end.label} {value_of(end, value)}{unit}"

    return " vs ".join(show(end) for end in link.ends)


def value_of(end: FabricPort, what: object) -> object:
    return what(end) if callable(what) else what


@link_check("link.transport")
def transport(link: Link, site: Site) -> Iterator[Finding]:
    """Passes for roce-v2/roce-v1/infiniband/iwarp; warns for thunderbolt-net and plain Ethernet."""
    observed = f"{link.transport} ({link.evidence})"
    expected = "roce-v2 or infiniband"
    if link.rdma:
        yield passed(link.id, observed=observed, expected=expected)
    elif link.transport == "thunderbolt-net":
        yield warned(
            link.id, observed=observed, expected=expected,
            detail=usb4net.TCP_ONLY,
        )
    else:
        missing = [end.label for end in link.ends if end.port is None]
        yield warned(
            link.id, observed=observed, expected=expected,
            detail=f"No hardware RDMA port on {', '.join(missing)}: traffic on this link is TCP.",
        )


def _ends_known(what: str, unknown: Callable[[FabricPort], str | None]) -> Requires[Link]:
    """Requires a value on both ends; else the check skips with "WHAT unknown: <why, first end>"."""
    def first(link: Link) -> str | None:
        return next((note for end in link.ends if (note := unknown(end)) is not None), None)

    return Requires(lambda link: first(link) is None, lambda link: f"{what} unknown: {first(link)}",
                    f"{what} unknown on an end")


def _same(link: Link, show: Callable[[FabricPort], object], detail: str,
          otherwise: Status = Status.WARN, unit: str = "") -> Finding:
    """Passes when `show` gives the same value on both ends."""
    a, b = (show(end) for end in link.ends)
    return verdict(a == b, link.id, _pair(link, show, unit), "same on both ends", detail, otherwise)


MTU_KNOWN: Requires[Link] = Requires(lambda link: None not in [e.netdev.mtu for e in link.ends],
                                     "MTU of one end not captured")
SPEED_KNOWN: Requires[Link] = Requires(
    lambda link: None not in [e.netdev.speed_mbps for e in link.ends],
    "link speed unknown on one end (link down or not reported)")
PFC_KNOWN = _ends_known("PFC state", lambda end: None if end.node.dcb(end.netdev.name).pfc_enabled
                        is not None else end.node.dcb(end.netdev.name).pfc_note)
TRUST_KNOWN = _ends_known("trust mode", lambda end: None if effective_trust(end)[0] is not None
                          else effective_trust(end)[1])


@link_check("link.mtu", requires=(MTU_KNOWN,))
def same_mtu(link: Link, site: Site) -> Iterator[Finding]:
    """Compares the netdev MTU, and the RDMA active_mtu when ibv_devinfo was captured on both ends."""
    mtus = [end.netdev.mtu for end in link.ends]
    actives = [end.port.active_mtu if end.port else None for end in link.ends]
    observed = _pair(link, lambda e: e.netdev.mtu)
    if link.rdma and None not in actives:
        observed += " (active_mtu " + "/".join(str(a) for a in actives) + ")"
    mismatch = mtus[0] != mtus[1] or (link.rdma and None not in actives and actives[0] != actives[1])
    yield verdict(not mismatch, link.id, observed, "equal on both ends",
                  f"Set MTU {max(m or 0 for m in mtus)} on both ends (site wants {site.fabric.mtu}).",
                  Status.FAIL)


@link_check("link.speed", requires=(SPEED_KNOWN,))
def same_speed(link: Link, site: Site) -> Iterator[Finding]:
    """Compares /sys/class/net/IF/speed on both ends; unknown speeds skip."""
    speeds = [end.netdev.speed_mbps for end in link.ends]
    yield verdict(speeds[0] == speeds[1], link.id,
                  _pair(link, lambda e: e.netdev.speed_mbps, " Mb/s"), "equal on both ends",
                  "Check the cable/transceivers and any forced speed (ethtool -s).")


@link_check("link.pfc", requires=(ROCE_LINK, PFC_KNOWN))
def same_pfc(link: Link, site: Site) -> Iterator[Finding]:
    """Compares the PFC-enabled priorities of `dcb pfc show` on both ends of a RoCE link."""

    def show(end: FabricPort) -> str:
        prios = end.node.dcb(end.netdev.name).pfc_enabled or ()
        return ",".join(map(str, prios)) or "off"

    yield _same(link, show, f"Enable PFC on priority {site.fabric.pfc_priority} only, on both ends.",
                Status.FAIL)


@link_check("link.trust", requires=(ROCE_LINK, TRUST_KNOWN))
def same_trust(link: Link, site: Site) -> Iterator[Finding]:
    """Compares `dcb apptrust show` order on both ends of a RoCE link."""
    yield _same(link, lambda e: " ".join(effective_trust(e)[0] or ()) or "default",
                f"`dcb apptrust set dev IF order {site.fabric.trust}` on both ends.")


@link_check("link.roce_version", requires=(ROCE_LINK,))
def same_roce_version(link: Link, site: Site) -> Iterator[Finding]:
    """Compares the RoCE v2 IPv4 GID and, when configfs shows it, the rdma_cm default mode, per end."""

    def version(end: FabricPort) -> str:
        assert end.port is not None
        mode = end.port.default_roce_mode
        gid = end.port.roce_v2_ipv4_gid(end.netdev.name)
        text = f"v2 GID {gid.index}" if gid else "no v2 GID"
        return text + (f", rdma_cm {mode}" if mode else "")

    observed = _pair(link, version)
    has_v2 = [end.port is not None and end.port.roce_v2_ipv4_gid(end.netdev.name) is not None
              for end in link.ends]
    modes = {(end.port.default_roce_mode or "").lower() for end in link.ends if end.port}
    modes.discard("")
    if all(has_v2) and len(modes) <= 1:
        yield passed(link.id, observed=observed, expected="RoCE v2 on both ends")
    elif not any(has_v2) and link.transport == "roce-v1":
        yield warned(link.id, observed=observed, expected="RoCE v2 on both ends",
                     detail="Both ends run RoCE v1 only: it works on one L2 segment but is "
                     "deprecated; use RoCE v2-capable NICs.")
    else:
        yield failed(link.id, observed=observed, expected="RoCE v2 on both ends",
                     detail="Give both ends an IPv4 address on the RoCE netdev and set rdma_cm's "
                     "default_roce_mode to RoCE v2 on both.")


def _no_link_detail(topology: Topology, site: Site, x: str, y: str) -> str:
    """What is true when two nodes have no fabric link: which interfaces were taken as fabric
    ones, and which others do share a subnet (a fabric the site file does not name yet)."""
    def fabric(name: str) -> str:
        ports = topology.fabric.get(name, ())
        return f"{name}: " + (", ".join(p.netdev.name for p in ports) if ports else "none")

    management = {spec.host for spec in site.nodes if spec.host}
    facts = {node.name: node for node in topology.nodes}
    counted = {(n, p.netdev.name) for n in (x, y) for p in topology.fabric.get(n, ())}
    shared = []
    for a in facts[x].netdevs:
        for b in facts[y].netdevs:
            if (x, a.name) in counted and (y, b.name) in counted:
                continue
            for ax in a.ipv4:
                for by in b.ipv4:
                    if ax.address in management or by.address in management or ax.scope == "host":
                        continue
                    if ax.address != by.address and ip_network(ax.cidr, strict=False) == ip_network(
                            by.cidr, strict=False):
                        shared.append(f"{x}:{a.name} {ax.cidr} and {y}:{b.name} {by.cidr}")
    taken = (f"Fabric interfaces (an RDMA port, an RDMA-capable NIC, InfiniBand, Thunderbolt, or the "
             f"site file's fabric_address): {fabric(x)}; {fabric(y)}; no two of them share a subnet.")
    if shared:
        return (f"{taken} {'; '.join(shared)} do share a subnet, but they are not fabric interfaces: "
                "if that is the fabric, set fabric_address in site.yaml to their addresses "
                "(`strixwizard init` with the nodes writes them).")
    return f"{taken} Cable the RDMA NICs and give both ends addresses in one subnet."


@site_check("site.rdma_path")
def rdma_path(topology: Topology, site: Site) -> Iterator[Finding]:
    """For each node pair, passes when a link with rdma=true joins them; Thunderbolt-only fails clearly."""
    names = [node.name for node in topology.nodes]
    if len(names) < 2:
        yield skipped(site.name, "a single node: no inter-node path to judge")
        return
    for i, x in enumerate(names):
        for y in names[i + 1:]:
            entity = f"{x} <-> {y}"
            links = topology.links_between(x, y)
            rdma = [link for link in links if link.rdma]
            working = [link for link in rdma if all(e.port and e.port.is_active for e in link.ends)]
            if working:
                best = working[0]
                yield passed(entity, observed=f"{best.transport} via {best.id}",
                             expected="a hardware RDMA link")
                continue
            if rdma:
                yield failed(entity, observed=f"{rdma[0].transport} link {rdma[0].id}, but its "
                             "RDMA ports are not ACTIVE", expected="a hardware RDMA link",
                             detail="See rdma.port_active on both nodes.")
                continue
            if not (topology.addresses_known(x) and topology.addresses_known(y)):
                yield skipped(entity, "interface addresses not captured (`ip -j addr show`): cannot "
                              "pair interfaces into links")
                continue
            transports = sorted({link.transport for link in links})
            if transports == ["thunderbolt-net"]:
                yield failed(
                    entity, observed="only thunderbolt-net (USB4) joins these nodes",
                    expected="a hardware RDMA link",
                    detail="Thunderbolt networking is TCP only: RCCL will use NET/Socket at tens of "
                    "µs. Add RDMA NICs (E810, ConnectX) and cable them; soft-RoCE/USB4 verbs over "
                    "the same cable are experimental and slow.",
                )
            elif links:
                yield failed(entity, observed=f"only {', '.join(transports)} links",
                             expected="a hardware RDMA link",
                             detail="The interfaces that join these nodes have no working RDMA "
                             "device on both ends; see nic.rdma_capable.")
            else:
                yield failed(entity, observed="no fabric link found",
                             expected="a hardware RDMA link", detail=_no_link_detail(topology, site, x, y))

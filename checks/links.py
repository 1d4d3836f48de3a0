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
from strixwizard.topology import (
    MISMATCH,
    RCCL,
    RDMA_TRANSPORTS,
    FabricPort,
    Link,
    Topology,
    link_layer,
    stack_names,
)
from strixwizard.vendors import by_transport, usb4net


def _pair(link: Link, value: object, unit: str = "") -> str:
    def show(end: FabricPort) -> str:
        return f"{end.label} {value_of(end, value)}{unit}"

    return " vs ".join(show(end) for end in link.ends)


def value_of(end: FabricPort, what: object) -> object:
    return what(end) if callable(what) else what




def _roce_cure(end: FabricPort) -> tuple[str, bool]:
    """How to switch an iWARP end to RoCE (its vendor's switch), and whether `fix` can do it."""
    nic = end.node.nic_of(end.netdev)
    switch = nic.vendor.roce_switch if nic is not None else None
    if nic is None or switch is None:
        return (f"{end.label}: its NIC has no RoCE mode strixwizard knows; use a RoCE v2 or "
                "InfiniBand NIC", False)
    handle = f"pci/{nic.address}"
    return (f"{end.label}: `devlink dev param set {handle} name {switch.other_param} value false "
            f"cmode runtime` then `devlink dev param set {handle} name {switch.devlink_param} value "
            f"true cmode runtime` (in-tree {switch.module}, {switch.doc}), or `options "
            f"{switch.module} {switch.module_option}` for Intel's out-of-tree driver", True)


@link_check("link.transport")
def transport(link: Link, site: Site) -> Iterator[Finding]:
    """Passes when RCCL/NCCL, llama.cpp RDMA and perftest can use the link (RoCE v2,
    InfiniBand); fails for iWARP (rdma_cm only) and a link-layer mismatch (nothing passes);
    warns for RoCE v1, thunderbolt-net and plain Ethernet."""
    observed = f"{link.transport} ({link.evidence})"
    if link.transport in RDMA_TRANSPORTS | {MISMATCH} and not link.carries(RCCL):
        observed += f"; carries: {stack_names(link.stacks)}"
    expected = "roce-v2 or infiniband"
    if link.carries(RCCL):
        yield passed(link.id, observed=observed, expected=expected)
    elif link.transport == "iwarp":
        ends = [end for end in link.ends if end.device is not None and end.device.is_iwarp]
        cures = [_roce_cure(end) for end in ends]
        yield failed(
            link.id, observed, expected,
            "iWARP connects queue pairs through rdma_cm only: RCCL/NCCL, llama.cpp's RDMA "
            "transport and perftest address the peer's GID over RC queue pairs they connect "
            "themselves, so none of them runs here (RCCL falls back to NET/Socket). Switch "
            "to RoCE v2: " + "; ".join(cure for cure, _ in cures) + ".",
            fixable=any(ok for _, ok in cures))
    elif link.transport == MISMATCH:
        layers = " vs ".join(f"{end.label} {link_layer(end)}" for end in link.ends)
        yield failed(
            link.id, observed, expected,
            f"The two ends run different link layers ({layers}): no frame of either passes, "
            "RDMA or IP. See link.link_layer for the port to switch.", fixable=False)
    elif link.transport == "roce-v1":
        yield warned(
            link.id, observed, expected,
            "Both ends offer RoCE v1 only: perftest and rdma_cm programs run on one L2 segment, "
            "but strixwizard's RCCL and llama.cpp environments address peers by their RoCE v2 "
            "GID. See link.roce_version.", fixable=False)
    elif link.transport == "thunderbolt-net":
        yield warned(
            link.id, observed=observed, expected=expected,
            detail=usb4net.TCP_ONLY, fixable=False,
        )
    else:
        missing = [end.label for end in link.ends if end.port is None]
        yield warned(
            link.id, observed=observed, expected=expected,
            detail=f"No hardware RDMA port on {', '.join(missing)}: traffic on this link is TCP.",
            fixable=False,
        )


def _link_type_cure(end: FabricPort, wanted: str) -> str:
    """The firmware setting that gives `end` the `wanted` link layer (its vendor's switch)."""
    nic = end.node.nic_of(end.netdev)
    switch = nic.vendor.link_type_switch if nic is not None else None
    if nic is None or switch is None:
        what = f"its NIC ({nic.model})" if nic is not None else "its NIC"
        return f"{end.label}: {what} offers no link-type switch strixwizard knows"
    value = switch.ethernet if wanted == "Ethernet" else switch.infiniband
    port = end.port.number if end.port else 1
    command = switch.command.format(device=nic.address, port=port, value=value)
    return (f"{end.label}: `{command}` ({wanted}; {switch.doc}), then "
            f"{switch.apply.format(device=nic.address)} — the firmware reads it at start")


@link_check("link.link_layer")
def same_link_layer(link: Link, site: Site) -> Iterator[Finding]:
    """Compares the link layer of both ends (RDMA port `link_layer`, else the netdev type:
    32 = IPoIB) with each other and with what the site wants (RoCE: Ethernet)."""
    layers = [link_layer(end) for end in link.ends]
    observed = " vs ".join(f"{end.label} {layer}" for end, layer in zip(link.ends, layers,
                                                                          strict=True))
    if layers[0] == layers[1]:
        yield passed(link.id, observed=observed, expected="the same link layer on both ends")
        return
    # the site's fabric is RoCE (its roce_version), so the InfiniBand end is the one to switch
    odd = [end for end, layer in zip(link.ends, layers, strict=True) if layer == "InfiniBand"]
    cures = "; ".join(_link_type_cure(end, "Ethernet") for end in odd)
    yield failed(link.id, observed=observed,
                 expected=f"the same link layer on both ends (the site wants RoCE v"
                 f"{site.fabric.roce_version}: Ethernet)",
                 detail=f"An InfiniBand port cabled to an Ethernet one never links (the IB end "
                 f"stays DOWN / Polling, the Ethernet end sees no link partner). Switch "
                 f"the port to Ethernet: {cures}. Its IPoIB interface then becomes an Ethernet "
                 "netdev (new name): give it the fabric address.")


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


SAME_LINK_LAYER: Requires[Link] = Requires(
    lambda link: link.transport != MISMATCH,
    "the ends run different link layers (see link.link_layer): nothing passes to compare")
MTU_KNOWN: Requires[Link] = Requires(lambda link: None not in [e.netdev.mtu for e in link.ends],
                                     "MTU of one end not captured")
SPEED_KNOWN: Requires[Link] = Requires(
    lambda link: None not in [e.netdev.speed_mbps for e in link.ends],
    "link speed unknown on one end (link down or not reported)")
PFC_KNOWN = _ends_known("PFC state", lambda end: None if end.node.dcb(end.netdev.name).pfc_enabled
                        is not None else end.node.dcb(end.netdev.name).pfc_note)
TRUST_KNOWN = _ends_known("trust mode", lambda end: None if effective_trust(end)[0] is not None
                          else effective_trust(end)[1])


@link_check("link.mtu", requires=(SAME_LINK_LAYER, MTU_KNOWN))
def same_mtu(link: Link, site: Site) -> Iterator[Finding]:
    """Compares the netdev MTU, and the RDMA active_mtu when ibv_devinfo was captured on both ends
    (FAIL when they differ); equal ends at another MTU than the site's `fabric.mtu` WARN on links
    that carry the site's MTU (`net.mtu` plans it there), so a plan never cures what doctor
    did not report."""
    mtus = [end.netdev.mtu for end in link.ends]
    actives = [end.port.active_mtu if end.port else None for end in link.ends]
    observed = _pair(link, lambda e: e.netdev.mtu)
    if link.rdma and None not in actives:
        observed += " (active_mtu " + "/".join(str(a) for a in actives) + ")"
    mismatch = mtus[0] != mtus[1] or (link.rdma and None not in actives and actives[0] != actives[1])
    if mismatch:
        yield failed(link.id, observed, "equal on both ends",
                     f"Set MTU {max(m or 0 for m in mtus)} on both ends (site wants {site.fabric.mtu}).")
    elif by_transport(link.transport).site_mtu and mtus[0] != site.fabric.mtu:
        # equal, but not what the site asks for: `fix` plans the site's MTU, so say so here
        yield warned(link.id, observed, f"equal on both ends, {site.fabric.mtu} (site.yaml fabric.mtu)",
                     f"Set MTU {site.fabric.mtu} on both ends, or set fabric.mtu: {mtus[0]} in the "
                     "site file if this MTU is meant.")
    else:
        yield passed(link.id, observed, "equal on both ends")


@link_check("link.speed", requires=(SAME_LINK_LAYER, SPEED_KNOWN))
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
    """For each node pair, passes when a link RCCL/NCCL can use (RoCE v2, InfiniBand) with
    ACTIVE ports joins them; iWARP, RoCE v1, link-layer mismatches and Thunderbolt fail clearly."""
    names = [node.name for node in topology.nodes]
    if len(names) < 2:
        yield skipped(site.name, "a single node: no inter-node path to judge")
        return
    for i, x in enumerate(names):
        for y in names[i + 1:]:
            entity = f"{x} <-> {y}"
            links = topology.links_between(x, y)
            rdma = [link for link in links if link.carries(RCCL)]
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
            hardware = [link for link in links if link.transport in RDMA_TRANSPORTS | {MISMATCH}]
            if hardware:
                first = hardware[0]
                yield failed(entity, observed=f"only {', '.join(transports)} link(s): {first.id} "
                             f"carries {stack_names(first.stacks)}",
                             expected="a link RCCL/NCCL and llama.cpp RDMA can use (RoCE v2 or InfiniBand)",
                             detail=f"See link.transport on {first.id}: it names the cause and "
                             "the cure.")
            elif transports == ["thunderbolt-net"]:
                yield failed(
                    entity, observed="only thunderbolt-net (USB4) joins these nodes",
                    expected="a hardware RDMA link",
                    detail="Thunderbolt networking is TCP only: RCCL will use NET/Socket at tens of "
                    "µs and llama.cpp RPC its TCP transport. Add RDMA NICs (E810, ConnectX) and cable "
                    "them; soft-RoCE/USB4 verbs over the same cable are experimental and slow.",
                )
            elif links:
                yield failed(entity, observed=f"only {', '.join(transports)} links",
                             expected="a hardware RDMA link",
                             detail="The interfaces that join these nodes have no working RDMA "
                             "device on both ends; see nic.rdma_capable.")
            else:
                yield failed(entity, observed="no fabric link found",
                             expected="a hardware RDMA link", detail=_no_link_detail(topology, site, x, y))

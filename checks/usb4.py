"""USB4/Thunderbolt: soft or experimental verbs devices are not the hardware RDMA the cluster
needs; what a USB4 verbs provider carries (opened, QPs, its NHI); the trained link rate; a
round-robin bond of USB4 links needs TCP to tolerate reordering."""

from __future__ import annotations

from collections.abc import Iterator

from strixwizard.checking.declare import node_check, passed, skipped, verdict, warned
from strixwizard.facts import NodeFacts
from strixwizard.facts.bond import PUBLISHED_TCP_REORDERING
from strixwizard.facts.verbs_providers import NhiGeneration, nhi_generation
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


def _nhi_said(node: NodeFacts, address: str | None) -> tuple[str, NhiGeneration | None]:
    """`on NHI ADDR (ID, USB4 vN, G Gb/s)`, and the generation when the PCI id is known."""
    pci = node.pci_device(address)
    if pci is None:
        return "on no PCI function found", None
    generation = nhi_generation(pci)
    if generation is None:
        return f"on {pci.address} ({pci.ids}: its USB4 generation is not known here)", None
    return (f"on NHI {pci.address} ({pci.ids}, USB4 v{generation.usb4_version}, "
            f"{generation.gbps} Gb/s)"), generation


def _unloaded(node: NodeFacts, name: str) -> list[str]:
    """The libibverbs warnings that explain why `name` was not opened."""
    lines = [w.line for w in node.verbs.warnings
             if w.kind == "load" or (w.device_path or "").endswith(f"/{name}")]
    return lines


@node_check("usb4.rdma_provider")
def rdma_provider(node: NodeFacts, site: Site) -> Iterator[Finding]:
    """Each USB4 verbs device: opened by libibverbs (a provider for this rdma-core), enough QPs
    for llama.cpp RPC, and an NHI whose generation matches the name; one verdict line each."""
    devices = [d for d in node.rdma if d.kind == "usb4"]
    if not devices:
        yield skipped(node.name, "no USB4 verbs device (usb4_rdma*)")
        return
    view = node.verbs
    for device in devices:
        entity = f"{node.name}/{device.name}"
        where, generation = _nhi_said(node, device.via_pci)
        problems: list[str] = []
        llama = "yes"
        if view.max_qp is None:
            qp = f"max_qp not known ({view.why_unknown})"
        elif device.name not in view.max_qp:
            qp = "not opened by libibverbs"
            said = _unloaded(node, device.name)
            problems.append(
                "libibverbs did not open it, so no verbs program sees it"
                + (f"; it said: {' | '.join(said)}" if said else "")
                + ". A provider built for another rdma-core is skipped with only that warning: "
                "libibverbs looks for lib<name>-rdmav<N>.so of its own provider ABI N "
                "(libibverbs/dynamic_driver.c load_driver), and a package built for Ubuntu "
                "24.04 installs -rdmav34 where rdma-core 61 wants -rdmav59 "
                "(hellas-ai/thunderbolt-ibverbs#74). Install the provider built for this "
                "node's rdma-core.")
            llama = "no (the device is not opened: TCP)"
        else:
            max_qp = view.max_qp[device.name]
            qp = f"max_qp {max_qp}" if max_qp is not None else "max_qp not printed"
            if max_qp is not None and max_qp < usb4net.LLAMA_MIN_QP:
                problems.append(
                    f"max_qp {max_qp}: a usb4_rdma device advertising max_qp=1 could not create "
                    f"one RC QP (`ibv_rc_pingpong`: Couldn't create QP, {usb4net.MAX_QP_SOURCE}); "
                    "llama.cpp's transport needs one RC QP per connection and stays on TCP "
                    f"without it ({usb4net.LLAMA_TRANSPORT_SOURCE}). Bind the provider to the "
                    "device the published run used (the bridge-bound usb4_rdma devices advertised "
                    "256).")
                llama = f"no (max_qp {max_qp}: no RC QP)"
        if "tb5" in device.name.lower() and generation is not None and generation.usb4_version < 2:
            problems.append(
                f"named TB5 but {where}: it runs at that controller's USB4 v1 rate, 2 x 20 Gb/s "
                f"at best, not Thunderbolt 5's 80 Gb/s ({generation.said}).")
        verdict_line = (
            f"llama.cpp RPC: {llama}"
            + ("; one RC QP per connection: a worker serves one client at a time, the head "
               "holds one per worker" if llama == "yes" else "")
            + f" (GGML_RDMA_DEV={device.name}). {usb4net.RCCL_MEASURED}.")
        observed = f"{device.name} {where}, {qp}"
        if problems:
            yield warned(entity, observed, "opened by libibverbs, max_qp >= 2, a name its NHI "
                         "matches", " ".join([*problems, verdict_line]), fixable=False)
        else:
            yield passed(entity, observed, "opened by libibverbs, max_qp >= 2", verdict_line)

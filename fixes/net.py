"""net.mtu: the fabric MTU from site.yaml on every fabric interface, both ends of a link at once."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from fixes.declare import fix
from fixes.steps import command_step, file_step, mtu_step, unit_steps
from strixwizard.facts import NodeFacts
from strixwizard.facts.persistence import NETWORKD_DIR, NM_CONNECTION_MTU
from strixwizard.fixing.context import PlanContext
from strixwizard.fixing.model import BEFORE, Plan, Step
from strixwizard.topology import MISMATCH, FabricPort, in_use
from strixwizard.vendors import by_transport

MTU_DROP_IN = "90-strixwizard-mtu.conf"


def _persist_mtu(node: NodeFacts, netdev: str, mtu: int) -> tuple[list[Step], str]:
    facts = node.persistence
    connection = (facts.nm_connections or {}).get(netdev)
    if connection is not None:
        read = NM_CONNECTION_MTU.command(connection=connection)
        step = command_step(
            target=f"NetworkManager connection {connection!r}",
            summary=f"store MTU {mtu} in NetworkManager connection {connection!r}",
            argv=("nmcli", "connection", "modify", "id", connection, "802-3-ethernet.mtu", str(mtu)),
            undo_argv=("nmcli", "connection", "modify", "id", connection, "802-3-ethernet.mtu",
                       BEFORE),
            read_argv=read, parse="nm.mtu", before=None, after=str(mtu), before_known=False,
        )
        step = replace(step, persistence="networkmanager")
        return [step], f"NetworkManager connection {connection!r} keeps MTU {mtu}"
    network_file = facts.networkd_files.get(netdev)
    base = (network_file or "").rsplit("/", 1)[-1]
    if base.endswith(".network") and base != ".network":  # networkd reads `<file>.d/` drop-ins only
        path = f"{NETWORKD_DIR}/{base}.d/{MTU_DROP_IN}"
        content = f"# Written by strixwizard (fix net.mtu)\n[Link]\nMTUBytes={mtu}\n"
        current = facts.file(path)
        steps = [] if current == content else [file_step(
            path, f"systemd-networkd drop-in for {base}: MTUBytes={mtu}", current, content,
            persistence="networkd")]
        return steps, f"systemd-networkd drop-in {path} (read at the next `networkctl reload` or boot)"
    return unit_steps(node, "net.mtu", netdev, f"MTU {mtu} on {netdev}",
                      [("ip", "link", "set", "dev", netdev, "mtu", str(mtu))], netdev)


def _plan_port(ctx: PlanContext, port: FabricPort, group: str | None) -> Plan | None:
    wanted = ctx.site.fabric.mtu
    netdev = port.netdev
    if netdev.mtu == wanted:
        return None
    entity = port.label
    if netdev.mtu is None:
        return Plan("net.mtu", port.node.name, entity, notes=(
            f"MTU of {netdev.name} unknown (not captured): not planned",), group=group)
    if netdev.max_mtu is not None and wanted > netdev.max_mtu:
        mode = netdev.ipoib_mode or "datagram"
        return Plan("net.mtu", port.node.name, entity, notes=(
            f"{netdev.name} is IPoIB in {mode} mode, which carries at most MTU {netdev.max_mtu}: "
            f"MTU {wanted} cannot apply, not planned",), group=group)
    steps = [mtu_step(netdev.name, netdev.mtu, wanted)]
    persistence = "runtime only (--runtime-only)"
    if ctx.persist:
        more, persistence = _persist_mtu(port.node, netdev.name, wanted)
        steps += more
    notes: list[str] = []
    if port.port is not None:
        notes.append(f"RDMA QPs already open on {port.port.name} keep their old path MTU: restart "
                     "RDMA jobs (RCCL, vLLM workers) afterwards")
    return Plan("net.mtu", port.node.name, entity, tuple(steps), tuple(notes), persistence, group)


@fix("net.mtu",
     summary="Set the fabric interface MTU to the site's value (9000) persistently, on both ends "
     "of each link",
     reversible=True, reboot=False, writes=(f"{NETWORKD_DIR}/*.network.d/{MTU_DROP_IN}",), unit=True,
     persists="the interface's NetworkManager connection stores it (nmcli); else a networkd "
     "drop-in next to its .network file; else a systemd unit sets it at boot")
def plan_mtu(ctx: PlanContext) -> Iterator[Plan]:
    """Both ends of every Ethernet/RoCE fabric link to the site's MTU; a lone RoCE interface in
    use as well. thunderbolt-net and InfiniBand links are left alone."""
    done: set[tuple[str, str]] = set()
    for link in ctx.topology.links:
        ends = [end for end in link.ends if end.netdev.mtu != ctx.site.fabric.mtu]
        if not ends or not by_transport(link.transport).site_mtu or link.transport == MISMATCH:
            # thunderbolt-net keeps its 65520 MTU (TCP only); on InfiniBand the subnet manager
            # sets the port MTU and IPoIB's netdev MTU follows its mode, not the site's value;
            # a link-layer mismatch carries nothing, whatever the MTU (link.link_layer)
            for end in link.ends:
                done.add((end.node.name, end.netdev.name))
            continue
        for end in link.ends:
            done.add((end.node.name, end.netdev.name))
            plan = _plan_port(ctx, end, link.id)
            if plan is not None:
                yield plan
    for node in ctx.nodes:
        for port in ctx.topology.fabric.get(node.name, ()):
            key = (node.name, port.netdev.name)
            if (key in done or port.port is None or not in_use(port) or ctx.link_of(port)
                    or port.netdev.is_infiniband):
                continue
            plan = _plan_port(ctx, port, None)
            if plan is not None:
                yield plan

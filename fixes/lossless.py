"""Lossless RoCE on each RoCE interface: firmware LLDP off (E810), PFC on the site's priority
only with that priority in a traffic class of its own (ETS), link-level pause off, DSCP
classification with the RoCE DSCP mapped to that priority.

The RoCE DSCP for priority P is 8·P + 2 (26 for priority 3: NVIDIA's RoCE default,
which the usual DSCP>>3 table also maps to 3); `rdma.roce_v2_default` sets the
matching rdma_cm ToS, DSCP << 2.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from checks.lossless import roce_fabric
from fixes.steps import command_step, unit_steps
from strixwizard.facts import NodeFacts
from strixwizard.facts.dcb import dcb_argv
from strixwizard.facts.ethtool import pause_argv, priv_flags_argv
from strixwizard.fixing.context import PlanContext
from strixwizard.fixing.model import Plan, Step
from strixwizard.fixing.readers import pfc_value, prio_tc_value
from strixwizard.topology import FabricPort

FW_LLDP = "fw-lldp-agent"


def roce_dscp(priority: int) -> int:
    return 8 * priority + 2


def _family(port: FabricPort) -> str | None:
    nic = port.node.nic_of(port.netdev)
    return nic.family if nic else None


def _ports(ctx: PlanContext) -> Iterator[tuple[NodeFacts, FabricPort, str | None]]:
    for node in ctx.nodes:
        for port in roce_fabric(node, ctx.site):
            link = ctx.link_of(port)
            yield node, port, link.id if link else None


def _persisted(ctx: PlanContext, node: NodeFacts, fix_id: str, entity: str, description: str,
               steps: list[Step], netdev: str) -> tuple[list[Step], str]:
    if not ctx.persist:
        return steps, "runtime only (--runtime-only)"
    commands = [s.argv for s in steps if s.argv]
    more, sentence = unit_steps(node, fix_id, entity, description, commands, netdev)
    return steps + more, sentence


def plan_fw_lldp_off(ctx: PlanContext) -> Iterator[Plan]:
    """E810: turn the firmware LLDP agent off so the DCB set from Linux is not overridden."""
    for node, port, group in _ports(ctx):
        if _family(port) != "e810":
            continue
        name = port.netdev.name
        flags = node.priv_flags(name)
        if flags is None or FW_LLDP not in flags or not flags[FW_LLDP]:
            continue
        step = command_step(
            name, f"turn the E810 firmware LLDP agent off on {name}",
            ("ethtool", "--set-priv-flags", name, FW_LLDP, "off"),
            ("ethtool", "--set-priv-flags", name, FW_LLDP, "on"),
            priv_flags_argv(name), f"ethtool.flag:{FW_LLDP}", "on", "off")
        yield Plan("e810.fw_lldp_off", node.name, port.label, (step,), notes=(
            "the port stops answering the switch's DCBX: set PFC from Linux on both ends "
            "(dcb.pfc)",), persistence="the E810 firmware keeps this flag across reboots (NVM)",
            group=group)


def _connectx_note(port: FabricPort, what: str) -> tuple[str, ...]:
    if _family(port) != "connectx":
        return ()
    return (f"ConnectX: strixwizard uses upstream `dcb` (mlx5 implements DCB netlink); with "
            f"MLNX_OFED tools the equivalent is `mlnx_qos -i {port.netdev.name} {what}`",)


def plan_pfc(ctx: PlanContext) -> Iterator[Plan]:
    """PFC on the site's priority only; that priority alone in traffic class 1 (ETS prio-tc)."""
    wanted = ctx.site.fabric.pfc_priority
    for node, port, group in _ports(ctx):
        name = port.netdev.name
        dcb = node.dcb(name)
        if dcb.pfc_enabled is None:
            yield Plan("dcb.pfc", node.name, port.label, notes=(
                f"not automated: PFC state unknown ({dcb.pfc_note}); set PFC on priority {wanted} "
                "with the NIC vendor's tool",), group=group)
            continue
        steps: list[Step] = []
        if dcb.pfc_enabled != (wanted,):
            before, after = pfc_value(dcb.pfc_enabled), pfc_value((wanted,))
            steps.append(command_step(
                name, f"PFC on priority {wanted} only on {name}",
                ("dcb", "pfc", "set", "dev", name, "prio-pfc", *after.split()),
                ("dcb", "pfc", "set", "dev", name, "prio-pfc", *before.split()),
                dcb_argv("pfc", name), "dcb.pfc", before, after))
        prio_tc = dcb.prio_tc
        if prio_tc is not None and len(prio_tc) == 8:
            shared = [p for p in range(8) if p != wanted and prio_tc[p] == prio_tc[wanted]]
            if shared:
                new = [1 if p == wanted else 0 for p in range(8)]
                before, after = prio_tc_value(prio_tc), prio_tc_value(new)
                steps.append(command_step(
                    name, f"ETS: priority {wanted} alone in traffic class 1 on {name}",
                    ("dcb", "ets", "set", "dev", name, "prio-tc", *after.split()),
                    ("dcb", "ets", "set", "dev", name, "prio-tc", *before.split()),
                    dcb_argv("ets", name), "dcb.prio_tc", before, after))
        if not steps:
            continue
        pfc_list = ",".join("1" if p == wanted else "0" for p in range(8))
        notes = _connectx_note(port, f"--pfc {pfc_list}")
        if _family(port) == "e810":
            notes += ("E810 allows one PFC traffic class; ETS bandwidth shares (tc-bw) are left "
                      "as the driver has them",)
        steps, persistence = _persisted(ctx, node, "dcb.pfc", name, f"PFC on priority {wanted}",
                                        steps, name)
        yield Plan("dcb.pfc", node.name, port.label, tuple(steps), notes, persistence, group)


def plan_pause_off(ctx: PlanContext) -> Iterator[Plan]:
    """Link-level pause off where PFC is (or is about to be) on: the two conflict."""
    for node, port, group in _ports(ctx):
        name = port.netdev.name
        pause = node.pause(name)
        if pause is None or not pause.any_on or node.dcb(name).pfc_enabled is None:
            continue
        before = f"rx {'on' if pause.rx else 'off'} tx {'on' if pause.tx else 'off'}"
        step = command_step(
            name, f"link-level pause off on {name}",
            ("ethtool", "-A", name, "rx", "off", "tx", "off"),
            ("ethtool", "-A", name, *before.split()), pause_argv(name), "ethtool.pause", before,
            "rx off tx off")
        steps, persistence = _persisted(ctx, node, "ethtool.pause_off", name,
                                        f"link-level pause off on {name}", [step], name)
        yield Plan("ethtool.pause_off", node.name, port.label, tuple(steps), (), persistence, group)


def plan_trust_dscp(ctx: PlanContext) -> Iterator[Plan]:
    """Classify by DSCP (`dcb apptrust`) and map the RoCE DSCP to the PFC priority (`dcb app`)."""
    priority = ctx.site.fabric.pfc_priority
    dscp = roce_dscp(priority)
    trust = ctx.site.fabric.trust
    for node, port, group in _ports(ctx):
        name = port.netdev.name
        dcb = node.dcb(name)
        steps: list[Step] = []
        notes: list[str] = []
        if dcb.trust is not None and (not dcb.trust or dcb.trust[0] != trust):
            before = " ".join(dcb.trust)
            step = command_step(
                name, f"classify by {trust} first on {name}",
                ("dcb", "apptrust", "set", "dev", name, "order", trust),
                ("dcb", "apptrust", "set", "dev", name, "order", *before.split()),
                dcb_argv("apptrust", name), "dcb.apptrust", before, trust)
            if not before:
                step = replace(step, reversible=False)
                notes.append("the trust order was empty before; `dcb apptrust` cannot set an empty "
                             "order back, so this step is not reversible")
            steps.append(step)
        elif dcb.trust is None and _family(port) == "e810":
            notes.append("ice has no `dcb apptrust`: it switches to DSCP (L3) QoS by itself once a "
                         "DSCP app entry exists, which this plan adds")
        elif dcb.trust is None:
            notes.append(f"not automated: trust mode unknown ({dcb.trust_note}); "
                         + (f"with MLNX_OFED: `mlnx_qos -i {name} --trust {trust}`"
                            if _family(port) == "connectx" else "upgrade iproute2 for `dcb apptrust`"))
        if dcb.dscp_prio is not None:
            current = dict(dcb.dscp_prio).get(dscp)
            if current != priority:
                undo = (("dcb", "app", "del", "dev", name, "dscp-prio", f"{dscp}:{priority}")
                        if current is None else
                        ("dcb", "app", "replace", "dev", name, "dscp-prio", f"{dscp}:{current}"))
                steps.append(command_step(
                    name, f"map DSCP {dscp} (RoCE) to priority {priority} on {name}",
                    ("dcb", "app", "replace", "dev", name, "dscp-prio", f"{dscp}:{priority}"),
                    undo, dcb_argv("app", name), f"dcb.app:{dscp}",
                    None if current is None else str(current), str(priority)))
        if not steps:
            if notes and dcb.trust is None and _family(port) != "e810":
                yield Plan("dcb.trust_dscp", node.name, port.label, notes=tuple(notes), group=group)
            continue
        steps, persistence = _persisted(ctx, node, "dcb.trust_dscp", name,
                                        f"DSCP trust, DSCP {dscp} to priority {priority}", steps,
                                        name)
        yield Plan("dcb.trust_dscp", node.name, port.label, tuple(steps), tuple(notes), persistence,
                   group)

"""Lossless RoCE on each RoCE interface: firmware LLDP off (where the NIC family has such an
agent), PFC on the site's priority only with that priority in a traffic class of its own (ETS),
link-level pause off, DSCP classification with the RoCE DSCP mapped to that priority.

What differs between NIC families (a firmware LLDP flag, no `dcb apptrust`, a PFC traffic
class limit, a vendor QoS tool) comes from the vendor modules (`strixwizard.vendors`).

The RoCE DSCP for priority P is 8·P + 2 (26 for priority 3: NVIDIA's RoCE default,
which the usual DSCP>>3 table also maps to 3); `rdma.roce_v2_default` sets the
matching rdma_cm ToS, DSCP << 2.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from checks.scope import roce_fabric, vendor_of
from fixes.declare import fix
from fixes.steps import command_step, unit_steps
from strixwizard.facts import NodeFacts
from strixwizard.facts.dcb import dcb_argv
from strixwizard.facts.ethtool import pause_argv, priv_flags_argv
from strixwizard.fixing.context import PlanContext
from strixwizard.fixing.model import Plan, Step
from strixwizard.fixing.readers import pfc_value, prio_tc_value
from strixwizard.site import Fabric
from strixwizard.topology import FabricPort
from strixwizard.vendors import Vendor


def roce_dscp(priority: int) -> int:
    """The RoCE DSCP of a PFC priority (`Fabric.roce_dscp`, which checks use as well)."""
    return Fabric(pfc_priority=priority).roce_dscp


def _ports(ctx: PlanContext) -> Iterator[tuple[NodeFacts, FabricPort, str | None]]:
    for node in ctx.nodes:
        for port in roce_fabric(node, ctx.site):
            link = ctx.link_of(port)
            yield node, port, link.id if link else None


def _persisted(ctx: PlanContext, node: NodeFacts, fix_id: str, description: str,
               steps: list[Step], netdev: str) -> tuple[list[Step], str]:
    if not ctx.persist:
        return steps, "runtime only (--runtime-only)"
    commands = [s.argv for s in steps if s.argv]
    more, sentence = unit_steps(node, fix_id, netdev, description, commands, netdev)
    return steps + more, sentence


def _dcb_set(netdev: str, summary: str, what: str, key: str, parse: str, before: str,
             after: str) -> Step:
    """`dcb WHAT set dev NETDEV KEY AFTER...`, undone by setting BEFORE back."""
    return command_step(
        netdev, summary,
        ("dcb", what, "set", "dev", netdev, key, *after.split()),
        ("dcb", what, "set", "dev", netdev, key, *before.split()),
        dcb_argv(what, netdev), parse, before, after)


def _tool_note(vendor: Vendor, netdev: str, args: str) -> tuple[str, ...]:
    """Where the family has a QoS tool of its own: its equivalent of what the plan does."""
    command = vendor.qos.tool_command(netdev, args)
    if not command:
        return ()
    return (f"{vendor.short}: strixwizard uses upstream `dcb` ({vendor.netdev_driver} implements "
            f"DCB netlink); with {vendor.qos.tool_package} tools the equivalent is `{command}`",)


@fix("dcb.fw_lldp_off",
     summary="Turn off the E810 firmware LLDP agent (ethtool --set-priv-flags IF fw-lldp-agent "
     "off) so Linux owns DCB",
     reversible=True, reboot=False,
     persists="the E810 firmware keeps the flag across reboots (in its NVM): no file is written")
def plan_fw_lldp_off(ctx: PlanContext) -> Iterator[Plan]:
    """A NIC family with a firmware LLDP agent (E810): turn it off so the DCB set from Linux is
    not overridden."""
    for node, port, group in _ports(ctx):
        vendor = vendor_of(port)
        flag = vendor.qos.fw_lldp_flag
        name = port.netdev.name
        flags = node.priv_flags(name)
        if flag is None or flags is None or not flags.get(flag):
            continue
        step = command_step(
            name, f"turn the {vendor.short} firmware LLDP agent off on {name}",
            ("ethtool", "--set-priv-flags", name, flag, "off"),
            ("ethtool", "--set-priv-flags", name, flag, "on"),
            priv_flags_argv(name), f"ethtool.flag:{flag}", "on", "off")
        yield Plan("dcb.fw_lldp_off", node.name, port.label, (step,), notes=(
            "the port stops answering the switch's DCBX: set PFC from Linux on both ends "
            "(dcb.pfc)",), persistence=f"the {vendor.short} firmware keeps this flag across "
            "reboots (NVM)", group=group)


@fix("dcb.pfc",
     summary="Enable PFC on the site's priority only (dcb pfc set dev IF prio-pfc all:off P:on) "
     "with that priority in a traffic class of its own (dcb ets prio-tc), on both ends of each "
     "link",
     reversible=True, reboot=False, unit=True)
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
            steps.append(_dcb_set(name, f"PFC on priority {wanted} only on {name}", "pfc",
                                  "prio-pfc", "dcb.pfc", pfc_value(dcb.pfc_enabled),
                                  pfc_value((wanted,))))
        prio_tc = dcb.prio_tc
        if prio_tc is not None and len(prio_tc) == 8:
            shared = [p for p in range(8) if p != wanted and prio_tc[p] == prio_tc[wanted]]
            if shared:
                new = [1 if p == wanted else 0 for p in range(8)]
                steps.append(_dcb_set(name, f"ETS: priority {wanted} alone in traffic class 1 on "
                                      f"{name}", "ets", "prio-tc", "dcb.prio_tc",
                                      prio_tc_value(prio_tc), prio_tc_value(new)))
        if not steps:
            continue
        vendor = vendor_of(port)
        pfc_list = ",".join("1" if p == wanted else "0" for p in range(8))
        notes = _tool_note(vendor, name, f"--pfc {pfc_list}")
        if vendor.qos.max_pfc_tcs is not None:
            limit = vendor.qos.max_pfc_tcs
            count = "one PFC traffic class" if limit == 1 else f"{limit} PFC traffic classes"
            notes += (f"{vendor.short} allows {count}; ETS bandwidth shares (tc-bw) are left as "
                      "the driver has them",)
        steps, persistence = _persisted(ctx, node, "dcb.pfc", f"PFC on priority {wanted}", steps,
                                        name)
        yield Plan("dcb.pfc", node.name, port.label, tuple(steps), notes, persistence, group)


@fix("ethtool.pause_off",
     summary="Turn link-level pause off where PFC is used (ethtool -A IF rx off tx off)",
     reversible=True, reboot=False, unit=True)
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
        steps, persistence = _persisted(ctx, node, "ethtool.pause_off",
                                        f"link-level pause off on {name}", [step], name)
        yield Plan("ethtool.pause_off", node.name, port.label, tuple(steps), (), persistence, group)


@fix("dcb.trust_dscp",
     summary="Trust DSCP for classification (dcb apptrust set dev IF order dscp) and map the "
     "RoCE DSCP to the PFC priority (dcb app dscp-prio), on both ends",
     reversible=True, reboot=False, unit=True)
def plan_trust_dscp(ctx: PlanContext) -> Iterator[Plan]:
    """Classify by DSCP (`dcb apptrust`) and map the RoCE DSCP to the PFC priority (`dcb app`)."""
    priority = ctx.site.fabric.pfc_priority
    dscp = roce_dscp(priority)
    trust = ctx.site.fabric.trust
    for node, port, group in _ports(ctx):
        name = port.netdev.name
        dcb = node.dcb(name)
        vendor = vendor_of(port)
        steps: list[Step] = []
        notes: list[str] = []
        if dcb.trust is not None and (not dcb.trust or dcb.trust[0] != trust):
            before = " ".join(dcb.trust)
            step = _dcb_set(name, f"classify by {trust} first on {name}", "apptrust", "order",
                            "dcb.apptrust", before, trust)
            if not before:
                step = replace(step, reversible=False)
                notes.append("the trust order was empty before; `dcb apptrust` cannot set an empty "
                             "order back, so this step is not reversible")
            steps.append(step)
        elif dcb.trust is None and vendor.qos.trust_by_dscp_entry:
            notes.append(f"{vendor.netdev_driver} has no `dcb apptrust`: it switches to DSCP (L3) "
                         "QoS by itself once a DSCP app entry exists, which this plan adds")
        elif dcb.trust is None:
            tool = vendor.qos.tool_command(name, f"--trust {trust}")
            notes.append(f"not automated: trust mode unknown ({dcb.trust_note}); "
                         + (f"with {vendor.qos.tool_package}: `{tool}`" if tool
                            else "upgrade iproute2 for `dcb apptrust`"))
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
            if notes and dcb.trust is None and not vendor.qos.trust_by_dscp_entry:
                yield Plan("dcb.trust_dscp", node.name, port.label, notes=tuple(notes), group=group)
            continue
        steps, persistence = _persisted(ctx, node, "dcb.trust_dscp",
                                        f"DSCP trust, DSCP {dscp} to priority {priority}", steps,
                                        name)
        yield Plan("dcb.trust_dscp", node.name, port.label, tuple(steps), tuple(notes), persistence,
                   group)

"""RDMA device modes: RoCE v2 (and the PFC priority's ToS) for rdma_cm; E810 in RoCE, not iWARP."""

from __future__ import annotations

from collections.abc import Iterator

from fixes.lossless import roce_dscp
from fixes.steps import command_step, file_step, mkdir_step, unit_steps, write_step
from strixwizard.facts import NodeFacts
from strixwizard.facts.devlink import DEVLINK_PARAMS
from strixwizard.fixing.context import PlanContext
from strixwizard.fixing.model import Plan, Step
from strixwizard.topology import fabric_ports, in_use

RDMA_CM = "/sys/kernel/config/rdma_cm"
TMPFILES_DIR = "/etc/strixwizard"
MODPROBE_FILE = "/etc/modprobe.d/strixwizard-irdma.conf"


def plan_roce_v2_default(ctx: PlanContext) -> Iterator[Plan]:
    """configfs rdma_cm/<dev>: default_roce_mode "RoCE v2" and default_roce_tos = DSCP << 2."""
    tos = roce_dscp(ctx.site.fabric.pfc_priority) << 2
    for node in ctx.nodes:
        for fabric in fabric_ports(node, ctx.site):
            port, device = fabric.port, fabric.device
            if (port is None or device is None or not port.is_ethernet or device.is_iwarp
                    or not in_use(fabric)):
                continue
            base = f"{RDMA_CM}/{port.device}"
            attr = f"{base}/ports/{port.number}"
            mode = port.default_roce_mode
            current_tos = node.persistence.roce_tos.get(f"{port.device}/{port.number}")
            steps: list[Step] = []
            if mode is None:
                steps.append(mkdir_step(base, f"create configfs rdma_cm/{port.device}"))
            if (mode or "").strip() != "RoCE v2":
                steps.append(write_step(f"{attr}/default_roce_mode",
                                        f"rdma_cm default mode RoCE v2 on {port.name}",
                                        None if mode is None else mode.strip(), "RoCE v2"))
            # an existing directory whose ToS was not captured: unknown, left alone
            if current_tos != tos and (mode is None or current_tos is not None):
                steps.append(write_step(f"{attr}/default_roce_tos",
                                        f"rdma_cm ToS {tos} (DSCP {tos >> 2}, priority "
                                        f"{ctx.site.fabric.pfc_priority}) on {port.name}",
                                        None if current_tos is None else str(current_tos), str(tos)))
            if not steps:
                continue
            link = ctx.link_of(fabric)
            persistence = "runtime only (--runtime-only)"
            if ctx.persist:
                steps, persistence = _persist_configfs(ctx, node, port.device, port.number,
                                                       fabric.netdev.name, tos, steps)
            yield Plan("rdma.roce_v2_default", node.name, f"{node.name}:{port.name}", tuple(steps),
                       notes=("only new rdma_cm connections use it (rping, perftest -R, llama.cpp "
                              "RPC); RCCL sets its own traffic class (NCCL_IB_TC)",),
                       persistence=persistence, group=link.id if link else None)


def _persist_configfs(ctx: PlanContext, node: NodeFacts, device: str, number: int, netdev: str,
                      tos: int, steps: list[Step]) -> tuple[list[Step], str]:
    facts = node.persistence
    if not facts.systemd:
        return steps, f"runtime only: init is {facts.init or 'unknown'!r}, not systemd"
    path = f"{TMPFILES_DIR}/strixwizard-rdma_cm-{device}.conf"
    attr = f"{RDMA_CM}/{device}/ports/{number}"
    content = ("# Written by strixwizard (fix rdma.roce_v2_default); read by its systemd unit\n"
               f"d {RDMA_CM}/{device} - - - -\n"
               f"w {attr}/default_roce_mode - - - - RoCE v2\n"
               f"w {attr}/default_roce_tos - - - - {tos}\n")
    more: list[Step] = []
    if facts.file(path) != content:
        more.append(file_step(path, f"tmpfiles rules for rdma_cm/{device}", facts.file(path),
                              content, persistence="systemd"))
    unit, sentence = unit_steps(node, "rdma.roce_v2_default", device, f"rdma_cm RoCE v2 on {device}",
                                [("systemd-tmpfiles", "--create", path)], netdev)
    return steps + more + unit, sentence


def plan_enable_roce(ctx: PlanContext) -> Iterator[Plan]:
    """E810 whose irdma came up in iWARP: devlink enable_roce (in-tree), else irdma roce_ena=1."""
    for node in ctx.nodes:
        params = node.devlink or {}
        for nic in node.nics:
            if nic.family != "e810":
                continue
            device = next((d for d in node.rdma if d.pci_address == nic.address), None)
            values = params.get(nic.address, {})
            roce = values.get("enable_roce")
            if device is None or not (device.is_iwarp or roce is False):
                continue
            entity = f"{node.name}/{nic.address}"
            handle = f"pci/{nic.address}"
            notes = ["irdma re-creates the RDMA device: RDMA jobs on this port are cut, and the "
                     "device may get a new name"]
            steps: list[Step] = []
            if "enable_roce" in values:
                if values.get("enable_iwarp") is True:
                    steps.append(_devlink_step(handle, "enable_iwarp", "true", "false"))
                steps.append(_devlink_step(handle, "enable_roce", str(roce).lower(), "true"))
                persistence = "runtime only (--runtime-only)"
                if ctx.persist:
                    more, persistence = unit_steps(
                        node, "e810.enable_roce", nic.address, f"RoCE on E810 {nic.address}",
                        [s.argv for s in steps], None)
                    steps += more
            else:
                content = "# Written by strixwizard (fix e810.enable_roce)\noptions irdma roce_ena=1\n"
                current = node.persistence.file(MODPROBE_FILE)
                if current != content:
                    steps.append(file_step(MODPROBE_FILE, "irdma option roce_ena=1 (Intel's "
                                           "out-of-tree driver)", current, content, "modprobe.d",
                                           reboot=True))
                persistence = f"{MODPROBE_FILE} (modprobe.d)"
                notes.append("not automated: reload irdma to apply (`modprobe -r irdma && modprobe "
                             "irdma`) or reboot")
            yield Plan("e810.enable_roce", node.name, entity, tuple(steps), tuple(notes), persistence)


def _devlink_step(handle: str, name: str, before: str, after: str) -> Step:
    return command_step(
        handle, f"devlink {name} {after} on {handle}",
        ("devlink", "dev", "param", "set", handle, "name", name, "value", after, "cmode", "runtime"),
        ("devlink", "dev", "param", "set", handle, "name", name, "value", before, "cmode", "runtime"),
        DEVLINK_PARAMS, f"devlink:{handle}/{name}", before, after)

"""RDMA device modes: RoCE v2 (and the PFC priority's ToS) for rdma_cm; E810 in RoCE, not iWARP."""

from __future__ import annotations

import re
from collections.abc import Iterator

from checks.scope import roce_fabric
from fixes.declare import fix
from fixes.steps import (
    command_step,
    file_step,
    mkdir_step,
    no_systemd,
    unit_steps,
    wait_for_path_argv,
    write_step,
)
from strixwizard.facts import NodeFacts
from strixwizard.facts.devlink import DEVLINK_PARAMS
from strixwizard.facts.persistence import MODPROBE_DIR
from strixwizard.facts.rdma import RDMA_CM
from strixwizard.fixing.context import PlanContext
from strixwizard.fixing.model import Plan, Step
from strixwizard.places import NODE_CONFIG_DIR

TMPFILES_DIR = NODE_CONFIG_DIR


@fix("rdma.roce_v2_default",
     summary="Create configfs rdma_cm/<dev> and set ports/<n>/default_roce_mode to RoCE v2 and "
     "default_roce_tos to the RoCE DSCP of the PFC priority",
     reversible=True, reboot=False, writes=(f"{TMPFILES_DIR}/strixwizard-rdma_cm-*.conf",),
     unit=True, persists="configfs is lost at reboot: a systemd unit runs systemd-tmpfiles on a "
     "rule file at boot, which re-creates the settings (systemd nodes only)")
def plan_roce_v2_default(ctx: PlanContext) -> Iterator[Plan]:
    """configfs rdma_cm/<dev>: default_roce_mode "RoCE v2" and default_roce_tos = DSCP << 2.

    Plans what `rdma.roce_v2_default` reports: a mode other than RoCE v2, a ToS whose DSCP
    (its upper six bits) is not the PFC priority's — the low two bits are ECN, so 106 (DSCP 26
    with ECT(0)) is as right as 104. A directory not created yet hides both values, so it is
    created only when the fix is asked for by name (`--only rdma.roce_v2_default`)."""
    dscp = ctx.site.fabric.roce_dscp
    tos = dscp << 2
    for node in ctx.nodes:
        for fabric in roce_fabric(node, ctx.site):
            port = fabric.port
            assert port is not None
            base = f"{RDMA_CM}/{port.device}"
            attr = f"{base}/ports/{port.number}"
            mode = port.default_roce_mode
            current_tos = node.persistence.roce_tos.get(f"{port.device}/{port.number}")
            if mode is None and "rdma.roce_v2_default" not in ctx.asked:
                continue  # the check skips: nothing it reports to cure
            steps: list[Step] = []
            if mode is None:
                steps.append(mkdir_step(base, f"create configfs rdma_cm/{port.device}"))
            if (mode or "").strip() != "RoCE v2":
                # a directory this fix creates shows the device's own values, which the kernel
                # keeps after the directory is gone: read them after the mkdir, restore them
                steps.append(write_step(f"{attr}/default_roce_mode",
                                        f"rdma_cm default mode RoCE v2 on {port.name}",
                                        None if mode is None else mode.strip(), "RoCE v2",
                                        before_known=mode is not None))
            # an existing directory whose ToS was not captured: unknown, left alone
            if mode is None or (current_tos is not None and current_tos >> 2 != dscp):
                steps.append(write_step(f"{attr}/default_roce_tos",
                                        f"rdma_cm ToS {tos} (DSCP {tos >> 2}, priority "
                                        f"{ctx.site.fabric.pfc_priority}) on {port.name}",
                                        None if current_tos is None else str(current_tos), str(tos),
                                        before_known=mode is not None))
            if not steps:
                continue
            link = ctx.link_of(fabric)
            persistence = "runtime only (--runtime-only)"
            if ctx.persist:
                # a ToS of the right DSCP stays as it is (its ECN bits included)
                kept = (current_tos if current_tos is not None and current_tos >> 2 == dscp
                        else tos)
                steps, persistence = _persist_configfs(ctx, node, port.device, port.number,
                                                       fabric.netdev.name, kept, steps)
            yield Plan("rdma.roce_v2_default", node.name, f"{node.name}:{port.name}", tuple(steps),
                       notes=("only new rdma_cm connections use it (rping, perftest -R, llama.cpp "
                              "RPC); RCCL sets its own traffic class (NCCL_IB_TC)",),
                       persistence=persistence, group=link.id if link else None)


_TMPFILES_PLAIN = re.compile(r"[A-Za-z0-9/_.:@+,=-]+")
_GLOB_SPECIAL = re.compile(r"([\\*?\[\]])")


def tmpfiles_path(path: str, glob: bool = False) -> str:
    """`path` as the path field of a tmpfiles.d(5) line: as is when plain, else double-quoted
    with `\\` and `"` escaped; `%` doubled either way (a specifier otherwise). `glob`: the line
    type reads its path as a shell glob (`w`), so `*?[]\\` are escaped first."""
    if _TMPFILES_PLAIN.fullmatch(path):
        return path
    if glob:
        path = _GLOB_SPECIAL.sub(r"\\\1", path)
    escaped = path.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")
    return f'"{escaped}"'


def _persist_configfs(ctx: PlanContext, node: NodeFacts, device: str, number: int, netdev: str,
                      tos: int, steps: list[Step]) -> tuple[list[Step], str]:
    facts = node.persistence
    if not facts.systemd:
        return steps, f"runtime only: {no_systemd(facts.init)}, so nothing re-applies it at boot"
    if not device.isprintable():
        return steps, (f"runtime only: the RDMA device name {device!r} cannot be written on a "
                       "tmpfiles.d line")
    path = f"{TMPFILES_DIR}/strixwizard-rdma_cm-{device}.conf"
    attr = f"{RDMA_CM}/{device}/ports/{number}"
    content = ("# Written by strixwizard (fix rdma.roce_v2_default); read by its systemd unit\n"
               f"d {tmpfiles_path(f'{RDMA_CM}/{device}')} - - - -\n"
               f"w {tmpfiles_path(f'{attr}/default_roce_mode', glob=True)} - - - - RoCE v2\n"
               f"w {tmpfiles_path(f'{attr}/default_roce_tos', glob=True)} - - - - {tos}\n")
    more: list[Step] = []
    if facts.file(path) != content:
        more.append(file_step(path, f"tmpfiles rules for rdma_cm/{device}", facts.file(path),
                              content, persistence="systemd"))
    unit, sentence = unit_steps(node, "rdma.roce_v2_default", device, f"rdma_cm RoCE v2 on {device}",
                                [wait_for_path_argv(f"/sys/class/infiniband/{device}"),
                                 ("systemd-tmpfiles", "--create", path)], netdev,
                                before_network=False)
    return steps + more + unit, sentence


@fix("roce.enable",
     summary="Switch E810 irdma to RoCE: devlink enable_roce true (runtime) or irdma roce_ena=1 "
     "for Intel's out-of-tree driver",
     reversible=True, reboot=False, writes=(f"{MODPROBE_DIR}/strixwizard-irdma.conf",), unit=True,
     persists="a systemd unit replays the in-tree driver's devlink setting at boot; the "
     "out-of-tree driver's option is a modprobe.d file, read when irdma loads")
def plan_enable_roce(ctx: PlanContext) -> Iterator[Plan]:
    """A NIC whose RDMA driver came up in iWARP (E810 irdma): its devlink RoCE parameter
    (in-tree driver), else its module option (out-of-tree)."""
    for node in ctx.nodes:
        params = node.devlink or {}
        for nic in node.nics:
            switch = nic.vendor.roce_switch
            if switch is None:
                continue
            device = next((d for d in node.rdma if d.pci_address == nic.address), None)
            values = params.get(nic.address, {})
            roce = values.get(switch.devlink_param)
            if device is None or not (device.is_iwarp or roce is False):
                continue
            entity = f"{node.name}/{nic.address}"
            handle = f"pci/{nic.address}"
            notes = [f"{switch.module} re-creates the RDMA device: RDMA jobs on this port are "
                     "cut, and the device may get a new name"]
            steps: list[Step] = []
            if switch.devlink_param in values:
                if values.get(switch.other_param) is True:
                    steps.append(_devlink_step(handle, switch.other_param, "true", "false"))
                steps.append(_devlink_step(handle, switch.devlink_param, str(roce).lower(), "true"))
                persistence = "runtime only (--runtime-only)"
                if ctx.persist:
                    more, persistence = unit_steps(
                        node, "roce.enable", nic.address,
                        f"RoCE on {nic.vendor.short} {nic.address}",
                        [wait_for_path_argv(f"/sys/bus/pci/devices/{nic.address}/driver"),
                         *(s.argv for s in steps)], None, before_network=False)
                    steps += more
            else:
                path = f"{MODPROBE_DIR}/strixwizard-{switch.module}.conf"
                content = (f"# Written by strixwizard (fix roce.enable)\n"
                           f"options {switch.module} {switch.module_option}\n")
                current = node.persistence.file(path)
                if current != content:
                    steps.append(file_step(path, f"{switch.module} option {switch.module_option} "
                                           "(the out-of-tree driver)", current, content,
                                           "modprobe.d", reboot=True))
                persistence = f"{path} (modprobe.d)"
                notes.append(f"not automated: reload {switch.module} to apply (`modprobe -r "
                             f"{switch.module} && modprobe {switch.module}`) or reboot")
            yield Plan("roce.enable", node.name, entity, tuple(steps), tuple(notes), persistence)


def _devlink_step(handle: str, name: str, before: str, after: str) -> Step:
    return command_step(
        handle, f"devlink {name} {after} on {handle}",
        ("devlink", "dev", "param", "set", handle, "name", name, "value", after, "cmode", "runtime"),
        ("devlink", "dev", "param", "set", handle, "name", name, "value", before, "cmode", "runtime"),
        DEVLINK_PARAMS, f"devlink:{handle}/{name}", before, after)

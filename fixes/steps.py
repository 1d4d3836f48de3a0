"""Step builders shared by the fixes, and how each change is made to survive a reboot.

Persistence, per node, from its facts (`NodeFacts.persistence`):
- MTU: the NetworkManager connection that manages the interface, else a
  systemd-networkd drop-in next to its .network file, else a systemd unit;
- DCB, ethtool, devlink and configfs settings: one systemd oneshot unit per
  fix and interface (`strixwizard-<fix>-<entity>.service`), enabled;
- no systemd: the change is runtime only, and the plan says so.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from strixwizard.facts import NodeFacts
from strixwizard.facts.persistence import UNIT_DIR, WANTS_DIR
from strixwizard.fixing.model import Kind, Read, Step
from strixwizard.units import UnitValueError, command_line, label


def mtu_step(netdev: str, before: int | None, after: int) -> Step:
    return Step(
        kind=Kind.MTU, target=netdev, summary=f"set the MTU of {netdev} to {after}",
        read=Read("mtu", path=netdev), before=None if before is None else str(before),
        after=str(after),
    )


def command_step(target: str, summary: str, argv: Sequence[str], undo_argv: Sequence[str],
                 read_argv: Sequence[str], parse: str, before: str | None, after: str,
                 before_known: bool = True) -> Step:
    return Step(
        kind=Kind.COMMAND, target=target, summary=summary,
        read=Read("command", argv=tuple(read_argv), parse=parse), before=before, after=after,
        argv=tuple(argv), undo_argv=tuple(undo_argv), before_known=before_known,
    )


def write_step(path: str, summary: str, before: str | None, after: str,
               before_known: bool = True) -> Step:
    """A sysfs/configfs attribute; `before_known=False` when the attribute only appears once an
    earlier step of the plan has run (its value is then read right before this step)."""
    return Step(kind=Kind.WRITE, target=path, summary=summary, read=Read("file", path=path),
                before=before, after=after, before_known=before_known)


def mkdir_step(path: str, summary: str) -> Step:
    return Step(kind=Kind.MKDIR, target=path, summary=summary, read=Read("exists", path=path),
                before=None, after="present")


def file_step(path: str, summary: str, before: str | None, content: str, persistence: str,
              reboot: bool = False) -> Step:
    return Step(kind=Kind.FILE, target=path, summary=summary, read=Read("file", path=path, parse="raw"),
                before=before, after=content, persistence=persistence, reboot=reboot)


def no_systemd(init: str | None) -> str:
    """Why a node gets no boot-time unit, in plain words (`init` is the name of its PID 1)."""
    if not init:
        return "the node does not run systemd (its first process could not be read)"
    return f"the node does not run systemd (its first process is {init})"


def unit_name(fix_id: str, entity: str) -> str:
    """`strixwizard-<fix>-<entity>.service`; `entity` "*" gives the pattern of them all."""
    clean = entity if entity == "*" else re.sub(r"[^A-Za-z0-9:_.-]", "-", entity)
    return f"strixwizard-{fix_id.replace('.', '-').replace('_', '-')}-{clean}.service"


def systemd_path_escape(path: str) -> str:
    """`systemd-escape --path PATH`: the unit name of a path (`/` becomes `-`, every byte
    outside [A-Za-z0-9:_.] and a leading `.` become `\\xNN`)."""
    out = []
    for index, byte in enumerate(path.strip("/").encode()):
        char = chr(byte)
        if char == "/":
            out.append("-")
        elif byte < 128 and (char.isalnum() or char in ":_.") and not (index == 0 and char == "."):
            out.append(char)
        else:
            out.append(f"\\x{byte:02x}")
    return "".join(out) or "-"


#: How long a boot-time unit waits for a device it acts on (systemd's own default wait for a
#: device unit is 90 s)
DEVICE_WAIT_S = 90


def wait_for_path_argv(path: str, seconds: int = DEVICE_WAIT_S) -> tuple[str, ...]:
    """A command that returns once `path` exists, or fails after `seconds`. Devices a unit acts
    on can register after the netdev it is bound to, or with nothing to bind to at all: an RDMA
    device appears after its netdev (mlx5_ib, bnxt_re and qedr are loaded by rdma-core's udev
    rule on the netdev's add event; soft-RoCE only once something runs `rdma link add`), and a
    NIC's devlink parameters once its driver has bound (`/sys/bus/pci/devices/ADDR/driver`).
    The path is an argument, never part of the script."""
    script = ('i=0; until [ -e "$1" ]; do [ "$i" -ge "$2" ] && '
              '{ echo "$1 did not appear within $2 s" >&2; exit 1; }; i=$((i+1)); sleep 1; done')
    return ("/bin/sh", "-c", script, "sh", path, str(seconds))


def unit_text(fix_id: str, description: str, commands: Sequence[Sequence[str]],
              netdev: str | None, before_network: bool = True) -> str:
    """A oneshot unit replaying `commands` at boot, after `netdev` appears. `before_network`
    orders it before network.target (settings the network's users must find in place); a unit
    that waits for something another unit may create later (an RDMA device) must not, or a
    site whose soft-RoCE unit runs after the network would wait out the whole bound."""
    after = "network-pre.target"
    lines = [
        f"# Written by strixwizard (fix {fix_id}); `strixwizard fix --rollback` removes it.",
        "[Unit]",
        f"Description=strixwizard: {label(description)}",
    ]
    if netdev:
        device = f"{systemd_path_escape(f'/sys/subsystem/net/devices/{netdev}')}.device"
        lines += [f"BindsTo={device}", f"After={device} {after}"]
    else:
        lines += [f"After={after}"]
    lines += ["Wants=network-pre.target"]
    if before_network:
        lines += ["Before=network.target"]
    lines += ["", "[Service]", "Type=oneshot", "RemainAfterExit=yes"]
    lines += [f"ExecStart={command_line(argv)}" for argv in commands]
    lines += ["", "[Install]", "WantedBy=multi-user.target", ""]
    return "\n".join(lines)


def unit_steps(node: NodeFacts, fix_id: str, entity: str, description: str,
               commands: Sequence[Sequence[str]], netdev: str | None,
               before_network: bool = True) -> tuple[list[Step], str]:
    """Steps that write and enable a oneshot unit replaying `commands` at boot, and the
    persistence sentence; without systemd, or with a value no unit can carry as it is
    (`strixwizard.units`), no steps and a sentence saying it is runtime only."""
    facts = node.persistence
    if not facts.systemd:
        return [], (f"runtime only: {no_systemd(facts.init)}, so no unit can replay these "
                    "commands at boot; run them at boot from your init system")
    name = unit_name(fix_id, entity)
    path = f"{UNIT_DIR}/{name}"
    try:
        content = unit_text(fix_id, description, commands, netdev, before_network)
    except UnitValueError as error:  # a node's name systemd cannot carry (a control character)
        return [], f"runtime only: no unit can replay these commands at boot: {error}"
    steps: list[Step] = []
    if facts.file(path) != content:
        steps.append(file_step(path, f"write systemd unit {name}", facts.file(path), content,
                               persistence="systemd"))
    if name not in facts.enabled_units:
        steps.append(Step(
            kind=Kind.COMMAND, target=name, summary=f"enable {name} at boot",
            read=Read("exists", path=f"{WANTS_DIR}/{name}"), before=None, after="present",
            argv=("systemctl", "enable", name), undo_argv=("systemctl", "disable", name),
            persistence="systemd",
        ))
    return steps, f"systemd unit {name} replays it at boot"

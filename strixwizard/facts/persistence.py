"""How a node makes settings survive a reboot, and what strixwizard already wrote there.

Runtime changes (MTU, DCB, ethtool, devlink, configfs) are lost at reboot. Which
mechanism keeps them depends on the node:
- the init system (`/proc/1/comm` is `systemd`): oneshot units;
- NetworkManager (`nmcli -t -f DEVICE,TYPE,STATE,CONNECTION device status`):
  the connection that manages an interface carries its MTU;
- systemd-networkd (`/run/systemd/netif/links/<ifindex>`, `NETWORK_FILE=`):
  a drop-in next to the .network file that matched the interface;
- the boot loader: `grubby --info=DEFAULT` (Fedora/RHEL) holds the kernel
  command line that the next boot uses.
Files strixwizard writes are all named `*strixwizard*` in a few directories, so
the fixes can see their own earlier work (the `before` of a file step).
NetworkManager keyfiles are never read: they can hold secrets.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field

from strixwizard.facts.outputs import (
    Output,
    command_output,
    file_output,
    read_output,
    run_output,
    stripped,
)
from strixwizard.facts.rdma import RDMA_CM
from strixwizard.facts.source import read_int
from strixwizard.nmcli import split_terse
from strixwizard.places import NODE_CONFIG_DIR
from strixwizard.probe import Probe

NETIF_LINKS = "/run/systemd/netif/links"
#: Where the files that make a change survive a reboot live; fixes write there (fixes/steps.py).
UNIT_DIR = "/etc/systemd/system"
WANTS_DIR = f"{UNIT_DIR}/multi-user.target.wants"
LIMITS_DIR = "/etc/security/limits.d"
MODPROBE_DIR = "/etc/modprobe.d"
SYSCTL_DIR = "/etc/sysctl.d"
NETWORKD_DIR = "/etc/systemd/network"
#: Directories where strixwizard writes its files (names contain "strixwizard").
OWNED_DIRS = (UNIT_DIR, LIMITS_DIR, MODPROBE_DIR, NODE_CONFIG_DIR, SYSCTL_DIR)


@dataclass(frozen=True)
class Persistence:
    """How settings survive a reboot here: init, network managers, boot entry, our own files and units."""

    init: str | None  # "systemd", another init's name, or None when unknown
    nm_connections: dict[str, str] | None  # netdev → NetworkManager connection; None: no nmcli
    networkd_files: dict[str, str]  # netdev → .network file networkd applied to it
    grubby_args: str | None  # the default boot entry's kernel command line (grubby); None: no grubby
    owned_files: dict[str, str] = field(default_factory=dict)  # path → content (our own files)
    enabled_units: frozenset[str] = frozenset()  # our units linked in multi-user.target.wants
    roce_tos: dict[str, int] = field(default_factory=dict)  # "dev/port" → rdma_cm default_roce_tos

    @property
    def systemd(self) -> bool:
        return self.init == "systemd"

    def file(self, path: str) -> str | None:
        return self.owned_files.get(path)


def parse_nmcli_devices(text: str) -> dict[str, str]:
    """netdev → connection name, for devices NetworkManager has connected."""
    found = {}
    for line in text.splitlines():
        fields = split_terse(line)
        if len(fields) >= 4 and fields[2].startswith("connected") and fields[3] and fields[3] != "--":
            found[fields[0]] = fields[3]
    return found


def parse_netif_link(text: str) -> dict[str, str]:
    values = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            values[key.strip()] = value.strip()
    return values


def parse_grubby_args(text: str) -> str:
    """`grubby --info=DEFAULT`: the kernel command line of its `args="..."` line."""
    for line in text.splitlines():
        if line.startswith("args="):
            return line[len("args="):].strip().strip('"')
    raise ValueError("no args= line in `grubby --info` output")


def parse_nm_mtu(text: str) -> int | None:
    """`nmcli -g 802-3-ethernet.mtu connection show id C`: bytes, or None for "auto"."""
    value = text.strip()
    return None if value in ("", "0", "auto") else int(value)


NMCLI_DEVICES: Output[dict[str, str]] = command_output(
    "nmcli.devices", ("nmcli", "-t", "-f", "DEVICE,TYPE,STATE,CONNECTION", "device", "status"),
    parse_nmcli_devices)
#: root: grubby reads the boot entries in /boot/loader/entries, a folder Fedora makes 0700
#: (hartwork/grub2-theme-preview#24); as a user `grubby --info` says "Permission denied"
#: (linux-system-roles/bootloader#97).
GRUBBY: Output[str] = command_output("grubby.info", ("grubby", "--info=DEFAULT"), parse_grubby_args,
                                     root=True)
GRUBBY_INFO = GRUBBY.argv
#: Read back by the net.mtu fix for the connection it changed; never collected.
NM_CONNECTION_MTU: Output[int | None] = command_output(
    "nmcli.connection_mtu", ("nmcli", "-g", "802-3-ethernet.mtu", "connection", "show", "id",
                             "{connection}"), parse_nm_mtu, collect=False)
NETIF_LINK = file_output("networkd.link", NETIF_LINKS + "/{ifindex}", parse_netif_link)
INIT_COMM = file_output("init.comm", "/proc/1/comm", stripped)


def _networkd(probe: Probe) -> dict[str, str]:
    by_index: dict[int, str] = {}
    for name in probe.listdir("/sys/class/net"):
        index = read_int(probe, f"/sys/class/net/{name}/ifindex")
        if index is not None:
            by_index[index] = name
    found = {}
    for entry in probe.listdir(NETIF_LINKS):
        values = read_output(probe, NETIF_LINK, ifindex=entry) if entry.isdigit() else None
        if values is None:
            continue
        network_file = values.get("NETWORK_FILE")
        netdev = by_index.get(int(entry))
        if network_file and netdev and values.get("ADMIN_STATE", "configured") != "unmanaged":
            found[netdev] = network_file
    return found


def _owned_files(probe: Probe) -> dict[str, str]:
    files = {}
    directories = list(OWNED_DIRS) + [
        f"{NETWORKD_DIR}/{d}" for d in probe.listdir(NETWORKD_DIR) if d.endswith(".network.d")
    ]
    for directory in directories:
        for name in probe.listdir(directory):
            if "strixwizard" in name:
                path = posixpath.join(directory, name)
                text = probe.read(path)
                if text is not None:
                    files[path] = text
    return files


def _roce_tos(probe: Probe) -> dict[str, int]:
    found = {}
    for device in probe.listdir(RDMA_CM):
        for port in probe.listdir(f"{RDMA_CM}/{device}/ports"):
            value = read_int(probe, f"{RDMA_CM}/{device}/ports/{port}/default_roce_tos")
            if value is not None:
                found[f"{device}/{port}"] = value
    return found


def persistence(probe: Probe) -> Persistence:
    enabled = frozenset(
        name for name in probe.listdir(WANTS_DIR)
        if "strixwizard" in name and probe.readlink(f"{WANTS_DIR}/{name}") is not None
    )
    return Persistence(
        init=read_output(probe, INIT_COMM),
        nm_connections=run_output(probe, NMCLI_DEVICES).value,
        networkd_files=_networkd(probe),
        grubby_args=run_output(probe, GRUBBY).value,
        owned_files=_owned_files(probe),
        enabled_units=enabled,
        roce_tos=_roce_tos(probe),
    )

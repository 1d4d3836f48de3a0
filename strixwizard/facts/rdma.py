"""RDMA devices, ports and GID tables from /sys/class/infiniband, plus `ibv_devinfo`.

sysfs gives everything but the port's *active* MTU, which only the verbs
query reports: that comes from `ibv_devinfo` (captured once, all devices).

Kinds of device:
- `hardware`: behind a PCI function (irdma on E810, mlx5_ib, mlx4_ib, ...);
- `usb4`: the experimental `thunderbolt_ibverbs` driver (`usb4_rdma*`);
- `rxe` / `siw`: software RoCE / iWARP over some netdev.
Only `hardware` devices give the ~5 µs the cluster is built for.

The RoCE v2 IPv4 GID index is read from the GID table (type "RoCE v2",
value `::ffff:a.b.c.d`, on the port's netdev); it is never assumed to be 1 or 3.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, replace

from strixwizard.facts.outputs import Output, command_output, run_output
from strixwizard.facts.source import ClassDevice, class_device, link_name, read_int, read_str
from strixwizard.probe import Probe
from strixwizard.vendors import rdma_driver_of

IB = "/sys/class/infiniband"
RDMA_CM = "/sys/kernel/config/rdma_cm"
ZERO_GID = "0000:0000:0000:0000:0000:0000:0000:0000"


#: Bytes of RoCE headers the kernel takes off the netdev MTU (iboe_get_mtu in ib_addr.h:
#: GRH 40 + UDP 8 + BTH 12 + XRC 4 + AtomicETH 28 + ICRC 4).
ROCE_HEADERS = 96
IB_MTUS = ((4096, 5), (2048, 4), (1024, 3), (512, 2), (256, 1))


def roce_active_mtu(netdev_mtu: int, max_mtu: int | None) -> tuple[int, int]:
    """(bytes, enum) of the RoCE active MTU the kernel derives from a netdev MTU."""
    usable = netdev_mtu - ROCE_HEADERS
    for size, enum in IB_MTUS:
        if size <= usable and (max_mtu is None or size <= max_mtu):
            return size, enum
    return IB_MTUS[-1]


@dataclass(frozen=True)
class Gid:
    """One entry of an RDMA port's GID table."""

    index: int
    gid: str  # as sysfs prints it: "0000:0000:0000:0000:0000:ffff:c0a8:6401"
    type: str | None  # "RoCE v2", "IB/RoCE v1"; None when not readable
    netdev: str | None

    @property
    def ipv4(self) -> str | None:
        """The IPv4 address of an IPv4-mapped GID (`::ffff:a.b.c.d`), else None."""
        try:
            address = ipaddress.IPv6Address(self.gid)
        except ValueError:
            return None
        mapped = address.ipv4_mapped
        return str(mapped) if mapped is not None else None

    @property
    def is_roce_v2(self) -> bool:
        return (self.type or "").strip().lower() == "roce v2"


@dataclass(frozen=True)
class RdmaPort:
    """A port of an RDMA device: state, link layer, rate, MTU and GIDs."""

    device: str
    number: int
    state: str | None  # "ACTIVE", "DOWN", "INIT", "ARMED"
    phys_state: str | None  # "LinkUp", "Polling", "Disabled"
    link_layer: str | None  # "Ethernet" or "InfiniBand"
    rate: str | None  # "100 Gb/sec (4X EDR)"
    rate_gbps: float | None
    lid: int | None
    sm_lid: int | None
    netdev: str | None
    gids: tuple[Gid, ...]
    active_mtu: int | None  # from ibv_devinfo; None if not captured
    max_mtu: int | None
    default_roce_mode: str | None  # configfs rdma_cm; None = directory not created (unknown)

    @property
    def name(self) -> str:
        return f"{self.device}/{self.number}"

    @property
    def is_active(self) -> bool:
        return self.state == "ACTIVE"

    @property
    def is_ethernet(self) -> bool:
        return (self.link_layer or "").lower() == "ethernet"

    def roce_v2_ipv4_gid(self, netdev: str | None = None) -> Gid | None:
        """The first RoCE v2 GID that maps an IPv4 address (on `netdev`, if given)."""
        for gid in self.gids:
            if gid.is_roce_v2 and gid.ipv4 and (netdev is None or gid.netdev in (None, netdev)):
                return gid
        return None

    @property
    def roce_versions(self) -> tuple[str, ...]:
        kinds = {g.type for g in self.gids if g.type and g.gid != ZERO_GID}
        return tuple(sorted(k for k in kinds if k))


@dataclass(frozen=True)
class RdmaDevice:
    """An RDMA device (hardware, USB4, rxe or siw) and its ports."""

    name: str
    kind: str  # "hardware", "usb4", "rxe", "siw"
    node_type: str | None  # "CA" (IB/RoCE) or "RNIC" (iWARP)
    fw_ver: str | None
    pci_address: str | None
    driver: str | None  # irdma, mlx5_ib...; None when not known
    parent_netdev: str | None  # rxe/siw: the netdev it is bound to
    ports: tuple[RdmaPort, ...]
    #: The deepest PCI function on the device's sysfs path, whatever its kind: a usb4 device's
    #: USB4 host interface (NHI), a hardware device's own function.
    via_pci: str | None = None

    @property
    def is_hardware(self) -> bool:
        return self.kind == "hardware"

    @property
    def is_iwarp(self) -> bool:
        return self.node_type == "RNIC"


@dataclass(frozen=True)
class DevinfoPort:
    """A port as `ibv_devinfo -v` reports it."""

    state: str | None
    active_mtu: int | None
    max_mtu: int | None
    link_layer: str | None


def _enum_word(text: str | None) -> str | None:
    """ "4: ACTIVE" → "ACTIVE"; "5: LinkUp" → "LinkUp"."""
    if text is None:
        return None
    return text.split(":", 1)[1].strip() if ":" in text else text.strip()


def _rate_gbps(rate: str | None) -> float | None:
    match = re.match(r"\s*([\d.]+)\s*Gb/sec", rate or "")
    return float(match.group(1)) if match else None


_MTU = re.compile(r"^\s*(\d+)")


def parse_ibv_devinfo(text: str) -> dict[tuple[str, int], DevinfoPort]:
    """`ibv_devinfo` (or `-v`) → (device, port) → state and MTUs. Unknown lines are skipped."""
    ports: dict[tuple[str, int], dict[str, str]] = {}
    device: str | None = None
    current: dict[str, str] | None = None
    for raw in text.splitlines():
        line = raw.strip()
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key, value = key.strip(), value.strip()
        if key == "hca_id":
            device, current = value, None
        elif key == "port" and device is not None and value.isdigit():
            current = ports.setdefault((device, int(value)), {})
        elif current is not None and key in ("state", "active_mtu", "max_mtu", "link_layer"):
            current[key] = value

    def mtu(value: str | None) -> int | None:
        match = _MTU.match(value or "")
        return int(match.group(1)) if match else None

    def state(value: str | None) -> str | None:
        if not value:
            return None
        word = value.split()[0]
        return word.removeprefix("PORT_")

    return {
        key: DevinfoPort(state(v.get("state")), mtu(v.get("active_mtu")), mtu(v.get("max_mtu")),
                         v.get("link_layer"))
        for key, v in ports.items()
    }


def render_ibv_devinfo(old: str, ports: dict[tuple[str, int], DevinfoPort]) -> str:
    """`ibv_devinfo` text with the `active_mtu` lines of ports whose active MTU changes
    rewritten ("4096 (5)"), layout kept: what the kernel shows after a netdev MTU change."""
    current = parse_ibv_devinfo(old)
    enum = dict(IB_MTUS)
    lines = old.splitlines(keepends=True)
    hca: str | None = None
    port: tuple[str, int] | None = None
    for index, line in enumerate(lines):
        key, sep, value = line.strip().partition(":")
        if not sep:
            continue
        if key == "hca_id":
            hca, port = value.strip(), None
        elif key == "port" and hca is not None and value.strip().isdigit():
            port = (hca, int(value.strip()))
        elif key == "active_mtu" and port in ports and port in current:
            mtu = ports[port].active_mtu
            if mtu is None or mtu == current[port].active_mtu:
                continue
            head = line[: line.index("active_mtu:") + len("active_mtu:")]
            rest = line[len(head):]
            spacing = rest[: len(rest) - len(rest.lstrip())]
            lines[index] = f"{head}{spacing}{mtu} ({enum.get(mtu, 0)})\n"
    return "".join(lines)


IBV_DEVINFO: Output[dict[tuple[str, int], DevinfoPort]] = command_output(
    "ibv_devinfo", ("ibv_devinfo",), parse_ibv_devinfo, render=render_ibv_devinfo)


def with_active_mtu(devinfo: str, device: str, port: int, mtu: tuple[int, int]) -> str:
    """`ibv_devinfo` text with one port's active MTU (bytes, enum) changed, layout kept."""
    ports = IBV_DEVINFO.parse(devinfo)
    if (device, port) not in ports:
        return devinfo
    ports[(device, port)] = replace(ports[(device, port)], active_mtu=mtu[0])
    return render_ibv_devinfo(devinfo, ports)


def devinfo_ports(probe: Probe) -> dict[tuple[str, int], DevinfoPort] | None:
    return run_output(probe, IBV_DEVINFO).value


def _gids(probe: Probe, base: str) -> tuple[Gid, ...]:
    gids = []
    for entry in probe.listdir(f"{base}/gids"):
        if not entry.isdigit():
            continue
        value = read_str(probe, f"{base}/gids/{entry}")
        if value is None or value == ZERO_GID:
            continue
        gids.append(Gid(
            index=int(entry),
            gid=value,
            type=read_str(probe, f"{base}/gid_attrs/types/{entry}"),
            netdev=read_str(probe, f"{base}/gid_attrs/ndevs/{entry}"),
        ))
    return tuple(sorted(gids, key=lambda g: g.index))


def _kind(name: str, device: ClassDevice, parent: str | None) -> str:
    if name.startswith("usb4_rdma") or device.bus == "thunderbolt":
        return "usb4"
    if name.startswith("siw"):
        return "siw"
    if name.startswith("rxe") or parent is not None or device.bus == "virtual":
        return "rxe"
    return "hardware"


def rdma_devices(probe: Probe, netdev_by_pci: dict[str, tuple[str, ...]] | None = None
                 ) -> tuple[RdmaDevice, ...]:
    """Every device of /sys/class/infiniband. `netdev_by_pci` maps PCI functions to netdevs,
    used when a port's GID table names no netdev (InfiniBand, or a RoCE port with no address)."""
    devinfo = devinfo_ports(probe) or {}
    devices = []
    for name in probe.listdir(IB):
        base = f"{IB}/{name}"
        device = class_device(probe, base)
        parent = read_str(probe, f"{base}/parent")
        kind = _kind(name, device, parent)
        pci = device.pci_function if kind == "hardware" else None
        pci_driver = link_name(probe, f"/sys/bus/pci/devices/{pci}/driver") if pci else None
        ports = []
        for entry in probe.listdir(f"{base}/ports"):
            if not entry.isdigit():
                continue
            number = int(entry)
            pbase = f"{base}/ports/{entry}"
            gids = _gids(probe, pbase)
            netdev = next((g.netdev for g in gids if g.netdev), None) or parent
            if netdev is None and pci and netdev_by_pci:
                candidates = netdev_by_pci.get(pci, ())
                netdev = candidates[number - 1] if len(candidates) >= number else None
            rate = read_str(probe, f"{pbase}/rate")
            info = devinfo.get((name, number))
            ports.append(RdmaPort(
                device=name,
                number=number,
                state=_enum_word(read_str(probe, f"{pbase}/state")),
                phys_state=_enum_word(read_str(probe, f"{pbase}/phys_state")),
                link_layer=read_str(probe, f"{pbase}/link_layer"),
                rate=rate,
                rate_gbps=_rate_gbps(rate),
                lid=read_int(probe, f"{pbase}/lid", 16),
                sm_lid=read_int(probe, f"{pbase}/sm_lid", 16),
                netdev=netdev,
                gids=gids,
                active_mtu=info.active_mtu if info else None,
                max_mtu=info.max_mtu if info else None,
                default_roce_mode=read_str(probe, f"{RDMA_CM}/{name}/ports/{entry}/default_roce_mode"),
            ))
        devices.append(RdmaDevice(
            name=name,
            kind=kind,
            node_type=_enum_word(read_str(probe, f"{base}/node_type")),
            fw_ver=read_str(probe, f"{base}/fw_ver"),
            pci_address=pci,
            driver=rdma_driver_of(pci_driver) if kind == "hardware" else kind,
            parent_netdev=parent,
            ports=tuple(sorted(ports, key=lambda p: p.number)),
            via_pci=device.pci_function,
        ))
    return tuple(devices)


def devinfo_captured(probe: Probe) -> bool:
    return devinfo_ports(probe) is not None

"""USB4/Thunderbolt: host routers on PCI and what sits on the bus (/sys/bus/thunderbolt).

Strix Halo's USB4 host routers are 1022:158d and 1022:158e (driver
`thunderbolt`). Entries of /sys/bus/thunderbolt/devices: `domainN`, routers
`N-0` (the host) and `N-M` (connected devices or XDomain peers: another
computer), services `N-M.K` (thunderbolt-net binds to one), `usb4_portN`.
The `uevent` DEVTYPE tells routers (thunderbolt_device) from peers
(thunderbolt_xdomain); a Linux peer announces its hostname as device_name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from strixwizard.facts.outputs import file_output, read_output
from strixwizard.facts.pci import PciDevice
from strixwizard.facts.source import read_int, read_str
from strixwizard.probe import Probe

TB_DEVICES = "/sys/bus/thunderbolt/devices"
AMD = 0x1022
STRIX_HALO_USB4_ROUTERS = {0x158D, 0x158E}
_ROUTER = re.compile(r"^\d+-[0-9a-f]+$")


@dataclass(frozen=True)
class TbPeer:
    """A device or host at the other end of a USB4/Thunderbolt port."""

    name: str  # "0-1"
    kind: str  # "xdomain" (another host) or "device"
    device_name: str | None
    vendor_name: str | None
    generation: int | None
    rx_speed_gbps: float | None  # per lane, as sysfs reports it
    rx_lanes: int | None

    @property
    def link_gbps(self) -> float | None:
        if self.rx_speed_gbps is None:
            return None
        return self.rx_speed_gbps * (self.rx_lanes or 1)


@dataclass(frozen=True)
class Usb4Info:
    """USB4 host routers, their generation, and the peers connected."""

    routers: tuple[PciDevice, ...]  # USB4 host routers on PCI
    host_generation: int | None
    peers: tuple[TbPeer, ...]


def parse_uevent_devtype(text: str) -> str | None:
    """`DEVTYPE=` of a uevent file: thunderbolt_device (a router) or thunderbolt_xdomain (a host)."""
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if key == "DEVTYPE":
            return value.strip()
    return None


UEVENT = file_output("thunderbolt.uevent", TB_DEVICES + "/{device}/uevent", parse_uevent_devtype)


def _gbps(text: str | None) -> float | None:
    match = re.match(r"\s*([\d.]+)\s*Gb/s", text or "")
    return float(match.group(1)) if match else None


def usb4_info(probe: Probe, pci: tuple[PciDevice, ...]) -> Usb4Info:
    routers = tuple(
        d for d in pci
        if (d.vendor == AMD and d.device in STRIX_HALO_USB4_ROUTERS) or d.driver == "thunderbolt"
    )
    host_generation = None
    peers = []
    for name in probe.listdir(TB_DEVICES):
        if not _ROUTER.match(name):
            continue
        base = f"{TB_DEVICES}/{name}"
        if name.endswith("-0"):
            host_generation = host_generation or read_int(probe, f"{base}/generation")
            continue
        devtype = read_output(probe, UEVENT, device=name)
        peers.append(TbPeer(
            name=name,
            kind="xdomain" if devtype == "thunderbolt_xdomain" else "device",
            device_name=read_str(probe, f"{base}/device_name"),
            vendor_name=read_str(probe, f"{base}/vendor_name"),
            generation=read_int(probe, f"{base}/generation"),
            rx_speed_gbps=_gbps(read_str(probe, f"{base}/rx_speed")),
            rx_lanes=read_int(probe, f"{base}/rx_lanes"),
        ))
    return Usb4Info(routers=routers, host_generation=host_generation, peers=tuple(peers))

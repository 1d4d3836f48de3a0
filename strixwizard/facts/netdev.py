"""Network interfaces: sysfs attributes, what device sits behind each, and addresses.

Addresses and altnames come from `ip -j addr show` (a captured command; sysfs
has neither). Which hardware is behind a netdev comes from its sysfs class
link: `/sys/class/net/IF -> ../../devices/pci0000:00/.../0000:c2:00.0/net/IF`
names the PCI function, a path through `domainN/` names a Thunderbolt/USB4
XDomain service (thunderbolt-net), `devices/virtual/` a software interface.
"""

from __future__ import annotations

import json
import posixpath
from dataclasses import dataclass

from strixwizard.facts.outputs import Output, command_output, run_output
from strixwizard.facts.source import class_device, link_name, read_int, read_str
from strixwizard.probe import Probe

NET = "/sys/class/net"
ARPHRD_ETHER = 1
ARPHRD_INFINIBAND = 32
IPOIB_DATAGRAM_MAX_MTU = 4092  # IB MTU 4096 - the 4-byte IPoIB header
IPOIB_CONNECTED_MAX_MTU = 65520


@dataclass(frozen=True)
class IpAddress:
    family: str  # "inet" or "inet6"
    address: str
    prefixlen: int
    scope: str

    @property
    def cidr(self) -> str:
        return f"{self.address}/{self.prefixlen}"


@dataclass(frozen=True)
class IpLink:
    """One interface as `ip -j addr show` prints it."""

    name: str
    altnames: tuple[str, ...]
    addresses: tuple[IpAddress, ...]
    mtu: int | None
    operstate: str | None


@dataclass(frozen=True)
class Netdev:
    name: str
    sysfs_path: str | None  # /sys/devices/.../net/IF
    bus: str  # "pci", "thunderbolt", "usb", "virtual" or "unknown"
    pci_address: str | None
    driver: str | None  # driver of the device behind it: ice, mlx5_core, thunderbolt-net...
    mtu: int | None
    operstate: str | None  # "up", "down", "lowerlayerdown"...
    carrier: bool | None
    speed_mbps: int | None  # None when unknown (link down, or the driver reports none)
    mac: str | None
    arp_type: int | None
    altnames: tuple[str, ...]
    addresses: tuple[IpAddress, ...] | None  # None: `ip -j addr show` not captured
    ipoib_mode: str | None = None  # IPoIB only: "datagram" or "connected" (/sys/class/net/IF/mode)

    @property
    def is_thunderbolt(self) -> bool:
        return self.bus == "thunderbolt" or self.driver == "thunderbolt-net"

    @property
    def is_infiniband(self) -> bool:
        return self.arp_type == ARPHRD_INFINIBAND

    @property
    def max_mtu(self) -> int | None:
        """The largest MTU the interface can take where its kind caps it: IPoIB datagram mode
        carries an IB MTU (4096) minus its 4-byte header, connected mode 65520
        (https://docs.kernel.org/infiniband/ipoib.html); None when not capped here."""
        if not self.is_infiniband:
            return None
        return IPOIB_CONNECTED_MAX_MTU if self.ipoib_mode == "connected" else IPOIB_DATAGRAM_MAX_MTU

    @property
    def ipv4(self) -> tuple[IpAddress, ...]:
        return tuple(a for a in self.addresses or () if a.family == "inet")


def _json_payload(text: str) -> object:
    """Parse JSON that may be preceded by stray warning lines (old iproute2, locale noise)."""
    start = min((i for i in (text.find("["), text.find("{")) if i >= 0), default=-1)
    if start < 0:
        raise ValueError("no JSON document in the output")
    return json.JSONDecoder().raw_decode(text[start:])[0]


def parse_ip_addr_json(text: str) -> dict[str, IpLink]:
    """`ip -j addr show` → interface name → altnames and addresses."""
    links: dict[str, IpLink] = {}
    payload = _json_payload(text)
    if not isinstance(payload, list):
        raise ValueError("`ip -j addr show` did not print a list")
    for item in payload:
        if not isinstance(item, dict) or "ifname" not in item:
            continue
        addresses = []
        for info in item.get("addr_info", []):
            if not isinstance(info, dict) or "local" not in info:
                continue
            addresses.append(IpAddress(
                family=str(info.get("family", "")),
                address=str(info["local"]),
                prefixlen=int(info.get("prefixlen", 0)),
                scope=str(info.get("scope", "")),
            ))
        mtu = item.get("mtu")
        links[str(item["ifname"])] = IpLink(
            name=str(item["ifname"]),
            altnames=tuple(str(a) for a in item.get("altnames", [])),
            addresses=tuple(addresses),
            mtu=int(mtu) if isinstance(mtu, int) else None,
            operstate=str(item["operstate"]).lower() if "operstate" in item else None,
        )
    return links


IP_ADDR: Output[dict[str, IpLink]] = command_output(
    "ip.addr", ("ip", "-j", "addr", "show"), parse_ip_addr_json)


def ip_links(probe: Probe) -> dict[str, IpLink] | None:
    return run_output(probe, IP_ADDR).value


def netdevs(probe: Probe) -> tuple[Netdev, ...]:
    links = ip_links(probe)
    found = []
    for name in probe.listdir(NET):
        if name == "lo" or name.startswith("bonding_masters"):
            continue
        base = f"{NET}/{name}"
        device = class_device(probe, base)
        bus = device.bus
        speed = read_int(probe, f"{base}/speed")
        carrier = read_int(probe, f"{base}/carrier")
        ip = links.get(name) if links is not None else None
        found.append(Netdev(
            name=name,
            sysfs_path=device.path,
            bus=bus,
            pci_address=device.pci_function if bus == "pci" else None,
            driver=link_name(probe, f"{base}/device/driver"),
            mtu=read_int(probe, f"{base}/mtu"),
            operstate=read_str(probe, f"{base}/operstate"),
            carrier=None if carrier is None else carrier == 1,
            speed_mbps=speed if speed is not None and speed > 0 else None,
            mac=read_str(probe, f"{base}/address"),
            arp_type=read_int(probe, f"{base}/type"),
            altnames=ip.altnames if ip else (),
            addresses=None if links is None else (ip.addresses if ip else ()),
            ipoib_mode=read_str(probe, f"{base}/mode"),
        ))
    return tuple(found)


def device_dir(netdev: Netdev) -> str | None:
    """The sysfs directory of the device behind a netdev (parent of its `net/` dir)."""
    if netdev.sysfs_path is None:
        return None
    return posixpath.dirname(posixpath.dirname(netdev.sysfs_path))

"""Network interfaces: sysfs attributes, what device sits behind each, and addresses.

Addresses and altnames come from `ip -j addr show` (a captured command; sysfs
has neither). Which hardware is behind a netdev comes from its sysfs class
link: `/sys/class/net/IF -> ../../devices/pci0000:00/.../0000:c2:00.0/net/IF`
names the PCI function, a path through `domainN/` names a Thunderbolt/USB4
XDomain service (thunderbolt-net), `devices/virtual/` a software interface.
"""

from __future__ import annotations

import ipaddress
import json
import posixpath
from dataclasses import dataclass

from strixwizard.facts.outputs import Output, command_output, run_output
from strixwizard.facts.source import class_device, link_name, read_int, read_str
from strixwizard.probe import Probe
from strixwizard.site import address_problem

NET = "/sys/class/net"
ARPHRD_ETHER = 1
ARPHRD_INFINIBAND = 32
IPOIB_DATAGRAM_MAX_MTU = 4092  # IB MTU 4096 - the 4-byte IPoIB header
IPOIB_CONNECTED_MAX_MTU = 65520


@dataclass(frozen=True)
class IpAddress:
    """One address of an interface, as `ip -j addr` gives it."""

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
    #: what the node reported and was dropped (an `inet` address that is not IPv4, a bad name)
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Netdev:
    """A network interface: where it sits (bus, driver), its MTU, state and addresses."""

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
    notes: tuple[str, ...] = ()  # values the node reported that were dropped, and why

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
    # strict=False: iproute2's JSON writer escapes only \t \n \r \f \b \\ " ' and prints any other
    # control character of a name raw (ESC, BEL): `jsonw_puts` in
    # https://github.com/iproute2/iproute2/blob/main/lib/json_writer.c
    return json.JSONDecoder(strict=False).raw_decode(text[start:])[0]


#: Linux's limits on an interface name (`dev_valid_name` in
#: https://github.com/torvalds/linux/blob/master/net/core/dev.c): at most IFNAMSIZ - 1
#: bytes, not `.` or `..`, no `/`, `:` or white space. ESC and BEL are allowed: names are data.
IFNAMSIZ = 16
ALTIFNAMSIZ = 128
_NAME_FORBIDDEN = frozenset("/: \t\n\v\f\r\x00")
#: The same, as the kernel checks them: bytes; its `isspace` also takes 0xa0 (lib/ctype.c).
_NAME_FORBIDDEN_BYTES = frozenset(b"/: \t\n\v\f\r\x00\xa0")
#: A driver is a kernel module's or a built-in driver's name (a sysfs file name).
_DRIVER_MAX = 64


def ifname_problem(name: str, size: int = IFNAMSIZ) -> str | None:
    """Why Linux could not have an interface called `name` (`dev_valid_name`), or None."""
    if not name or name in (".", ".."):
        return "is empty, `.` or `..`"
    raw = name.encode("utf-8", "surrogateescape")
    if len(raw) >= size:
        return f"is longer than {size - 1} bytes"
    if _NAME_FORBIDDEN_BYTES & set(raw):
        return "holds `/`, `:`, white space or NUL"
    return None


def driver_problem(name: str) -> str | None:
    """Why `name` is not a driver's name (printable, no white space or `/`, short), or None."""
    if not name or len(name) > _DRIVER_MAX or not name.isprintable() or _NAME_FORBIDDEN & set(name):
        return "is not a driver name"
    return None


def _address(info: dict[str, object]) -> tuple[IpAddress | None, str | None]:
    """An `addr_info` entry typed: `inet` holds an IPv4 address, `inet6` an IPv6 one (a scope id
    only if it is an interface name or number); anything else is dropped, with why."""
    family, local = str(info.get("family", "")), str(info["local"])
    prefix = info.get("prefixlen", 0)
    try:
        parsed = ipaddress.ip_address(local.partition("%")[0])
    except ValueError:
        parsed = None
    want = {"inet": 4, "inet6": 6}.get(family)
    if want is None or parsed is None or parsed.version != want or address_problem(local) is not None \
            or not isinstance(prefix, int) or not 0 <= prefix <= (32 if want == 4 else 128):
        return None, f"dropped {family or 'an'} address {local!r}: not an {family or 'IP'} address"
    return IpAddress(family=family, address=local, prefixlen=prefix, scope=str(info.get("scope", ""))), None


def parse_ip_addr_json(text: str) -> dict[str, IpLink]:
    """`ip -j addr show` → interface name → altnames and addresses. What a node reports is
    typed here: an interface name Linux could not have, or an address that is not one of its
    family, is dropped (the link's `notes` say what and why)."""
    links: dict[str, IpLink] = {}
    payload = _json_payload(text)
    if not isinstance(payload, list):
        raise ValueError("`ip -j addr show` did not print a list")
    for item in payload:
        if not isinstance(item, dict) or "ifname" not in item:
            continue
        name = str(item["ifname"])
        if ifname_problem(name) is not None:
            continue  # not an interface Linux could have: nothing of it is taken
        addresses, notes = [], []
        for info in item.get("addr_info", []):
            if not isinstance(info, dict) or "local" not in info:
                continue
            address, note = _address(info)
            if address is not None:
                addresses.append(address)
            if note is not None:
                notes.append(note)
        altnames = [str(a) for a in item.get("altnames", [])]
        notes += [f"dropped altname {a!r}: {problem}" for a in altnames
                  if (problem := ifname_problem(a, ALTIFNAMSIZ)) is not None]
        mtu = item.get("mtu")
        links[name] = IpLink(
            name=name,
            altnames=tuple(a for a in altnames if ifname_problem(a, ALTIFNAMSIZ) is None),
            addresses=tuple(addresses),
            mtu=int(mtu) if isinstance(mtu, int) else None,
            operstate=str(item["operstate"]).lower() if "operstate" in item else None,
            notes=tuple(notes),
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
        if name == "lo" or name.startswith("bonding_masters") or ifname_problem(name) is not None:
            continue  # a snapshot's directory no kernel could have made: not an interface
        base = f"{NET}/{name}"
        device = class_device(probe, base)
        bus = device.bus
        speed = read_int(probe, f"{base}/speed")
        carrier = read_int(probe, f"{base}/carrier")
        ip = links.get(name) if links is not None else None
        driver = link_name(probe, f"{base}/device/driver")
        notes = ip.notes if ip else ()
        if driver is not None and (problem := driver_problem(driver)) is not None:
            notes, driver = (*notes, f"dropped driver {driver!r}: {problem}"), None
        found.append(Netdev(
            name=name,
            sysfs_path=device.path,
            bus=bus,
            pci_address=device.pci_function if bus == "pci" else None,
            driver=driver,
            mtu=read_int(probe, f"{base}/mtu"),
            operstate=read_str(probe, f"{base}/operstate"),
            carrier=None if carrier is None else carrier == 1,
            speed_mbps=speed if speed is not None and speed > 0 else None,
            mac=read_str(probe, f"{base}/address"),
            arp_type=read_int(probe, f"{base}/type"),
            altnames=ip.altnames if ip else (),
            addresses=None if links is None else (ip.addresses if ip else ()),
            ipoib_mode=read_str(probe, f"{base}/mode"),
            notes=notes,
        ))
    return tuple(found)


def device_dir(netdev: Netdev) -> str | None:
    """The sysfs directory of the device behind a netdev (parent of its `net/` dir)."""
    if netdev.sysfs_path is None:
        return None
    return posixpath.dirname(posixpath.dirname(netdev.sysfs_path))

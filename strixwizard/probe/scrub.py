"""Snapshots fit to share: hostnames, IP and MAC addresses, serial numbers and user names
replaced by tokens, the same value by the same token throughout a bundle (so links still pair
up and a scrubbed bundle replays with the same verdicts), with a private map for the owner.

Modelled on sos report's cleaner (`sos clean`, https://github.com/sosreport/sos, its
"obfuscation maps"): one map per run, applied to every file, kept apart from what is shared.

- IPv4: the first two octets of each /16 become `10.(200+n)`, the last two are kept, so two
  addresses in one subnet (/16 or longer prefix) stay in one subnet, in the dotted form and
  in the IPv4-mapped GIDs of /sys (`0000:…:ffff:c0a8:6401`). Loopback, 0.x, netmasks (255.x)
  and multicast stay as they are.
  Past the 56 networks of 10.200-10.255 the tokens go on in 10.0-10.199, then 172.16-172.31.
- MAC addresses become locally administered `02:00:5e:…` (counted) in every spelling: colons,
  dashes, and the 12 digits run together (a MAC seen anywhere in the bundle is found in every
  spelling, inside a name too: systemd's `enx<MAC>` interface names, PXE's `BOOTIF=01-<MAC>`);
  the all-zero and broadcast addresses stay. EUI-64 link-local GIDs and
  node GUIDs derived from a MAC follow it.
- GIDs are addresses: an IPv4-mapped GID (RoCE v2, `::ffff:a.b.c.d`) and a GID of a global
  IPv6 address get the same map as the address in `ip addr`. Node, system image and port
  GUIDs not derived from a MAC (a ConnectX's) become `5c00:0000:…` (counted), in the GIDs of
  an InfiniBand port too.
- Names become `host-N`, `user-N`, `serial-N`, `lvm-N`, `conn-N`: every name a host gives
  itself or a peer (meta.json's host, the kernel's hostname, the site's SSH hosts and node
  names, a USB4 peer's XDomain `device_name`) wherever it appears; user names (home folders);
  serial numbers (DMI serials and UUIDs, `Serial Number`/`[SN]`/`serial_number` fields); LVM
  volume group and logical volume names where the kernel's arguments give them
  (`rd.lvm.vg=`, `rd.lvm.lv=VG/LV`, `/dev/mapper/VG-LV`: an installer's VG name often holds
  the hostname); NetworkManager connection names (a Wi-Fi connection is named after its
  network) in `nmcli`'s CONNECTION field.
"""

from __future__ import annotations

import functools
import ipaddress
import json
import os
import re
import shutil
import tarfile
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from strixwizard.nmcli import split_terse
from strixwizard.probe import CmdResult
from strixwizard.probe.snapshot import SnapshotProbe, SnapshotTree

SERIAL_FILES = ("product_serial", "board_serial", "chassis_serial", "product_uuid")
_SERIAL_FIELD = re.compile(r"(?im)(?:serial[ _-]?(?:number|no)?|\[SN\])\s*[:=]\s*\"?([A-Za-z0-9._-]{4,})")
_HOME = re.compile(r"/(?:home|Users)/([A-Za-z_][A-Za-z0-9_.-]{0,31})")
_H4 = "[0-9a-fA-F]{4}"
_TOKENS = re.compile(
    rf"(?P<gid>(?<![0-9a-fA-F:]){_H4}(?::{_H4}){{7}}(?![0-9a-fA-F:]))"
    r"|(?P<mac>(?<![0-9a-fA-F:-])[0-9a-fA-F]{2}(?P<sep>[:-])[0-9a-fA-F]{2}(?:(?P=sep)[0-9a-fA-F]{2}){4}"
    r"(?![0-9a-fA-F:-]))"
    rf"|(?P<guid>(?<![0-9a-fA-F:]){_H4}(?::{_H4}){{3}}(?![0-9a-fA-F:]))"
    r"|(?P<v6>(?<![0-9a-fA-F:.])(?:[0-9a-fA-F]{0,4}:){2,7}[0-9a-fA-F]{0,4}(?![0-9a-fA-F:.]))"
    r"|(?P<v4>(?<![\d.])\d{1,3}(?:\.\d{1,3}){3}(?![\d.]))"
)
KEPT_MACS = {"00:00:00:00:00:00", "ff:ff:ff:ff:ff:ff"}
NEVER_NAMES = {"root", "localhost", "local", "nobody", "user", "home"}
#: Logical volume names installers use on every machine: kept, as they name nothing.
COMMON_LVS = {"root", "home", "swap", "var", "tmp", "usr", "boot", "opt", "srv", "log", "data"}
#: /16 tokens in the order they are handed out: (first octet, second octets).
_NETWORK_TOKENS = ((10, range(200, 256)), (10, range(0, 200)), (172, range(16, 32)))
#: Kernel arguments naming LVM volumes: rd.lvm.vg=VG, rd.lvm.lv=VG/LV, /dev/mapper/VG-LV
#: (device-mapper doubles a dash inside a name), /dev/VG/LV after root= or resume=.
_LVM = re.compile(r"(?P<vgarg>\brd\.lvm\.vg=)(?P<vg1>[^\s/\"',]+)"
                  r"|(?P<lvarg>\brd\.lvm\.lv=)(?P<vg2>[^\s/\"',]+)/(?P<lv2>[^\s/\"',]+)"
                  r"|(?P<mapper>/dev/mapper/)(?P<dm>(?:[^\s/\"',-]|--)+-(?:[^\s/\"',-]|--)+)"
                  r"|(?P<devarg>\b(?:root|resume)=/dev/)(?!mapper/|disk/|md/)(?P<vg3>[^\s/\"',]+)/(?P<lv3>[^\s/\"',]+)")
_NOT_VGS = {"disk", "mapper", "md", "nvme0n1", "sda", "vda", "loop0", "dm-0"}


class ScrubError(ValueError):
    """A bundle this scrub cannot map (more networks than it has tokens for)."""


@dataclass
class Scrubber:
    """One bundle's map: the same value always gets the same token."""

    names: dict[str, str] = field(default_factory=dict)  # hostname / user / serial -> token
    networks: dict[str, str] = field(default_factory=dict)  # "a.b" -> "10.x"
    macs: dict[str, str] = field(default_factory=dict)
    prefixes: dict[str, int] = field(default_factory=dict)  # IPv6 /64 prefix -> its token's
    guids: dict[int, int] = field(default_factory=dict)  # a GUID not from a MAC -> its token
    #: Names replaced only where they stand (LVM in kernel arguments, nmcli connections): as
    #: words ("fedora", "fabric") they are also ordinary text the checks read.
    placed: dict[str, str] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)

    # -- what to look for -------------------------------------------------------------
    def _name(self, value: str, kind: str) -> None:
        value = value.strip()
        if len(value) < 2 or value.lower() in NEVER_NAMES or value in self.names:
            return
        try:
            ipaddress.ip_address(value)
            return  # an address: mapped as one
        except ValueError:
            pass
        self.counts[kind] = self.counts.get(kind, 0) + 1
        self.names[value] = f"{kind}-{self.counts[kind]}"

    def _placed(self, value: str, kind: str) -> str:
        """The token of a name replaced only where it stands (learned on first sight)."""
        if value not in self.placed:
            self.counts[kind] = self.counts.get(kind, 0) + 1
            self.placed[value] = f"{kind}-{self.counts[kind]}"
        return self.placed[value]

    def _host(self, value: str) -> None:
        """A name a host gives itself or a peer: the full name and its first label."""
        value = value.strip().split("@")[-1]
        if not any(c.isalpha() for c in value):
            return  # an address (mapped as one), not a name
        self._name(value, "host")
        if (first := value.split(".")[0]) != value and any(c.isalpha() for c in first):
            self._name(first, "host")

    def learn(self, probe: SnapshotProbe) -> None:
        """Collect the names, MACs and GUIDs a snapshot holds (call for every snapshot of a
        bundle first, so each is known wherever it appears: a MAC inside an interface name,
        a GUID inside a GID)."""
        meta = probe.meta
        site = meta.get("site")
        site = site if isinstance(site, dict) else {}
        for host in (meta.get("host"), site.get("host"), site.get("node")):
            if isinstance(host, str):
                self._host(host)
        for peer in _xdomain_peers(probe):
            self._host(peer)
        for path, text in probe.tree.files.items():
            if path in ("/proc/sys/kernel/hostname", "/etc/hostname"):
                self._host(text)
            elif path.rsplit("/", 1)[-1] in SERIAL_FILES and path.startswith("/sys/"):
                self._name(text.strip(), "serial")
            for match in _HOME.finditer(text):
                self._name(match.group(1), "user")
            for match in _SERIAL_FIELD.finditer(text):
                self._name(match.group(1), "serial")
        for command in probe.commands:
            for text in (command.stdout, command.stderr):
                for match in _SERIAL_FIELD.finditer(text or ""):
                    self._name(match.group(1), "serial")
                for match in _HOME.finditer(text or ""):
                    self._name(match.group(1), "user")
        texts = [*probe.tree.files.values(), *(t for c in probe.commands for t in (c.stdout, c.stderr))]
        for text in texts:
            for match in _TOKENS.finditer(text or ""):
                if match.group("mac"):
                    self._mac(match.group(0))
                elif match.group("guid"):
                    self._guid(match.group(0))

    # -- replacing --------------------------------------------------------------------
    def _v4(self, text: str) -> str:
        try:
            address = ipaddress.IPv4Address(text)
        except ValueError:
            return text
        first = int(text.split(".")[0])
        if address.is_loopback or address.is_multicast or first in (0, 255) or address.is_link_local:
            return text
        a, b, c, d = text.split(".")
        key = f"{a}.{b}"
        if key not in self.networks:
            self.networks[key] = _network_token(len(self.networks))
        return f"{self.networks[key]}.{c}.{d}"

    def _mac(self, text: str) -> str:
        """A MAC in colons or dashes, mapped and given back in the same spelling."""
        mac = text.lower().replace("-", ":")
        if mac in KEPT_MACS:
            return text
        if mac not in self.macs:
            n = len(self.macs) + 1
            self.macs[mac] = f"02:00:5e:{n >> 16 & 0xff:02x}:{n >> 8 & 0xff:02x}:{n & 0xff:02x}"
        return self.macs[mac].replace(":", "-") if "-" in text else self.macs[mac]

    def _eui64(self, interface_id: int) -> int | None:
        """The interface id of a MAC-derived EUI-64 (`…ff:fe…`), made from the mapped MAC."""
        raw = interface_id.to_bytes(8, "big")
        if raw[3:5] != b"\xff\xfe":
            return None
        mac = bytes([raw[0] ^ 0x02]) + raw[1:3] + raw[5:8]
        mapped = bytes.fromhex(self._mac(":".join(f"{x:02x}" for x in mac)).replace(":", ""))
        return int.from_bytes(bytes([mapped[0] ^ 0x02]) + mapped[1:3] + b"\xff\xfe" + mapped[3:6], "big")

    def _gid(self, text: str) -> str:
        """A GID is an IPv6 address: mapped as one (an IPv4-mapped one as its IPv4 address)."""
        value = int(text.replace(":", ""), 16)
        if value >> 32 == 0xFFFF:  # IPv4-mapped: ::ffff:a.b.c.d
            mapped = int(ipaddress.IPv4Address(self._v4(str(ipaddress.IPv4Address(value & 0xFFFFFFFF)))))
            value = (0xFFFF << 32) | mapped
        else:
            value = int(ipaddress.IPv6Address(self._v6(str(ipaddress.IPv6Address(value)))))
        digits = f"{value:032x}"
        return ":".join(digits[i:i + 4] for i in range(0, 32, 4))

    def _guid_value(self, value: int) -> int:
        """A 64-bit GUID or interface id: a MAC-derived one follows its MAC, any other
        non-zero one gets a counted token."""
        if value == 0:
            return 0
        eui = self._eui64(value)
        if eui is not None:
            return eui
        if value not in self.guids:
            self.guids[value] = (0x5C00 << 48) | (len(self.guids) + 1)
        return self.guids[value]

    def _guid(self, text: str) -> str:
        digits = f"{self._guid_value(int(text.replace(':', ''), 16)):016x}"
        return ":".join(digits[i:i + 4] for i in range(0, 16, 4))

    def _v6(self, text: str) -> str:
        """An IPv6 address: a MAC-derived interface id follows its MAC; the /64 prefix of a
        routable (global or ULA) address becomes `fd5c:0:0:N::/64`, one per prefix."""
        try:
            address = ipaddress.IPv6Address(text)
        except ValueError:
            return text
        if address.is_loopback or address.is_unspecified or address.is_multicast:
            return text
        value = int(address)
        low, high = value & (2**64 - 1), value >> 64
        if self._eui64(low) is not None or low in self.guids:  # from a MAC, or a port GUID
            low = self._guid_value(low)
        if not address.is_link_local:
            key = f"{high:016x}"
            if key not in self.prefixes:
                self.prefixes[key] = (0xFD5C << 48) | (len(self.prefixes) + 1)
            high = self.prefixes[key]
        return str(ipaddress.IPv6Address((high << 64) | low))

    def text(self, text: str) -> str:
        def one(match: re.Match[str]) -> str:
            value = match.group(0)
            if match.group("gid"):
                return self._gid(value)
            if match.group("mac"):
                return self._mac(value)
            if match.group("guid"):
                return self._guid(value)
            if match.group("v6"):
                return self._v6(value)
            return self._v4(value)

        text = _LVM.sub(self._lvm, text)
        text = _TOKENS.sub(one, text)
        for mac, token in self.macs.items():  # a known MAC in any other spelling
            text = _spellings(mac).sub(functools.partial(_spelled, token), text)
        for value in sorted(self.names, key=len, reverse=True):  # longest first: fqdn, then short
            text = re.sub(rf"(?<![A-Za-z0-9_.-]){re.escape(value)}(?![A-Za-z0-9_-])", self.names[value], text)
        return text

    def _lvm(self, match: re.Match[str]) -> str:
        """A kernel argument's LVM names replaced by `lvm-N` (common LV names kept)."""
        def vg(name: str) -> str:
            return name if name in _NOT_VGS else self._placed(name, "lvm")

        def lv(name: str) -> str:
            return name if name in COMMON_LVS else self._placed(name, "lvm")

        if match.group("vgarg"):
            return match.group("vgarg") + vg(match.group("vg1"))
        if match.group("lvarg"):
            return f"{match.group('lvarg')}{vg(match.group('vg2'))}/{lv(match.group('lv2'))}"
        if match.group("devarg"):
            return f"{match.group('devarg')}{vg(match.group('vg3'))}/{lv(match.group('lv3'))}"
        group, volume = re.fullmatch(r"((?:[^-]|--)+)-((?:[^-]|--)+)", match.group("dm")).groups()  # type: ignore[union-attr]
        group, volume = group.replace("--", "-"), volume.replace("--", "-")
        return (match.group("mapper") + vg(group).replace("-", "--") + "-"
                + lv(volume).replace("-", "--"))

    def nmcli(self, text: str) -> str:
        """`nmcli -t … device status`: each CONNECTION field (the 4th) by its token (a
        connection named as its device, or none, kept)."""
        lines = []
        for line in text.split("\n"):
            fields = split_terse(line)
            if len(fields) >= 4 and fields[3] not in ("", "--", fields[0]):
                fields[3] = self._placed(fields[3], "conn")
                line = ":".join(f.replace("\\", "\\\\").replace(":", "\\:") for f in fields)
            lines.append(line)
        return "\n".join(lines)

    def command(self, command: CmdResult) -> CmdResult:
        argv = [self.text(a) for a in command.argv]
        stdout = self.text(command.stdout)
        if command.argv[:1] == ("nmcli",):
            stdout = self.nmcli(stdout)
            argv = [self._placed(a, "conn") if i and command.argv[i - 1] == "id" else a
                    for i, a in enumerate(argv)]
        return CmdResult(tuple(argv), command.rc, stdout, self.text(command.stderr))

    def value(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.value(v) for v in value]
        if isinstance(value, dict):
            return {self.text(str(k)): self.value(v) for k, v in value.items()}
        return value

    def snapshot(self, probe: SnapshotProbe) -> SnapshotProbe:
        """A scrubbed copy of `probe` (learn every snapshot of the bundle first)."""
        tree = SnapshotTree()
        for path, text in probe.tree.files.items():
            tree.add_file(self.text(path), self.text(text))
        for path, target in probe.tree.links.items():
            tree.add_link(self.text(path), self.text(target))
        commands = [self.command(c) for c in probe.commands]
        meta = self.value(probe.meta)
        meta["scrubbed"] = True
        return SnapshotProbe(tree, meta, commands, probe.source)

    def private_map(self) -> dict[str, Any]:
        """What each token stands for: for the owner only, never inside the bundle."""
        return {"format": "strixwizard-scrub-map/1",
                "names": {token: value for value, token in [*self.names.items(), *self.placed.items()]},
                "ipv4_networks": {f"{new}.0.0/16": f"{old}.0.0/16" for old, new in self.networks.items()},
                "macs": {token: mac for mac, token in self.macs.items()},
                "guids": {_guid_text(token): _guid_text(guid) for guid, token in self.guids.items()},
                "ipv6_prefixes": {str(ipaddress.IPv6Address(new << 64)) + "/64":
                                  str(ipaddress.IPv6Address(int(old, 16) << 64)) + "/64"
                                  for old, new in self.prefixes.items()}}

    def map_text(self) -> str:
        return json.dumps(self.private_map(), indent=1, allow_nan=False) + "\n"


@functools.lru_cache(maxsize=4096)
def _spellings(mac: str) -> re.Pattern[str]:
    """`mac` with colons, dashes or nothing between its pairs, in either case, inside a
    longer name too (`enx001122334455`, PXE's `BOOTIF=01-00-11-22-33-44-55`)."""
    first, *rest = mac.split(":")
    return re.compile("(?i)(?<![0-9a-f])" + first + "(?P<s>[:-]?)" + "(?P=s)".join(rest)
                      + "(?![0-9a-f])")


#: The USB4 devices' sysfs folder (facts/thunderbolt.py reads the same; probe sits below facts).
TB_DEVICES = "/sys/bus/thunderbolt/devices"


def _devtype(uevent: str) -> str | None:
    """`DEVTYPE=` of a uevent file (thunderbolt_xdomain: another host)."""
    return next((line.partition("=")[2].strip() for line in uevent.splitlines()
                 if line.startswith("DEVTYPE=")), None)


def _spelled(token: str, match: re.Match[str]) -> str:
    """`token` spelled as the MAC `match` found (its separator, or none)."""
    return token.replace(":", match.group("s"))


def _xdomain_peers(probe: SnapshotProbe) -> list[str]:
    """The names USB4 XDomain peers announce (`device_name` of a `thunderbolt_xdomain`
    device; without its uevent, of one whose vendor is "Linux"): another host's hostname."""
    found = []
    for device in probe.listdir(TB_DEVICES):
        base = f"{TB_DEVICES}/{device}"
        name = probe.read(f"{base}/device_name")
        if not name:
            continue
        devtype = _devtype(probe.read(f"{base}/uevent") or "")
        vendor = (probe.read(f"{base}/vendor_name") or "").strip()
        if devtype == "thunderbolt_xdomain" or (devtype is None and vendor == "Linux"):
            found.append(name)
    return found


def _guid_text(value: int) -> str:
    digits = f"{value:016x}"
    return ":".join(digits[i:i + 4] for i in range(0, 16, 4))


def _network_token(n: int) -> str:
    """The n-th /16 token (0-based): 10.200-10.255, then 10.0-10.199, then 172.16-172.31."""
    for first, seconds in _NETWORK_TOKENS:
        if n < len(seconds):
            return f"{first}.{seconds[n]}"
        n -= len(seconds)
    raise ScrubError("more than 272 distinct /16 networks in one bundle: more than this scrub "
                     "has tokens for; scrub fewer snapshots at once")


def map_path(out: Path) -> Path:
    """Where the owner's map of a scrubbed capture `out` goes: beside it, never inside."""
    return out.with_name(out.name.removesuffix(".tar.gz") + ".scrub-map.json")


def scrub_bundle(paths: Sequence[Path], private_map: Path) -> Scrubber:
    """Scrub snapshots (directories or .tar.gz) in place with one map for all of them, and
    write that map to `private_map` (0600, never overwriting one)."""
    probes = [SnapshotProbe.load(path) for path in paths]
    scrubber = Scrubber()
    for probe in probes:
        scrubber.learn(probe)
    clean = [scrubber.snapshot(probe) for probe in probes]  # the map is complete after this
    with os.fdopen(os.open(private_map, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as stream:
        stream.write(scrubber.map_text())
    for path, probe in zip(paths, clean, strict=True):
        _replace(path, probe)
    return scrubber


def _replace(path: Path, probe: SnapshotProbe) -> None:
    with tempfile.TemporaryDirectory(dir=path.parent, prefix=".scrub-") as scratch:
        laid = probe.write_dir(Path(scratch) / "snapshot")
        if path.is_dir():
            shutil.rmtree(path)
            os.replace(laid, path)
            os.chmod(path, 0o700)
            return
        partial = path.with_name(path.name + ".partial")
        with os.fdopen(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as raw, \
                tarfile.open(fileobj=raw, mode="w:gz") as archive:
            for entry in sorted(laid.iterdir()):
                archive.add(entry, arcname=entry.name)
        os.replace(partial, path)

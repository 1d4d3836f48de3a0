"""Snapshots fit to share: hostnames, IP and MAC addresses, serial numbers and user names
replaced by tokens, the same value by the same token throughout a bundle (so links still pair
up and a scrubbed bundle replays with the same verdicts), with a private map for the owner.

Modelled on sos report's cleaner (`sos clean`, https://github.com/sosreport/sos, its
"obfuscation maps"): one map per run, applied to every file, kept apart from what is shared.

- IPv4: the first two octets of each /16 become `10.(200+n)`, the last two are kept, so two
  addresses in one subnet (/16 or longer prefix) stay in one subnet, in the dotted form and
  in the IPv4-mapped GIDs of /sys (`0000:…:ffff:c0a8:6401`). Loopback, 0.x, netmasks (255.x)
  and multicast stay as they are.
- MAC addresses become locally administered `02:00:5e:…` (counted); the all-zero and
  broadcast addresses stay. EUI-64 link-local GIDs and node GUIDs derived from a MAC follow it.
- Hostnames (meta.json's host, the kernel's hostname, the site's SSH hosts), user names (home
  folders) and serial numbers (DMI serials and UUIDs, `Serial Number`/`[SN]`/`serial_number`
  fields) become `host-N`, `user-N`, `serial-N` wherever they appear.
"""

from __future__ import annotations

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

from strixwizard.probe import CmdResult
from strixwizard.probe.snapshot import SnapshotProbe, SnapshotTree

SERIAL_FILES = ("product_serial", "board_serial", "chassis_serial", "product_uuid")
_SERIAL_FIELD = re.compile(r"(?im)(?:serial[ _-]?(?:number|no)?|\[SN\])\s*[:=]\s*\"?([A-Za-z0-9._-]{4,})")
_HOME = re.compile(r"/(?:home|Users)/([A-Za-z_][A-Za-z0-9_.-]{0,31})")
_H4 = "[0-9a-fA-F]{4}"
_TOKENS = re.compile(
    rf"(?P<gid>(?<![0-9a-fA-F:]){_H4}(?::{_H4}){{7}}(?![0-9a-fA-F:]))"
    r"|(?P<mac>(?<![0-9a-fA-F:])[0-9a-fA-F]{2}(?::[0-9a-fA-F]{2}){5}(?![0-9a-fA-F:]))"
    rf"|(?P<guid>(?<![0-9a-fA-F:]){_H4}(?::{_H4}){{3}}(?![0-9a-fA-F:]))"
    r"|(?P<v6>(?<![0-9a-fA-F:.])(?:[0-9a-fA-F]{0,4}:){2,7}[0-9a-fA-F]{0,4}(?![0-9a-fA-F:.]))"
    r"|(?P<v4>(?<![\d.])\d{1,3}(?:\.\d{1,3}){3}(?![\d.]))"
)
KEPT_MACS = {"00:00:00:00:00:00", "ff:ff:ff:ff:ff:ff"}
NEVER_NAMES = {"root", "localhost", "local", "nobody", "user", "home"}


@dataclass
class Scrubber:
    """One bundle's map: the same value always gets the same token."""

    names: dict[str, str] = field(default_factory=dict)  # hostname / user / serial -> token
    networks: dict[str, str] = field(default_factory=dict)  # "a.b" -> "10.x"
    macs: dict[str, str] = field(default_factory=dict)
    prefixes: dict[str, int] = field(default_factory=dict)  # IPv6 /64 prefix -> its token's
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

    def learn(self, probe: SnapshotProbe) -> None:
        """Collect the names a snapshot holds (call for every snapshot of a bundle first)."""
        meta = probe.meta
        for host in (meta.get("host"), (meta.get("site") or {}).get("host")):
            if isinstance(host, str):
                self._name(host.split("@")[-1], "host")
        for path, text in probe.tree.files.items():
            if path in ("/proc/sys/kernel/hostname", "/etc/hostname"):
                self._name(text.strip(), "host")
                self._name(text.strip().split(".")[0], "host")
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
            self.networks[key] = f"10.{200 + len(self.networks)}"
        return f"{self.networks[key]}.{c}.{d}"

    def _mac(self, text: str) -> str:
        mac = text.lower()
        if mac in KEPT_MACS:
            return text
        if mac not in self.macs:
            n = len(self.macs) + 1
            self.macs[mac] = f"02:00:5e:{n >> 16 & 0xff:02x}:{n >> 8 & 0xff:02x}:{n & 0xff:02x}"
        return self.macs[mac]

    def _eui64(self, interface_id: int) -> int | None:
        """The interface id of a MAC-derived EUI-64 (`…ff:fe…`), made from the mapped MAC."""
        raw = interface_id.to_bytes(8, "big")
        if raw[3:5] != b"\xff\xfe":
            return None
        mac = bytes([raw[0] ^ 0x02]) + raw[1:3] + raw[5:8]
        mapped = bytes.fromhex(self._mac(":".join(f"{x:02x}" for x in mac)).replace(":", ""))
        return int.from_bytes(bytes([mapped[0] ^ 0x02]) + mapped[1:3] + b"\xff\xfe" + mapped[3:6], "big")

    def _gid(self, text: str) -> str:
        value = int(text.replace(":", ""), 16)
        if value >> 32 == 0xFFFF:  # IPv4-mapped: ::ffff:a.b.c.d
            mapped = int(ipaddress.IPv4Address(self._v4(str(ipaddress.IPv4Address(value & 0xFFFFFFFF)))))
            value = (0xFFFF << 32) | mapped
        elif (eui := self._eui64(value & (2**64 - 1))) is not None:
            value = (value >> 64 << 64) | eui
        else:
            return text
        digits = f"{value:032x}"
        return ":".join(digits[i:i + 4] for i in range(0, 32, 4))

    def _guid(self, text: str) -> str:
        eui = self._eui64(int(text.replace(":", ""), 16))
        if eui is None:
            return text
        digits = f"{eui:016x}"
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
        eui = self._eui64(value & (2**64 - 1))
        low = value & (2**64 - 1) if eui is None else eui
        high = value >> 64
        if not address.is_link_local:
            key = f"{high:016x}"
            if key not in self.prefixes:
                self.prefixes[key] = (0xFD5C << 48) | (len(self.prefixes) + 1)
            high = self.prefixes[key]
        return str(ipaddress.IPv6Address((high << 64) | low))

    def text(self, text: str) -> str:
        def one(match: re.Match[str]) -> str:
            kind, value = match.lastgroup, match.group(0)
            if kind == "gid":
                return self._gid(value)
            if kind == "mac":
                return self._mac(value)
            if kind == "guid":
                return self._guid(value)
            if kind == "v6":
                return self._v6(value)
            return self._v4(value)

        text = _TOKENS.sub(one, text)
        for value in sorted(self.names, key=len, reverse=True):  # longest first: fqdn, then short
            text = re.sub(rf"(?<![A-Za-z0-9_.-]){re.escape(value)}(?![A-Za-z0-9_-])", self.names[value], text)
        return text

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
        commands = [CmdResult(tuple(self.text(a) for a in c.argv), c.rc, self.text(c.stdout),
                              self.text(c.stderr))
                    for c in probe.commands]
        meta = self.value(probe.meta)
        meta["scrubbed"] = True
        return SnapshotProbe(tree, meta, commands, probe.source)

    def private_map(self) -> dict[str, Any]:
        """What each token stands for: for the owner only, never inside the bundle."""
        return {"format": "strixwizard-scrub-map/1",
                "names": {token: value for value, token in self.names.items()},
                "ipv4_networks": {f"{new}.0.0/16": f"{old}.0.0/16" for old, new in self.networks.items()},
                "macs": {token: mac for mac, token in self.macs.items()},
                "ipv6_prefixes": {str(ipaddress.IPv6Address(new << 64)) + "/64":
                                  str(ipaddress.IPv6Address(int(old, 16) << 64)) + "/64"
                                  for old, new in self.prefixes.items()}}

    def map_text(self) -> str:
        return json.dumps(self.private_map(), indent=1) + "\n"


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

"""`capture --scrub` against generated snapshots: nothing the capture's own facts list as an
identifier survives a scrub, in any spelling.

A seeded generator (no hypothesis in the test dependencies) takes the demo's node-a snapshot
and gives it fresh identifiers where a real node has them: its hostname, every interface's
MAC (sysfs and `ip -j addr`, with systemd's `enx<MAC>` altname), IPv4 and global IPv6
addresses, the RDMA port's GIDs (EUI-64 link-local, IPv4-mapped, the global IPv6 address) and
node GUID, the USB4 XDomain peer's announced hostname, LVM names and PXE's BOOTIF in the
kernel's arguments, nmcli connection names, the site's node name and SSH host. The facts
readers (`netdevs`, `rdma_devices`, `usb4_info`, `kernel_info`, the nmcli output) then say
what identifies the node; the scrubbed bundle must hold none of it."""

from __future__ import annotations

import ipaddress
import json
import random
import re
import string
from pathlib import Path

import pytest

from strixwizard.facts.kernel import cmdline_param, kernel_info
from strixwizard.facts.netdev import netdevs
from strixwizard.facts.outputs import run_output
from strixwizard.facts.pci import pci_devices
from strixwizard.facts.persistence import NMCLI_DEVICES
from strixwizard.facts.rdma import rdma_devices
from strixwizard.facts.thunderbolt import usb4_info
from strixwizard.probe import CmdResult
from strixwizard.probe.scrub import COMMON_LVS, Scrubber
from strixwizard.probe.snapshot import SnapshotProbe

DEMO = Path(__file__).resolve().parent.parent / "strixwizard" / "demo" / "snapshots" / "node-a.tar.gz"
SEEDS = range(25)


def _name(rng: random.Random, size: int = 8) -> str:
    return rng.choice(string.ascii_lowercase) + "".join(
        rng.choice(string.ascii_lowercase + string.digits) for _ in range(size - 1))


def _mac(rng: random.Random) -> str:
    first = rng.randrange(256) & 0xFC  # unicast, universally administered
    return ":".join(f"{b:02x}" for b in [first, *(rng.randrange(256) for _ in range(5))])


def _eui64_gid(mac: str) -> str:
    raw = bytes.fromhex(mac.replace(":", ""))
    iid = bytes([raw[0] ^ 0x02]) + raw[1:3] + b"\xff\xfe" + raw[3:]
    return _gid(0xFE80 << 112 | int.from_bytes(iid, "big"))


def _gid(value: int) -> str:
    digits = f"{value:032x}"
    return ":".join(digits[i:i + 4] for i in range(0, 32, 4))


def generated(seed: int) -> SnapshotProbe:
    """node-a with fresh identifiers from `seed`."""
    rng = random.Random(seed)
    probe = SnapshotProbe.load(DEMO)
    tree, files = probe.tree, probe.tree.files

    def put(path: str, text: str) -> None:
        files[tree.resolve(path) or path] = text

    host, peer = f"{_name(rng)}.{_name(rng, 5)}.example", _name(rng)
    put("/proc/sys/kernel/hostname", host + "\n")
    probe.meta["host"] = host
    probe.meta["site"] = {"name": "lab", "node": _name(rng), "host": f"10.{rng.randrange(256)}.1.7",
                          "fabric_address": None}
    put("/sys/bus/thunderbolt/devices/0-1/device_name", peer + "\n")

    links = json.loads(next(c.stdout for c in probe.commands if c.argv[:3] == ("ip", "-j", "addr")))
    macs: dict[str, str] = {}
    for link in links:
        if link["ifname"] == "lo":
            continue
        mac = macs[link["ifname"]] = _mac(rng)
        link["address"] = mac
        link["altnames"] = ["enx" + mac.replace(":", "")]
        prefix = rng.randrange(1, 2**48) | 0x2000 << 48  # a global unicast /64
        v6 = ipaddress.IPv6Address(prefix << 64 | rng.randrange(1, 2**63))
        first = rng.choice([*range(11, 127), *range(128, 169), *range(170, 223)])  # not loopback
        v4 = ipaddress.IPv4Address(f"{first}.{rng.randrange(256)}.{rng.randrange(256)}."
                                   f"{rng.randrange(1, 255)}")
        link["addr_info"] = [
            {"family": "inet", "local": str(v4), "prefixlen": 24, "scope": "global"},
            {"family": "inet6", "local": str(v6), "prefixlen": 64, "scope": "global"}]
        put(f"/sys/class/net/{link['ifname']}/address", mac + "\n")
        for device in probe.listdir("/sys/class/infiniband"):
            base = f"/sys/class/infiniband/{device}"
            for port in probe.listdir(f"{base}/ports"):
                if (probe.read(f"{base}/ports/{port}/gid_attrs/ndevs/0") or "").strip() != link["ifname"]:
                    continue
                gids = [_eui64_gid(mac), _gid(0xFFFF << 32 | int(v4)), _gid(int(v6))]
                for index, gid in enumerate(gids):
                    put(f"{base}/ports/{port}/gids/{index}", gid + "\n")
                    put(f"{base}/ports/{port}/gid_attrs/ndevs/{index}", link["ifname"] + "\n")
                    put(f"{base}/ports/{port}/gid_attrs/types/{index}", "RoCE v2\n")
                guid = f"{rng.randrange(1, 2**64):016x}"
                put(f"{base}/node_guid", ":".join(guid[i:i + 4] for i in range(0, 16, 4)) + "\n")
    vg = f"{_name(rng, 6)}_{host.split('.')[0]}"
    boot = rng.choice(list(macs.values())).replace(":", "-")
    cmdline = (probe.read("/proc/cmdline") or "").strip()
    put("/proc/cmdline", f"{cmdline} rd.lvm.vg={vg} rd.lvm.lv={vg}/{_name(rng, 5)} "
        f"root=/dev/mapper/{vg.replace('-', '--')}-root BOOTIF=01-{boot}\n")
    nmcli = "".join(f"{name}:ethernet:connected:{_name(rng, 6)}\\: {_name(rng, 4)}\n" for name in macs)
    commands = []
    for command in probe.commands:
        if command.argv[:3] == ("ip", "-j", "addr"):
            command = CmdResult(command.argv, command.rc, json.dumps(links), command.stderr)
        elif command.argv[:1] == ("nmcli",):
            command = CmdResult(command.argv, command.rc, nmcli, command.stderr)
        commands.append(command)
    return SnapshotProbe(tree, probe.meta, commands, probe.source)


def identifiers(probe: SnapshotProbe) -> set[str]:
    """What the facts readers find that identifies this node or its peers."""
    found: set[str] = {probe.host, probe.host.split(".")[0]}
    site = probe.meta.get("site") or {}
    found |= {v for v in (site.get("node"), site.get("host")) if v}
    for netdev in netdevs(probe):
        if netdev.mac:
            found.add(netdev.mac)
        found |= set(netdev.altnames)
        found |= {a.address for a in netdev.addresses or () if a.scope == "global"}
    for device in rdma_devices(probe):
        found.add((probe.read(f"/sys/class/infiniband/{device.name}/node_guid") or "").strip())
        found |= {gid.gid for port in device.ports for gid in port.gids}
    found |= {p.device_name for p in usb4_info(probe, pci_devices(probe)).peers
              if p.kind == "xdomain" and p.device_name}
    words = kernel_info(probe).cmdline
    for key in ("rd.lvm.vg", "rd.lvm.lv"):
        found |= {part for part in (cmdline_param(words, key) or "").split("/")
                  if part and part not in COMMON_LVS}
    found |= set((run_output(probe, NMCLI_DEVICES).value or {}).values())
    return {f for f in found if f and f != "0000:0000:0000:0000"}


def spellings(identifier: str) -> set[str]:
    """Every way the bundle could write it: a MAC with colons, dashes or none; an IPv6
    address (a GID) full and compressed."""
    if re.fullmatch(r"(?:[0-9a-f]{2}:){5}[0-9a-f]{2}", identifier):
        return {identifier, identifier.replace(":", "-"), identifier.replace(":", "")}
    try:
        address = ipaddress.IPv6Address(identifier)
    except ValueError:
        return {identifier}
    return {identifier, str(address), address.exploded}


def survivors(probe: SnapshotProbe, found: set[str]) -> set[str]:
    scrubber = Scrubber()
    scrubber.learn(probe)
    clean = scrubber.snapshot(probe)
    text = "\n".join([*clean.tree.files, *clean.tree.files.values(), *clean.tree.links,
                      *clean.tree.links.values(), json.dumps(clean.meta),
                      *(part for c in clean.commands for part in (*c.argv, c.stdout, c.stderr))]).lower()
    return {i for i in found for s in spellings(i)
            if re.search(rf"(?<![0-9a-z]){re.escape(s.lower())}(?![0-9a-z])", text)}


@pytest.mark.parametrize("seed", SEEDS)
def test_nothing_the_facts_list_as_an_identifier_survives_a_scrub(seed: int) -> None:
    probe = generated(seed)
    found = identifiers(probe)
    # the generator put every kind in, and the facts found them
    assert len([f for f in found if re.fullmatch(r"(?:[0-9a-f]{2}:){5}[0-9a-f]{2}", f)]) >= 2
    assert any(f.startswith("enx") for f in found)
    assert any(f.startswith("0000:0000:0000:0000:0000:ffff") for f in found)  # IPv4-mapped GID
    assert any(len(f) == 39 and not f.startswith(("fe80", "0000")) for f in found)  # a global GID
    assert probe.meta["site"]["node"] in found and any("\\" not in f and ": " in f for f in found)
    assert survivors(probe, found) == set()


def test_the_generated_snapshot_still_judges_like_the_demo() -> None:
    """The generator changes identifiers only: the facts still read an RDMA device, its
    netdev, the USB4 peer (so the property above is about a snapshot the checks read)."""
    probe = generated(0)
    assert [d.name for d in rdma_devices(probe)] == ["rocep194s0"]
    assert [p.kind for p in usb4_info(probe, pci_devices(probe)).peers] == ["xdomain"]

"""`capture --scrub`: support bundles fit to share. Hostnames, IP and MAC addresses, serials
and user names become tokens, the same value the same token across the bundle; the scrubbed
bundle replays with the same verdicts; the map back stays beside it, private."""

from __future__ import annotations

import json
import re
import shutil
import stat
import tarfile
from collections import Counter
from pathlib import Path

import pytest

from strixwizard.probe.scrub import Scrubber, map_path, scrub_bundle
from strixwizard.probe.snapshot import SnapshotProbe
from tests.support.cli import run_cli

DEMO = Path(__file__).resolve().parent.parent / "strixwizard" / "demo" / "snapshots"


def _verdicts(*snapshots: Path) -> Counter[tuple[str, str]]:
    done = run_cli("doctor", "--json", "--snapshot", *map(str, snapshots))
    return Counter((c["id"], c["status"]) for c in done.json()["checks"])


def _texts(snapshot: Path) -> str:
    with tarfile.open(snapshot) as archive:
        return "\n".join(archive.extractfile(m).read().decode("utf-8", "replace")  # type: ignore[union-attr]
                         for m in archive if m.isfile())


def test_the_demo_bundle_scrubbed_replays_with_the_same_verdicts(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    copies = [Path(shutil.copy(DEMO / name, bundle / name)) for name in ("node-a.tar.gz", "node-b.tar.gz")]
    before = _texts(copies[0]) + _texts(copies[1])
    scrubber = scrub_bundle(copies, map_path(bundle))
    after = _texts(copies[0]) + _texts(copies[1])
    for secret in ("strix-a", "strix-b", "192.168.100.1", "192.168.100.2", "9c:6b:00:4a:22:01",
                   "c0a8:6401", "c0a8:6402"):
        assert secret in before and secret not in after, secret
    assert _verdicts(*copies) == _verdicts(DEMO / "node-a.tar.gz", DEMO / "node-b.tar.gz")
    # one map for the bundle: both ends of the /30 land in one network, so the link pairs up
    assert "10.200.100.1" in _texts(copies[0]) and "10.200.100.2" in _texts(copies[1])
    assert scrubber.networks == {"192.168": "10.200", "10.0": "10.201"}
    private = map_path(bundle)
    assert private.parent == tmp_path and stat.S_IMODE(private.stat().st_mode) == 0o600
    mapped = json.loads(private.read_text())
    assert mapped["names"] == {"host-1": "strix-a", "host-2": "strix-b", "conn-1": "Wired connection 1",
                               "conn-2": "fabric", "conn-3": "usb4"}
    assert SnapshotProbe.load(copies[0]).meta["scrubbed"] is True


def test_the_same_value_maps_to_the_same_token_in_every_form() -> None:
    scrubber = Scrubber()
    ip = scrubber.text("inet 192.168.100.1/30")
    gid = scrubber.text("0000:0000:0000:0000:0000:ffff:c0a8:6401")
    assert ip == "inet 10.200.100.1/30" and gid.endswith(":ffff:0ac8:6401")
    mac = scrubber.text("link/ether b4:96:91:9c:41:d8 brd ff:ff:ff:ff:ff:ff")
    assert mac == "link/ether 02:00:5e:00:00:01 brd ff:ff:ff:ff:ff:ff"
    # the link-local address and node GUID derived from that MAC follow it
    assert scrubber.text("fe80::b696:91ff:fe9c:41d8") == "fe80::5eff:fe00:1"
    assert scrubber.text("b696:91ff:fe9c:41d8") == "0000:5eff:fe00:0001"
    assert scrubber.text("127.0.0.1 255.255.255.252 0.0.0.0") == "127.0.0.1 255.255.255.252 0.0.0.0"


def test_capture_scrub_on_this_machine(tmp_path: Path) -> None:
    plain = run_cli("capture", "--out", str(tmp_path / "plain"), "--tar")
    assert plain.rc == 0, plain.stderr
    scrubbed = run_cli("capture", "--out", str(tmp_path / "shared"), "--tar", "--scrub")
    assert scrubbed.rc == 0, scrubbed.stderr
    archive = tmp_path / "shared.tar.gz"
    private = tmp_path / "shared.scrub-map.json"
    assert f"do not share it): {private}" in scrubbed.stdout
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
    original, shared = _texts(tmp_path / "plain.tar.gz"), _texts(archive)
    macs = set(re.findall(r"\b(?:[0-9a-f]{2}:){5}[0-9a-f]{2}\b", original)) - {"00:00:00:00:00:00",
                                                                             "ff:ff:ff:ff:ff:ff"}
    assert macs and not any(mac in shared for mac in macs)
    host = SnapshotProbe.load(tmp_path / "plain.tar.gz").host
    assert not re.search(rf"(?<![\w.-]){re.escape(host)}(?![\w-])", shared)
    again = run_cli("capture", "--out", str(tmp_path / "shared"), "--tar", "--scrub")
    assert again.rc == 2 and "already exists" in again.stderr  # the map is never overwritten
    # the same capture scrubbed afterwards judges the same as it did unscrubbed
    copy = Path(shutil.copy(tmp_path / "plain.tar.gz", tmp_path / "copy.tar.gz"))
    scrub_bundle([copy], map_path(copy))
    assert _verdicts(copy) == _verdicts(tmp_path / "plain.tar.gz")


@pytest.mark.lab
def test_a_lab_bundle_scrubbed_replays_as_the_site_with_the_same_verdicts(tmp_path: Path) -> None:
    from tests.support.lab import Lab, require_lab_tools, sweep_stale_labs

    require_lab_tools()
    sweep_stale_labs()
    with Lab(tmp_path / "lab", 2) as lab:
        site = lab.write_site_yaml(tmp_path / "lab.yaml")
        plain = run_cli("capture", "--site", str(site), "--out", str(tmp_path / "plain"))
        assert plain.rc == 0, plain.stderr
        shared = run_cli("capture", "--site", str(site), "--out", str(tmp_path / "shared"), "--scrub")
        assert shared.rc == 0, shared.stderr
        addresses = [a for host in lab.hosts for a in (host.mgmt_addr, host.fabric_addr) if a]
    archives = sorted((tmp_path / "shared").glob("*.tar.gz"))
    texts = "".join(_texts(a) for a in archives)
    assert addresses and not any(re.search(rf"(?<![\d.]){re.escape(a)}(?![\d])", texts) for a in addresses)
    replay = run_cli("doctor", "--json", "--snapshot", *map(str, archives)).json()
    # still the site, its node names scrubbed too (an operator often names a node as its host)
    token = {name: t for t, name in json.loads((tmp_path / "shared.scrub-map.json").read_text())
             ["names"].items()}
    assert sorted(a.name for a in archives) == sorted(f"{token[n]}.tar.gz" for n in ("node0", "node1"))
    assert sorted(h["name"] for h in replay["hosts"]) == sorted([token["node0"], token["node1"]])
    assert not re.search(r"(?<![\w.-])node[01](?![\w-])", texts)
    assert len(replay["links"]) >= 1  # the fabric still pairs up
    assert _verdicts(*archives) == _verdicts(*sorted((tmp_path / "plain").glob("*.tar.gz")))


def test_every_spelling_of_a_known_mac_and_guid_follows_the_same_token() -> None:
    scrubber = Scrubber()
    scrubber.text("link/ether 00:11:22:33:44:55")
    assert scrubber.text("00-11-22-33-44-55 enx001122334455 BOOTIF=01-00-11-22-33-44-55") == (
        "02-00-5e-00-00-01 enx02005e000001 BOOTIF=01-02-00-5e-00-00-01")
    # a ConnectX node GUID (not from a MAC) gets a counted token, in an IB port's GID too
    assert scrubber.text("0c42:a103:0024:c7b4") == "5c00:0000:0000:0001"
    assert scrubber.text("fe80:0000:0000:0000:0c42:a103:0024:c7b4") == \
        "fe80:0000:0000:0000:5c00:0000:0000:0001"
    # a RoCE v2 GID of a global IPv6 address gets the address's prefix token
    assert scrubber.text("2001:db8:1:2::7") == "fd5c:0:0:1::7"
    assert scrubber.text("2001:0db8:0001:0002:0000:0000:0000:0007") == \
        "fd5c:0000:0000:0001:0000:0000:0000:0007"


def test_lvm_and_nmcli_names_are_replaced_where_they_stand_not_as_words() -> None:
    from strixwizard.facts.persistence import parse_nmcli_devices

    scrubber = Scrubber()
    cmdline = ("root=/dev/mapper/fedora_strix--a-root rd.lvm.lv=fedora_strix-a/root "
               "rd.lvm.vg=fedora_strix-a resume=/dev/fedora_strix-a/swap")
    assert scrubber.text(cmdline) == ("root=/dev/mapper/lvm--1-root rd.lvm.lv=lvm-1/root "
                                      "rd.lvm.vg=lvm-1 resume=/dev/lvm-1/swap")
    assert scrubber.text("ID=fedora\nfabric") == "ID=fedora\nfabric"  # words stay words
    nmcli = "wlp1s0:wifi:connected:Smith\\:Family WiFi\nlo:loopback:connected (externally):lo\n"
    assert parse_nmcli_devices(scrubber.nmcli(nmcli)) == {"wlp1s0": "conn-1", "lo": "lo"}
    assert scrubber.private_map()["names"] == {"lvm-1": "fedora_strix-a", "conn-1": "Smith:Family WiFi"}


def test_more_networks_than_tokens_is_refused_not_turned_into_invalid_addresses() -> None:
    from strixwizard.probe.scrub import ScrubError

    scrubber = Scrubber()
    tokens = [scrubber.text(f"{11 + n // 200}.{n % 200}.1.2") for n in range(272)]
    assert tokens[55] == "10.255.1.2" and tokens[56] == "10.0.1.2" and tokens[271] == "172.31.1.2"
    with pytest.raises(ScrubError, match="more than 272 distinct /16 networks"):
        scrubber.text("200.1.1.2")


def test_a_capture_stopped_by_an_error_leaves_no_raw_snapshot_and_names_what_it_removed(
        tmp_path: Path) -> None:
    """A full disk while the second node is written: the first node's raw archive, in the
    private temporary folder, is removed with it; --out and the map are never made."""
    import errno

    from strixwizard.services.capture_scrub import scrubbed_capture

    out, stops = tmp_path / "shared", []

    def collect(stand_in: Path) -> list[Path]:
        stand_in.mkdir(mode=0o700)
        assert stat.S_IMODE(stand_in.parent.stat().st_mode) == 0o700  # private while raw
        shutil.copy(DEMO / "node-a.tar.gz", stand_in / "node0.tar.gz")
        raise OSError(errno.ENOSPC, "No space left on device", str(stand_in / "node1.tar.gz"))

    with pytest.raises(OSError, match="No space left"):
        scrubbed_capture(out, map_path(out), collect, lambda names, folder: stops.append(names))
    assert stops == [["shared/node0.tar.gz"]]
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_site_bundle_folder_already_in_use_is_refused_before_anything_is_captured(
        tmp_path: Path) -> None:
    from strixwizard.errors import UsageError
    from strixwizard.services.capture_scrub import scrubbed_capture

    out = tmp_path / "shared"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    called = []
    with pytest.raises(UsageError, match="already exists"):
        scrubbed_capture(out, map_path(out), lambda stand_in: called.append(stand_in) or [],
                         lambda names, folder: None, folder=True)
    assert called == [] and sorted(p.name for p in tmp_path.iterdir()) == ["shared"]


def test_capture_scrub_of_this_machine_as_a_folder_lands_scrubbed_and_leaves_no_stage(
        tmp_path: Path) -> None:
    done = run_cli("capture", "--out", str(tmp_path / "shared"), "--scrub")
    assert done.rc == 0, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shared", "shared.scrub-map.json"]
    assert stat.S_IMODE((tmp_path / "shared").stat().st_mode) == 0o700
    assert SnapshotProbe.load(tmp_path / "shared").meta["scrubbed"] is True

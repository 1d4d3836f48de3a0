"""Facts read from captured scenarios, and the spec covers everything the facts touch."""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from pathlib import Path

import pytest

from strixwizard.facts import NodeFacts
from strixwizard.facts.spec import SPEC
from strixwizard.probe import CmdResult
from strixwizard.probe.snapshot import SnapshotProbe
from tests.support import scenarios

#: what a newer Python changes (tarfile and the snapshot reader): run on 3.12 and up too
pytestmark = pytest.mark.interpreter


class RecordingProbe:
    def __init__(self, inner: SnapshotProbe) -> None:
        self.inner = inner
        self.host = inner.host
        self.reads: set[str] = set()
        self.links: set[str] = set()
        self.argvs: set[tuple[str, ...]] = set()

    def read(self, path: str) -> str | None:
        self.reads.add(path)
        return self.inner.read(path)

    def listdir(self, path: str) -> list[str]:
        return self.inner.listdir(path)

    def readlink(self, path: str) -> str | None:
        self.links.add(path)
        return self.inner.readlink(path)

    def run(self, argv: Sequence[str]) -> CmdResult:
        self.argvs.add(tuple(argv))
        return self.inner.run(argv)


def touch_all(facts: NodeFacts) -> None:
    for name in ("cpu", "pci", "gpu", "kernel", "memory", "iommu", "memlock", "rocm", "netdevs",
                 "nics", "rdma", "devlink", "usb4", "active_mtu_captured"):
        getattr(facts, name)
    for netdev in facts.netdevs:
        facts.dcb(netdev.name)
        facts.pause(netdev.name)
        facts.priv_flags(netdev.name)


ALL_SCENARIOS = [
    scenarios.healthy_e810_pair, scenarios.connectx6dx_pair, scenarios.thunderbolt_only_pair,
    scenarios.infiniband_cx3_pair, scenarios.non_strix_machine, scenarios.platform_faults_node,
]


@pytest.mark.parametrize("scenario", ALL_SCENARIOS, ids=lambda f: f.__name__)
def test_every_path_and_command_the_facts_use_is_in_the_spec(tmp_path: Path, scenario) -> None:  # type: ignore[no-untyped-def]
    for name, probe in scenarios.capture(tmp_path, scenario()).items():
        recorder = RecordingProbe(probe)
        facts = NodeFacts(name, recorder)
        touch_all(facts)
        uncovered = [p for p in recorder.reads
                     if not any(fnmatch.fnmatch(p, g) for g in SPEC["files"])]
        assert uncovered == [], f"paths read but not collected: {uncovered}"
        links = [p for p in recorder.links if not any(fnmatch.fnmatch(p, g) for g in SPEC["links"])]
        assert links == [], f"links read but not collected: {links}"
        netdevs = probe.listdir("/sys/class/net")
        rdmadevs = probe.listdir("/sys/class/infiniband")
        known = set()
        for command in SPEC["commands"]:
            each = command.get("each")
            names = {"netdev": netdevs, "rdmadev": rdmadevs}.get(each or "", [""])
            for n in names:
                known.add(tuple(a.replace("{" + (each or "") + "}", n) for a in command["argv"]))
        assert recorder.argvs - known == set()


def test_e810_facts_match_kyuz0s_machine(tmp_path: Path) -> None:
    facts = scenarios.facts_of(tmp_path, scenarios.healthy_e810_pair())["node-a"]
    netdev = facts.netdev("enp194s0np0")
    assert netdev is not None
    assert (netdev.bus, netdev.pci_address, netdev.driver) == ("pci", "0000:c2:00.0", "ice")
    assert netdev.mtu == 9000 and netdev.speed_mbps == 100000
    assert [a.cidr for a in netdev.ipv4] == ["192.168.100.1/30"]
    nic = facts.nic_of(netdev)
    assert nic is not None and nic.model == "Intel E810-C QSFP"
    assert nic.firmware == "4.91 0x800214b5 1.3909.0"
    (device,) = facts.rdma
    assert (device.name, device.kind, device.driver, device.pci_address) == (
        "rocep194s0", "hardware", "irdma", "0000:c2:00.0")
    port = device.ports[0]
    assert port.netdev == "enp194s0np0" and port.state == "ACTIVE" and port.phys_state == "LinkUp"
    gid = port.roce_v2_ipv4_gid("enp194s0np0")
    assert gid is not None and gid.index == 1 and gid.ipv4 == "192.168.100.1"
    assert port.active_mtu == 4096
    assert port.default_roce_mode == "RoCE v2"
    onboard = facts.netdev("enp192s0")
    assert onboard is not None and facts.nic_of(onboard) is not None
    assert not facts.nic_of(onboard).rdma_capable  # type: ignore[union-attr]


def test_connectx_roce_v2_ipv4_gid_is_index_3(tmp_path: Path) -> None:
    facts = scenarios.facts_of(tmp_path, scenarios.connectx6dx_pair())["cx-a"]
    (device,) = facts.rdma
    gid = device.ports[0].roce_v2_ipv4_gid()
    assert device.driver == "mlx5_ib"
    assert gid is not None and gid.index == 3


def test_thunderbolt_netdev_peer_and_rxe(tmp_path: Path) -> None:
    facts = scenarios.facts_of(tmp_path, scenarios.thunderbolt_only_pair())["tb-a"]
    tb = facts.netdev("thunderbolt0")
    assert tb is not None and tb.is_thunderbolt and tb.bus == "thunderbolt"
    assert tb.pci_address is None and tb.driver == "thunderbolt-net"
    assert tb.altnames == ("enx025d3a718c01",)
    assert {r.ids for r in facts.usb4.routers} == {"1022:158d", "1022:158e"}
    assert facts.usb4.host_generation == 4
    (peer,) = facts.usb4.peers
    assert (peer.kind, peer.device_name, peer.link_gbps) == ("xdomain", "tb-b", 40.0)
    (rxe,) = facts.rdma
    assert (rxe.kind, rxe.parent_netdev) == ("rxe", "thunderbolt0")


def test_infiniband_port_maps_to_ipoib_netdev(tmp_path: Path) -> None:
    facts = scenarios.facts_of(tmp_path, scenarios.infiniband_cx3_pair())["ib-a"]
    (device,) = facts.rdma
    port1, port2 = device.ports
    assert (port1.netdev, port1.link_layer, port1.rate_gbps, port1.lid) == (
        "ibp195s0", "InfiniBand", 56.0, 1)
    assert port2.state == "DOWN" and port2.phys_state == "Polling"
    netdev = facts.netdev("ibp195s0")
    assert netdev is not None and netdev.is_infiniband


def test_not_captured_commands_read_as_unknown(tmp_path: Path) -> None:
    nodes = scenarios.healthy_e810_pair()
    for key in [k for k in nodes["node-a"].commands if k[0] in ("ip", "ibv_devinfo", "dcb")]:
        del nodes["node-a"].commands[key]
    nodes["node-a"].ip_links.clear()
    nodes["node-a"].devinfo_blocks.clear()
    facts = scenarios.facts_of(tmp_path, nodes)["node-a"]
    netdev = facts.netdev("enp194s0np0")
    assert netdev is not None and netdev.addresses is None
    assert facts.rdma[0].ports[0].active_mtu is None
    assert facts.dcb("enp194s0np0").pfc_enabled is None

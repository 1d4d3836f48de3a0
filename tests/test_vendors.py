"""Vendor modules: lookups that never fail, the families' rules, and the extension point (a NIC
family registered by a test is recognised, judged and planned for without touching a check)."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import pytest

import strixwizard.vendors as vendors
from fixes import FIXES
from strixwizard.demo.builder import FakeNode
from strixwizard.demo.hardware import RoceSetup, gid_ipv4, gid_link_local, onboard_lan
from strixwizard.demo.scenarios import strix_halo_node
from strixwizard.discovery import Discovery
from strixwizard.fixing.planning import plan_site
from strixwizard.model import Status
from strixwizard.site import Fabric, NodeSpec, Site
from strixwizard.vendors import GENERIC, Firmware, Model, Note, Qos, Vendor
from tests.support.scenarios import facts_of, results, run_site

#: A NIC family the product does not know: what a new vendor module would declare.
THOR = Vendor(
    family="thor",
    name="Broadcom BCM57508",
    short="BCM57508",
    pci_vendor=0x14E4,
    models=(Model(0x1750, "BCM57508 NetXtreme-E", 100),),
    model_prefix="Broadcom",
    netdev_drivers=("bnxt_en",),
    rdma_driver="bnxt_re",
    qos=Qos(max_pfc_tcs=1),
    firmware=Firmware(minimum=(230, 0), expected="bnxt firmware 230 or newer",
                      advice="Update the NIC firmware with niccli."),
    notes=(Note("Test family: declared by the test, not by the product."),),
)


def thor_nic(node: FakeNode, ipv4: str, mac: str, setup: RoceSetup, firmware: str) -> None:
    """A BCM57508 with bnxt_en + bnxt_re, laid out like `demo.hardware.connectx`."""
    address, netdev, rdmadev = "0000:c2:00.0", "enp194s0f0np0", "bnxt_re0"
    pci_dir = node.pci_device(address, 0x14E4, 0x1750, 0x020000, "bnxt_en", bridge="0000:00:01.1",
                              link=("16.0 GT/s PCIe", 16, "16.0 GT/s PCIe", 16))
    node.netdev(netdev, pci_dir, mac, mtu=setup.mtu, speed=100000, ipv4=ipv4)
    node.ethtool(netdev, "bnxt_en", firmware, address, pause=setup.pause)
    node.dcb(netdev, pfc=setup.pfc, prio_tc=setup.prio_tc, dscp_prio=setup.dscp_prio,
             trust=setup.trust)
    dev = node.rdma_device(rdmadev, pci_dir, guid=gid_link_local(mac)[20:])
    node.rdma_port(dev, 1, [(gid_link_local(mac), "RoCE v2", netdev),
                            (gid_ipv4(ipv4.split("/")[0]), "RoCE v2", netdev)])
    node.devinfo(rdmadev, 0x14E4, 0x1750, firmware.split()[0],
                 [(1, "ACTIVE", 4096, 4096, "Ethernet")])


def thor_pair(setup: RoceSetup, firmware: str = "231.0.154.0") -> dict[str, FakeNode]:
    nodes = {}
    for name, ip, mac in (("node-a", "192.168.100.1/30", "b4:96:91:9c:3a:10"),
                          ("node-b", "192.168.100.2/30", "b4:96:91:9c:41:d8")):
        node = strix_halo_node(f"strix-{name[-1]}")
        thor_nic(node, ip, mac, setup, firmware)
        node.file("/proc/1/comm", "systemd\n")
        node.finish()
        nodes[name] = node
    return nodes


@pytest.fixture
def with_thor(monkeypatch: pytest.MonkeyPatch) -> Vendor:
    """Registers the test family the way a new module listed in `vendors.ALL` would be."""
    monkeypatch.setattr(vendors, "ALL", (THOR, *vendors.ALL))
    return THOR


def test_lookups_answer_generic_for_what_no_module_declares() -> None:
    assert vendors.by_family("no-such-family") is GENERIC
    assert vendors.by_family(None) is GENERIC
    assert vendors.by_driver("e1000e") is GENERIC
    assert vendors.by_pci(0x10EC, 0x8168) is GENERIC
    assert vendors.identify(0x10EC, 0x8168) == (GENERIC, "network controller 10ec:8168", None)
    assert vendors.by_transport("ethernet") is GENERIC
    assert not GENERIC.is_rdma_nic and GENERIC.netdev_driver is None


def test_pci_ids_and_drivers_name_the_family() -> None:
    assert vendors.identify(0x8086, 0x1592) == (vendors.e810.E810, "Intel E810-C QSFP", 100)
    assert vendors.identify(0x15B3, 0x101D)[1:] == ("NVIDIA/Mellanox ConnectX-6 Dx", 100)
    assert vendors.identify(0x15B3, 0x1007)[0].family == "connectx3"
    # a ConnectX not in the table is still a ConnectX, by its device id range
    unnamed = vendors.identify(0x15B3, 0x10F0)
    assert unnamed[0].family == "connectx" and unnamed[1] == "NVIDIA/Mellanox ConnectX (15b3:10f0)"
    assert vendors.by_driver("mlx4_core").family == "connectx3"
    assert vendors.by_driver("irdma").family == "e810"
    assert [vendors.rdma_driver_of(d) for d in ("ice", "i40e", "mlx5_core", "bnxt_en", "qede",
                                                "odd")] == ["irdma", "irdma", "mlx5_ib", "bnxt_re",
                                                            "qedr", "odd"]
    assert vendors.by_rdma_kind("usb4").family == "usb4net"
    assert vendors.by_rdma_kind("siw").family == "softrdma"
    assert vendors.by_link_layer("InfiniBand").family == "infiniband"
    assert not vendors.by_transport("thunderbolt-net").site_mtu
    assert not vendors.by_transport("infiniband").site_mtu


def test_family_rules_are_declared_by_the_vendor() -> None:
    e810, connectx = vendors.e810.E810, vendors.connectx.CONNECTX
    assert e810.qos.max_pfc_tcs == 1 and e810.qos.fw_lldp_flag == "fw-lldp-agent"
    assert e810.qos.trust == "dscp-app-entry" and e810.qos.trust_by_dscp_entry
    assert connectx.qos.trust == "dscp-app-entry" and connectx.qos.trust_by_dscp_entry  # mlx5 en_dcbnl.c
    assert e810.roce_switch is not None and e810.roce_switch.devlink_param == "enable_roce"
    assert connectx.qos.tool_command("eth4", "--trust dscp") == "mlnx_qos -i eth4 --trust dscp"
    assert e810.qos.tool_command("eth4", "--trust dscp") == ""


def test_every_vendor_module_is_registered_with_a_unique_family() -> None:
    declared = []
    for info in pkgutil.iter_modules(vendors.__path__):
        module = importlib.import_module(f"strixwizard.vendors.{info.name}")
        declared += [v for v in vars(module).values() if isinstance(v, Vendor) and v is not GENERIC]
    assert declared and all(v in vendors.ALL for v in declared)
    families = [v.family for v in vendors.ALL]
    assert len(families) == len(set(families))
    for vendor in vendors.ALL:
        assert all(note.text for note in vendor.notes), vendor.family


def test_an_unregistered_family_is_generic_not_a_crash(tmp_path: Path) -> None:
    report = run_site(tmp_path, thor_pair(RoceSetup(trust=("dscp",))))
    errors = [r for r in report.checks if r.status == Status.ERROR]
    assert not errors, errors
    (capable, _) = results(report, "nic.rdma_capable")
    # the bnxt_re device is hardware RDMA even on a NIC no module names
    assert capable.status == Status.PASS and "bnxt_re0 (bnxt_re)" in capable.observed
    assert {r.status for r in results(report, "nic.driver")} == {Status.SKIP}


def test_a_registered_family_is_recognised_judged_and_planned(tmp_path: Path,
                                                              with_thor: Vendor) -> None:
    two_tcs = RoceSetup(pfc=(0, 3), trust=("dscp",))  # priorities 0 and 3 in TCs 0 and 1
    report = run_site(tmp_path / "doctor", thor_pair(two_tcs, firmware="229.1.123.0"))
    assert not [r for r in report.checks if r.status == Status.ERROR]
    drivers = results(report, "nic.driver")
    assert {r.status for r in drivers} == {Status.WARN}  # the vendor's firmware rule
    assert drivers[0].expected == "bnxt firmware 230 or newer"
    assert drivers[0].observed.startswith("Broadcom BCM57508 NetXtreme-E: bnxt_en")
    one_tc = results(report, "dcb.pfc_tc_limit")  # the vendor's PFC traffic class limit
    assert {r.status for r in one_tc} == {Status.FAIL} and one_tc[0].expected == "<= 1"
    assert {r.status for r in results(report, "dcb.fw_lldp")} == {Status.SKIP}  # no such agent

    facts = facts_of(tmp_path / "plan", thor_pair(two_tcs))
    site = Site(name="t", nodes=tuple(NodeSpec(name=n, snapshot=n) for n in facts),
                fabric=Fabric(mtu=9000, pfc_priority=3, trust="dscp", roce_version=2))
    found = Discovery.of_facts(site, list(facts.values()))
    plans = [p for p in plan_site(found, ("dcb.pfc",), fixes=FIXES).plans if p.steps]
    assert len(plans) == 2
    assert "BCM57508 allows one PFC traffic class" in " ".join(plans[0].notes)


def test_a_registered_family_with_the_wrong_driver_fails_by_its_own_driver(
        tmp_path: Path, with_thor: Vendor) -> None:
    nodes = thor_pair(RoceSetup(trust=("dscp",)))
    nodes["node-a"].links.pop("/sys/devices/pci0000:00/0000:00:01.1/0000:c2:00.0/driver")
    (bad,) = results(run_site(tmp_path, nodes), "nic.driver", Status.FAIL)
    assert bad.expected == "driver bnxt_en, firmware reported"


def test_a_node_without_an_rdma_nic_is_told_every_registered_family(tmp_path: Path,
                                                                    with_thor: Vendor) -> None:
    node = strix_halo_node("strix-a")
    onboard_lan(node, "10.0.0.5/24", "b4:96:91:00:00:01")
    node.finish()
    (missing,) = results(run_site(tmp_path, {"node-a": node}), "nic.rdma_capable")
    assert missing.status == Status.FAIL
    assert missing.expected.startswith("Broadcom BCM57508 (bnxt_re) or Intel E810 (irdma)")


def test_checks_and_fixes_ask_the_vendor_instead_of_comparing_family_names() -> None:
    root = Path(__file__).resolve().parent.parent
    for path in sorted([*root.glob("checks/*.py"), *root.glob("fixes/*.py")]):
        tree = ast.parse(path.read_text(), filename=str(path))
        families = {v.family for v in vendors.ALL}
        uses = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Compare)
                and any(isinstance(c, ast.Constant) and c.value in families
                        for side in (node.left, *node.comparators) for c in ast.walk(side))]
        assert not uses, f"{path.name}:{uses} compares a NIC family name; ask the vendor instead"

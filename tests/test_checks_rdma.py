"""NIC, RDMA port, lossless RoCE, E810 and USB4 checks on failing and passing scenarios."""

from __future__ import annotations

from pathlib import Path

import pytest

from strixwizard.model import Status
from tests.support.scenarios import report_of, results, statuses

E810_A = "node-a:enp194s0np0"
E810_B = "node-b:enp194s0np0"
PORT_B = "node-b:rocep194s0/1 (enp194s0np0)"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("rdma")


def test_nic_rdma_capable(root: Path) -> None:
    assert set(statuses(report_of(root, "healthy"), "nic.rdma_capable").values()) == {Status.PASS}
    tb = report_of(root, "thunderbolt")
    assert statuses(tb, "nic.rdma_capable") == {"tb-a": Status.FAIL, "tb-b": Status.FAIL}
    (soft,) = [r for r in results(tb, "nic.rdma_capable") if r.host == "tb-a"]
    assert "rxe0" in soft.observed  # soft-RoCE is named, and does not count
    assert soft.fix is None  # no driver to load can cure a missing NIC: no fix offered


def test_nic_driver_reports_firmware(root: Path) -> None:
    (result,) = [r for r in results(report_of(root, "healthy"), "nic.driver") if r.host == "node-a"]
    assert result.status == Status.PASS
    assert result.observed == "Intel E810-C QSFP: ice, firmware 4.91 0x800214b5 1.3909.0"


def test_nic_driver_fails_without_the_driver(tmp_path: Path) -> None:
    from strixwizard.demo.hardware import e810
    from strixwizard.demo.scenarios import strix_halo_node
    from tests.support.scenarios import run_site

    node = strix_halo_node("strix-d")
    e810(node, "192.168.100.1/30", "b4:96:91:9c:3a:10")
    node.links.pop("/sys/devices/pci0000:00/0000:00:01.1/0000:c2:00.0/driver")
    (result,) = results(run_site(tmp_path, {"strix-d": node}), "nic.driver")
    assert result.status == Status.FAIL and "driver none" in result.observed


def test_nic_pcie_link_warns_on_x4_and_passes_on_x16(root: Path) -> None:
    x4 = results(report_of(root, "x4"), "nic.pcie_link")
    assert {r.status for r in x4} == {Status.WARN}
    assert "16 GT/s x4 (card supports 16 GT/s x16) = 63 Gb/s" in x4[0].observed
    assert x4[0].expected == ">= 100 Gb/s (link speed)"
    assert set(statuses(report_of(root, "healthy"), "nic.pcie_link").values()) == {Status.PASS}


def test_rdma_port_active_fails_on_ib_without_subnet_manager(root: Path) -> None:
    bad = results(report_of(root, "infiniband_no_sm"), "rdma.port_active")
    assert {r.status for r in bad} == {Status.FAIL}
    assert "opensm" in bad[0].detail and bad[0].observed == "INIT / LinkUp"
    good = statuses(report_of(root, "infiniband"), "rdma.port_active")
    assert set(good.values()) == {Status.PASS}  # the unused port 2 (Polling) is not judged


def test_rdma_roce_v2_gid_names_the_index_read_from_sysfs(root: Path) -> None:
    (e810,) = [r for r in results(report_of(root, "healthy"), "rdma.roce_v2_gid")
               if r.host == "node-a"]
    assert e810.status == Status.PASS and e810.observed.startswith("GID index 1 ")
    (cx,) = [r for r in results(report_of(root, "connectx"), "rdma.roce_v2_gid") if r.host == "cx-a"]
    assert cx.status == Status.PASS and cx.observed.startswith("GID index 3 ")


def test_rdma_roce_v2_gid_fails_when_only_v1_gids_exist(tmp_path: Path) -> None:
    from strixwizard.demo.hardware import connectx
    from strixwizard.demo.scenarios import strix_halo_node
    from tests.support.scenarios import run_site

    node = strix_halo_node("cx-v1")
    connectx(node, "10.10.0.1/24", "0c:42:a1:11:22:01")
    base = "/sys/devices/pci0000:00/0000:00:01.1/0000:c2:00.0/infiniband/mlx5_0/ports/1/gid_attrs"
    for index in (1, 3):
        node.files[f"{base}/types/{index}"] = "IB/RoCE v1\n"
    (result,) = results(run_site(tmp_path, {"cx-v1": node}), "rdma.roce_v2_gid")
    assert result.status == Status.FAIL and "IB/RoCE v1" in result.observed


def test_rdma_active_mtu_warns_at_1024(root: Path) -> None:
    report = report_of(root, "misconfigured")
    assert statuses(report, "rdma.active_mtu")[PORT_B] == Status.WARN
    (result,) = [r for r in results(report, "rdma.active_mtu") if r.host == "node-b"]
    assert result.observed == "active_mtu 1024, enp194s0np0 MTU 1500"
    assert result.fix is not None and result.fix.id == "net.mtu"
    assert statuses(report, "rdma.active_mtu")["node-a:rocep194s0/1 (enp194s0np0)"] == Status.PASS


def test_rdma_roce_v2_default(root: Path) -> None:
    assert set(statuses(report_of(root, "healthy"), "rdma.roce_v2_default").values()) == {Status.PASS}
    # configfs directory absent: unknown, never a pass
    unknown = results(report_of(root, "connectx"), "rdma.roce_v2_default")
    assert {r.status for r in unknown} == {Status.SKIP}
    assert "does not create it" in unknown[0].detail


def test_rdma_roce_v2_default_fails_on_v1(tmp_path: Path) -> None:
    from strixwizard.demo.hardware import RoceSetup, e810
    from strixwizard.demo.scenarios import strix_halo_node
    from tests.support.scenarios import run_site

    node = strix_halo_node("strix-v1")
    e810(node, "192.168.100.1/30", "b4:96:91:9c:3a:10", setup=RoceSetup(roce_mode="IB/RoCE v1"))
    (result,) = results(run_site(tmp_path, {"strix-v1": node}), "rdma.roce_v2_default")
    assert result.status == Status.FAIL and result.observed == "IB/RoCE v1"


def test_dcb_checks_on_the_misconfigured_node(root: Path) -> None:
    report = report_of(root, "misconfigured")
    # pause on + PFC off: flow control exists (lossy-free via pause), but not on the site's priority
    assert statuses(report, "dcb.flow_control") == {E810_A: Status.PASS, E810_B: Status.PASS}
    assert statuses(report, "dcb.pfc_priority") == {E810_A: Status.PASS, E810_B: Status.WARN}
    assert statuses(report, "dcb.pause_and_pfc") == {E810_A: Status.PASS, E810_B: Status.PASS}
    assert statuses(report, "dcb.fw_lldp") == {E810_A: Status.PASS, E810_B: Status.WARN}


def test_dcb_pause_and_pfc_fails_in_the_demo(tmp_path: Path) -> None:
    from strixwizard.demo.scenarios import demo_nodes
    from tests.support.scenarios import run_site

    report = run_site(tmp_path, demo_nodes())
    (result,) = [r for r in results(report, "dcb.pause_and_pfc") if r.status == Status.FAIL]
    assert result.entity == E810_B
    assert result.observed == "pause rx on tx on, PFC priority 3"
    assert result.fix is not None and result.fix.id == "ethtool.pause_off"


def test_dcb_flow_control_fails_without_pfc_or_pause(tmp_path: Path) -> None:
    from strixwizard.demo.hardware import RoceSetup, e810
    from strixwizard.demo.scenarios import strix_halo_node
    from tests.support.scenarios import run_site

    node = strix_halo_node("strix-l")
    e810(node, "192.168.100.1/30", "b4:96:91:9c:3a:10", setup=RoceSetup(pfc=()))
    report = run_site(tmp_path, {"strix-l": node})
    (result,) = results(report, "dcb.flow_control")
    assert result.status == Status.FAIL and result.observed == "PFC off, link-level pause off"


def test_dcb_trust(root: Path, tmp_path: Path) -> None:
    healthy = results(report_of(root, "healthy"), "dcb.trust")
    assert {r.status for r in healthy} == {Status.PASS}
    assert "E810 L3 mode" in healthy[0].observed
    from strixwizard.demo.hardware import RoceSetup, connectx
    from strixwizard.demo.scenarios import strix_halo_node
    from tests.support.scenarios import run_site

    node = strix_halo_node("cx-pcp")
    connectx(node, "10.10.0.1/24", "0c:42:a1:11:22:01", setup=RoceSetup(trust=("pcp",)))
    (result,) = results(run_site(tmp_path, {"cx-pcp": node}), "dcb.trust")
    assert result.status == Status.WARN and result.observed.startswith("order pcp")


def test_e810_one_pfc_tc(tmp_path: Path, root: Path) -> None:
    from strixwizard.demo.hardware import RoceSetup, e810
    from strixwizard.demo.scenarios import strix_halo_node
    from tests.support.scenarios import run_site

    node = strix_halo_node("strix-2tc")
    e810(node, "192.168.100.1/30", "b4:96:91:9c:3a:10",
         setup=RoceSetup(pfc=(3, 5), prio_tc=(0, 0, 0, 1, 0, 2, 0, 0)))
    (result,) = results(run_site(tmp_path, {"strix-2tc": node}), "dcb.pfc_tc_limit")
    assert result.status == Status.FAIL and result.observed == "2 PFC traffic class(es): TC 1,2"
    assert set(statuses(report_of(root, "healthy"), "dcb.pfc_tc_limit").values()) == {Status.PASS}


def test_e810_roce_enabled(root: Path) -> None:
    (bad,) = results(report_of(root, "platform"), "roce.enabled")
    assert bad.status == Status.FAIL and "RNIC" in bad.observed
    assert bad.fix is not None and bad.fix.id == "roce.enable"
    assert set(statuses(report_of(root, "healthy"), "roce.enabled").values()) == {Status.PASS}


def test_usb4_soft_rdma(root: Path) -> None:
    tb = report_of(root, "thunderbolt")
    assert statuses(tb, "usb4.soft_rdma") == {"tb-a/rxe0": Status.WARN, "tb-b": Status.PASS}
    (rxe,) = results(tb, "usb4.soft_rdma", Status.WARN)
    assert "thunderbolt-net" in rxe.observed and "65 µs" in rxe.detail
    assert set(statuses(report_of(root, "healthy"), "usb4.soft_rdma").values()) == {Status.SKIP}


def test_usb4_link_rate(root: Path, tmp_path: Path) -> None:
    from tests.support.scenarios import run_site, thunderbolt_only_pair

    assert statuses(report_of(root, "thunderbolt"), "usb4.link_rate") == {
        "tb-a/0-1 (tb-b)": Status.PASS, "tb-b/0-1 (tb-a)": Status.PASS}
    half = run_site(tmp_path, thunderbolt_only_pair(speed_gbps=20))
    slow = results(half, "usb4.link_rate", Status.WARN)
    assert len(slow) == 2 and slow[0].observed == "20 Gb/s (2 x 10 Gb/s)"
    assert "RJ45" in slow[0].detail and "github.com/Geramy/OdinLink-Five/issues/31" in slow[0].detail
    assert set(statuses(report_of(root, "healthy"), "usb4.link_rate").values()) == {Status.SKIP}


@pytest.mark.parametrize(("max_mtu", "cure"), [
    (4096, "The port did not follow the netdev: set the MTU again (`ip link set dev enp194s0np0 "
           "mtu 9000`; a port MTU of 4200 gives active_mtu 4096"),
    (1024, "The port's max_mtu is 1024: the NIC or its firmware caps it")])
def test_a_1024_path_mtu_under_a_9000_netdev_is_named_with_its_cost_and_cure(
        tmp_path: Path, max_mtu: int, cure: str) -> None:
    from tests.support.scenarios import healthy_e810_pair, run_site

    nodes = healthy_e810_pair()
    node = nodes["node-b"]
    node.devinfo_blocks = [block.replace("active_mtu:\t\t4096 (5)", "active_mtu:\t\t1024 (3)")
                           .replace("max_mtu:\t\t4096 (5)", f"max_mtu:\t\t{max_mtu} "
                                    f"({ {1024: 3, 4096: 5}[max_mtu] })")
                           for block in node.devinfo_blocks]
    (result,) = [r for r in results(run_site(tmp_path, nodes), "rdma.active_mtu")
                 if r.host == "node-b"]
    assert result.status == Status.WARN
    assert result.observed == "active_mtu 1024, enp194s0np0 MTU 9000"
    assert result.detail.startswith("RoCE path MTU 1024 under a 9000-byte enp194s0np0: ")
    assert "llama.cpp's RDMA transport takes the port's active_mtu as its path MTU" in result.detail
    assert ("prefilled about 40 % below the published figures for the same profile "
            "(https://github.com/0xSero/local-ai-registry/pull/55") in result.detail
    assert cure in result.detail
    assert result.fix is None  # net.mtu sets the netdev MTU, which is already right

"""Test scenarios: small sites built with the demo builder, captured through the real collector.

Each function returns {site node name: FakeNode}; `run_site` captures them into
snapshots under a temporary directory, loads them back as a real run would and
runs the doctor. Contents follow the formats in research/domain.md.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from checks import ALL as ALL_CHECKS
from fixes import BY_ID as FIXES
from strixwizard.checking.engine import Report, run_doctor
from strixwizard.demo.builder import FakeNode
from strixwizard.demo.hardware import (
    PCIE4_X4_OF_X16,
    RoceSetup,
    connectx,
    connectx3_ib,
    connectx_vpi_ib,
    e810,
    onboard_lan,
    usb4_bond,
    usb4_routers,
)
from strixwizard.demo.scenarios import rdma_link, strix_halo_node
from strixwizard.discovery import DiscoveredNode, Discovery, reached_node
from strixwizard.facts import NodeFacts
from strixwizard.model import CheckResult, Status
from strixwizard.probe.snapshot import SnapshotProbe
from strixwizard.site import NodeSpec, Site

Nodes = dict[str, FakeNode]


def healthy_e810_pair() -> Nodes:
    """kyuz0's pair done right: E810-CQDA1 in x16 slots, MTU 9000, PFC 3, fw LLDP off."""
    a = strix_halo_node("strix-a")
    onboard_lan(a, "192.168.1.21/24", "9c:6b:00:4a:21:01")
    e810(a, "192.168.100.1/30", "b4:96:91:9c:3a:10", setup=RoceSetup(roce_mode="RoCE v2"))
    b = strix_halo_node("strix-b")
    onboard_lan(b, "192.168.1.22/24", "9c:6b:00:4a:22:01")
    e810(b, "192.168.100.2/30", "b4:96:91:9c:41:d8", setup=RoceSetup(roce_mode="RoCE v2"))
    return {"node-a": a, "node-b": b}


def connectx6dx_pair() -> Nodes:
    """Two Strix Halo nodes with ConnectX-6 Dx: mlx5 lists v1/v2 GID pairs (IPv4 v2 at index 3)."""
    a = strix_halo_node("cx-a")
    connectx(a, "10.10.0.1/24", "0c:42:a1:11:22:01")
    b = strix_halo_node("cx-b")
    connectx(b, "10.10.0.2/24", "0c:42:a1:11:22:02")
    return {"cx-a": a, "cx-b": b}


def misconfigured_e810_pair() -> Nodes:
    """node-b: MTU 1500, PFC off, firmware LLDP on, link-level pause on."""
    nodes = healthy_e810_pair()
    b = strix_halo_node("strix-b")
    onboard_lan(b, "192.168.1.22/24", "9c:6b:00:4a:22:01")
    setup = RoceSetup(mtu=1500, pfc=(), fw_lldp=True, pause=(True, True), roce_mode="RoCE v2")
    e810(b, "192.168.100.2/30", "b4:96:91:9c:41:d8", setup=setup)
    nodes["node-b"] = b
    return nodes


def downgraded_x4_pair() -> Nodes:
    """The healthy pair, but both 100 GbE cards trained at PCIe 4.0 x4."""
    nodes = {}
    for name, host, ip, mac in (("node-a", "strix-a", "192.168.100.1/30", "b4:96:91:9c:3a:10"),
                                ("node-b", "strix-b", "192.168.100.2/30", "b4:96:91:9c:41:d8")):
        node = strix_halo_node(host)
        e810(node, ip, mac, setup=RoceSetup(roce_mode="RoCE v2"), pcie=PCIE4_X4_OF_X16)
        nodes[name] = node
    return nodes


def thunderbolt_only_pair(rxe: bool = True, speed_gbps: int = 40) -> Nodes:
    """Two Strix Halo nodes joined only by a USB4 cable (thunderbolt-net); node-a has soft-RoCE
    (rxe0) bound to thunderbolt0. `speed_gbps`: the rate the link trained at."""
    a = strix_halo_node("tb-a")
    usb4_routers(a, "tb-b", ipv4="10.0.0.1/30", mac="02:5d:3a:71:8c:01", rxe=rxe,
                 speed_gbps=speed_gbps)
    b = strix_halo_node("tb-b")
    usb4_routers(b, "tb-a", ipv4="10.0.0.2/30", mac="02:5d:3a:71:8c:02", speed_gbps=speed_gbps)
    return {"tb-a": a, "tb-b": b}


def infiniband_cx3_pair(subnet_manager: bool = True) -> Nodes:
    """ConnectX-3 FDR InfiniBand back to back (IPoIB ibp195s0), opensm on one node."""
    a = strix_halo_node("ib-a")
    connectx3_ib(a, "10.20.0.1/24", "0002:c903:00a1:b2c1", lid=1, subnet_manager=subnet_manager)
    b = strix_halo_node("ib-b")
    connectx3_ib(b, "10.20.0.2/24", "0002:c903:00a1:b2d5", lid=2, subnet_manager=subnet_manager)
    return {"ib-a": a, "ib-b": b}


def iwarp_e810_pair() -> Nodes:
    """The healthy pair, but both E810s came up in iWARP (Intel's out-of-tree irdma default,
    or devlink enable_iwarp): RNIC devices `iwp194s0` with one MAC-based GID, no IPv4 GID,
    no P_Key table, `rdma link` listing them."""
    nodes = {}
    for name, host, ip, mac in (("node-a", "strix-a", "192.168.100.1/30", "b4:96:91:9c:3a:10"),
                                ("node-b", "strix-b", "192.168.100.2/30", "b4:96:91:9c:41:d8")):
        node = strix_halo_node(host)
        e810(node, ip, mac, setup=RoceSetup(roce_mode="RoCE v2"), iwarp=True)
        rdma_link(node, "iwp194s0", "enp194s0np0", 2)
        nodes[name] = node
    return nodes


def ib_vs_ethernet_pair() -> Nodes:
    """node-a's ConnectX-6 VPI port left in InfiniBand mode (ib0, type 32) cabled to node-b's
    E810 Ethernet port: neither links, both ports DOWN."""
    a = strix_halo_node("vpi-a")
    connectx_vpi_ib(a, "192.168.100.1/30", "0c42:a103:0011:2201")
    b = strix_halo_node("vpi-b")
    e810(b, "192.168.100.2/30", "b4:96:91:9c:41:d8",
         setup=RoceSetup(roce_mode="RoCE v2", link_up=False))
    return {"node-a": a, "node-b": b}


def non_strix_machine() -> Nodes:
    """An Intel Xeon server with a ConnectX-6 Dx and no Strix Halo iGPU."""
    node = FakeNode("xeon-1")
    node.cpu(model_name="Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz", family=6, model=106,
             threads=64, vendor="GenuineIntel")
    node.memory(263_000_000)
    node.kernel(cmdline_extra="iommu=pt", release="6.8.0-45-generic",
                os_pretty="Ubuntu 24.04.1 LTS")
    connectx(node, "10.10.0.9/24", "0c:42:a1:11:22:09")
    return {"xeon-1": node}


def platform_faults_node() -> Nodes:
    """A Strix Halo with the platform wrong: ROCm 6.4, RCCL without gfx1151, default IOMMU,
    8 MiB memlock, E810 irdma in iWARP mode."""
    node = strix_halo_node("strix-c")
    node.kernel(cmdline_extra="amdgpu.gttsize=126976 ttm.pages_limit=32505856")
    node.rocm(version="6.4.1-103", rccl_targets=("gfx1100", "gfx1101", "gfx942"))
    node.limits(memlock_kb=8192)
    e810(node, "192.168.100.1/30", "b4:96:91:9c:3a:10", iwarp=True)
    return {"strix-c": node}


def capture(tmp_path: Path, nodes: Nodes) -> dict[str, SnapshotProbe]:
    probes = {}
    for name, node in nodes.items():
        out = tmp_path / name
        out.mkdir(parents=True, exist_ok=True)
        node.capture(out)
        probes[name] = SnapshotProbe.load(out)
    return probes


def facts_of(tmp_path: Path, nodes: Nodes) -> dict[str, NodeFacts]:
    return {name: NodeFacts(name, probe) for name, probe in capture(tmp_path, nodes).items()}


def run_site(tmp_path: Path, nodes: Nodes, site: Site | None = None) -> Report:
    probes = capture(tmp_path, nodes)
    site = site or Site(name="test", nodes=tuple(NodeSpec(name=n, snapshot=n) for n in probes))
    run_nodes: list[DiscoveredNode] = [reached_node(n, p, str(tmp_path / n), "snapshot")
                             for n, p in probes.items()]
    return run_doctor(Discovery.of(site, run_nodes), ALL_CHECKS, FIXES)


def results(report: Report, check_id: str, status: Status | None = None) -> list[CheckResult]:
    return [r for r in report.checks if r.id == check_id and (status is None or r.status == status)]


def bad(report: Report) -> list[CheckResult]:
    return [r for r in report.checks if r.status in (Status.FAIL, Status.WARN, Status.ERROR)]


_CACHE: dict[str, Report] = {}


def cured_demo_nodes() -> Nodes:
    """The demo site with its faults cured: E810s in x16 slots, node-b's GTT tuned, MTU 9000,
    firmware LLDP and link-level pause off, Fedora's packages, counters at zero. The USB4
    link stays (TCP only: a warning with nothing to fix)."""
    nodes: Nodes = {}
    for name, host, lan, lan_mac, ip, mac, tb, tb_mac, peer in (
            ("node-a", "strix-a", "192.168.1.21/24", "9c:6b:00:4a:21:01", "192.168.100.1/30",
             "b4:96:91:9c:3a:10", "10.0.0.1/30", "02:5d:3a:71:8c:01", "strix-b"),
            ("node-b", "strix-b", "192.168.1.22/24", "9c:6b:00:4a:22:01", "192.168.100.2/30",
             "b4:96:91:9c:41:d8", "10.0.0.2/30", "02:5d:3a:71:8c:02", "strix-a")):
        node = strix_halo_node(host)
        onboard_lan(node, lan, lan_mac)
        e810(node, ip, mac, setup=RoceSetup(roce_mode="RoCE v2"))
        rdma_link(node, "rocep194s0", "enp194s0np0", 3)
        usb4_routers(node, peer, ipv4=tb, mac=tb_mac)
        nodes[name] = node
    return nodes


#: Every scenario the tests build, by the name `report_of` knows it under.
SCENARIOS: dict[str, Callable[[], Nodes]] = {
    "healthy": healthy_e810_pair, "connectx": connectx6dx_pair,
    "misconfigured": misconfigured_e810_pair, "x4": downgraded_x4_pair,
    "thunderbolt": thunderbolt_only_pair, "infiniband": infiniband_cx3_pair,
    "infiniband_no_sm": lambda: infiniband_cx3_pair(subnet_manager=False),
    "non_strix": non_strix_machine, "platform": platform_faults_node,
    "iwarp": iwarp_e810_pair, "ib_vs_eth": ib_vs_ethernet_pair,
    "demo_cured": cured_demo_nodes,
}


def report_of(tmp_root: Path, name: str) -> Report:
    """The doctor report of a named scenario, built once per test session."""
    if name not in _CACHE:
        out = tmp_root / name
        out.mkdir(parents=True, exist_ok=True)
        _CACHE[name] = run_site(out, SCENARIOS[name]())
    return _CACHE[name]


def statuses(report: Report, check_id: str) -> dict[str, Status]:
    """entity → status for one check."""
    return {r.entity: r.status for r in report.checks if r.id == check_id}


def thunderbolt_bond_pair(mode: str = "balance-rr 0", tcp_reordering: int | None = 3) -> Nodes:
    """Two Strix Halo nodes joined by two USB4 cables bonded (bond0 over thunderbolt0 and
    thunderbolt1), as in the published bonded Thunderbolt setup; node-b already has
    net.ipv4.tcp_reordering at 127."""
    a = strix_halo_node("bond-a")
    usb4_bond(a, "bond-b", "10.0.0.1/30", mode=mode, tcp_reordering=tcp_reordering)
    b = strix_halo_node("bond-b")
    usb4_bond(b, "bond-a", "10.0.0.2/30", mode=mode, tcp_reordering=127,
              macs=("02:5d:3a:71:8c:02", "02:5d:3a:71:8d:02"))
    return {"bond-a": a, "bond-b": b}


SCENARIOS["bond"] = thunderbolt_bond_pair


#: A NIC in a Thunderbolt enclosure, as the kernel lays it out in sysfs. The chain's shape —
#: the host's tunnel port, the enclosure's PCIe switch upstream port, one of its downstream
#: ports, the NIC two buses below the host's port — follows published layouts of Thunderbolt
#: 10 GbE adapters (the OWC Thunderbolt 3 10G adapter's AQC107 at 0000:0c:00.0 below a
#: JHL6540's hot-plug port, github.com/Aquantia/AQtion-esxi/issues/18 with the JHL6540 tree of
#: github.com/intel/thunderbolt-software-user-space/issues/8; Titan Ridge 8086:15ea switch
#: ports in github.com/AdityaGarg8/pve-edge-kernel-t2/issues/7). STAND-IN parts, not from a
#: published Strix Halo capture (none was found): the addresses, the host port 0000:00:03.1,
#: the enclosure's bridge ID (8086:15ef, JHL7440 in pci.ids) and the router's names. Every
#: tunnelled function carries `removable` = "removable" as drivers/pci/probe.c sets it.
TUNNEL_HOST_PORT = "0000:00:03.1"
TUNNEL_CHAIN = ("0000:62:00.0", "0000:63:01.0")  # enclosure upstream port, downstream port


def tunnelled_nic(node: FakeNode, ipv4: str, mac: str, usb4_gbps: int, device_id: int,
                  speed: int, tunnelled: bool = True) -> None:
    """The node's USB4 host routers, an enclosure router on port 1 trained at `usb4_gbps`,
    and a ConnectX in the enclosure's x8 slot (PCIe 3.0 x8, 63 Gb/s: the card's own link is
    no limit) behind the enclosure's PCIe switch. `tunnelled=False`: the same chain with no
    `removable` marks (a card in the node's own slot behind a switch)."""
    usb4_routers(node, None)
    root = "/sys/devices/pci0000:00/0000:00:08.3/0000:c7:00.5/domain0/0-0"
    node.rel_link("/sys/bus/thunderbolt/devices/0-1", f"{root}/0-1")
    node.file(f"{root}/0-1/uevent", "DEVTYPE=thunderbolt_device\n")
    node.file(f"{root}/0-1/generation", "3\n")
    node.file(f"{root}/0-1/vendor_name", "Example Vendor\n")
    node.file(f"{root}/0-1/device_name", "Thunderbolt PCIe enclosure\n")
    for side in ("rx", "tx"):
        node.file(f"{root}/0-1/{side}_speed", f"{usb4_gbps / 2:.1f} Gb/s\n")
        node.file(f"{root}/0-1/{side}_lanes", "2\n")
    parent = TUNNEL_HOST_PORT
    node.pci_device(TUNNEL_HOST_PORT, 0x1022, 0x14EF, 0x060400, "pcieport", bridge="")
    for address in TUNNEL_CHAIN:
        directory = node.pci_device(address, 0x8086, 0x15EF, 0x060400, "pcieport", bridge=parent,
                                    link=("8.0 GT/s PCIe", 4, "8.0 GT/s PCIe", 4))
        if tunnelled:
            node.file(f"{directory}/removable", "removable\n")
        parent = f"{parent}/{address}"
    connectx(node, ipv4, mac, address="0000:64:00.0", bridge=parent, device_id=device_id,
             speed=speed, netdev="enp100s0f0np0",
             pcie=("8.0 GT/s PCIe", 8, "8.0 GT/s PCIe", 8))
    if tunnelled:
        node.file(f"/sys/devices/pci0000:00/{parent}/0000:64:00.0/removable", "removable\n")


def tunnelled_connectx_pair(usb4_gbps: int = 40, device_id: int = 0x1015, speed: int = 25000,
                            tunnelled: bool = True) -> Nodes:
    """Two Strix Halo nodes, each with a ConnectX (default ConnectX-4 Lx, 25 GbE) in a
    Thunderbolt enclosure on a USB4 cable trained at `usb4_gbps`, the NICs cabled back to back
    (the "25 GbE over Thunderbolt" clusters of kyuz0/amd-strix-halo-vllm-toolboxes issue 80)."""
    nodes = {}
    for name, host, ip, mac in (("node-a", "tb25-a", "10.25.0.1/24", "0c:42:a1:25:00:01"),
                                ("node-b", "tb25-b", "10.25.0.2/24", "0c:42:a1:25:00:02")):
        node = strix_halo_node(host)
        tunnelled_nic(node, ip, mac, usb4_gbps, device_id, speed, tunnelled)
        nodes[name] = node
    return nodes
SCENARIOS["tunnel"] = tunnelled_connectx_pair


def plain_node(host: str, mgmt: str, fabric: str | None, mac: int) -> FakeNode:
    """A Xeon box with no Strix Halo iGPU: the onboard LAN on the management network and,
    optionally, a second plain Ethernet NIC (Intel I226, no RDMA) on the fabric subnet."""
    node = FakeNode(host)
    node.cpu(model_name="Intel(R) Xeon(R) E-2388G CPU @ 3.20GHz", family=6, model=167,
             threads=16, vendor="GenuineIntel")
    node.memory(65_000_000)
    node.kernel(release="6.8.0-45-generic", os_pretty="Ubuntu 24.04.1 LTS")
    onboard_lan(node, mgmt, f"9c:6b:00:4a:{mac:02x}:01")
    if fabric:
        pci = node.pci_device("0000:01:00.0", 0x8086, 0x125C, 0x020000, "igc",
                              bridge="0000:00:1c.0")
        node.netdev("fab0", pci, f"9c:6b:00:4a:{mac:02x}:02", speed=2500, ipv4=fabric)
        node.ethtool("fab0", "igc", "2017:888d", "0000:01:00.0")
        node.dcb("fab0", supported=False)
    return node


def plain_site(tmp_path: Path) -> Path:
    """Three nodes: n0 and n1 share a plain Ethernet fabric link, n2 has the management
    network only (a lab node without a fabric pair looks the same)."""
    nodes = {"n0": plain_node("n0", "10.99.1.10/24", "10.99.2.1/30", 1),
             "n1": plain_node("n1", "10.99.1.11/24", "10.99.2.2/30", 2),
             "n2": plain_node("n2", "10.99.1.12/24", None, 3)}
    capture(tmp_path, nodes)
    site = tmp_path / "site.yaml"
    site.write_text("site: plain\nnodes:\n" + "".join(
        f"  - name: {name}\n    snapshot: {name}\n    host: 10.99.1.{10 + i}\n"
        + (f"    fabric_address: 10.99.2.{1 + i}\n" if i < 2 else "")
        for i, name in enumerate(nodes)))
    return site

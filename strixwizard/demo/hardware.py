"""Add real-world adapters to a `FakeNode`: E810 (ice/irdma), ConnectX (mlx5), ConnectX-3 IB
(mlx4) and USB4 thunderbolt-net, with sysfs laid out as on a running machine.

Layouts follow the kernel: the netdev and the RDMA device hang under their
PCI function (irdma under its `ice.roce.N` auxiliary device), the class
directories hold relative links into /sys/devices, GID tables list every
index (empty ones as zeros), and tool outputs use the formats the tools print (perftest,
rdma-core's `rdma` and `ibv_devinfo`, as in
https://github.com/kyuz0/amd-strix-halo-vllm-toolboxes/blob/main/rdma_cluster/setup_guide.md).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from strixwizard.demo.builder import FakeNode, rpc_cache_survey
from strixwizard.facts.rdma import roce_active_mtu

PCIE4_X16 = ("16.0 GT/s PCIe", 16, "16.0 GT/s PCIe", 16)
PCIE4_X4_OF_X16 = ("16.0 GT/s PCIe", 4, "16.0 GT/s PCIe", 16)
ZERO = "0000:0000:0000:0000:0000:0000:0000:0000"


def gid_ipv4(address: str) -> str:
    """sysfs form of the IPv4-mapped GID: 0000:...:ffff:c0a8:6401."""
    packed = ipaddress.IPv4Address(address).packed
    return "0000:0000:0000:0000:0000:ffff:" + f"{packed[0]:02x}{packed[1]:02x}:{packed[2]:02x}{packed[3]:02x}"


def gid_link_local(mac: str) -> str:
    b = [int(x, 16) for x in mac.split(":")]
    eui = [b[0] ^ 2, b[1], b[2], 0xFF, 0xFE, b[3], b[4], b[5]]
    return "fe80:0000:0000:0000:" + ":".join(f"{eui[i]:02x}{eui[i + 1]:02x}" for i in range(0, 8, 2))


def gid_iwarp(mac: str) -> str:
    """The one GID of an irdma iWARP port: the MAC, zero-padded (irdma_query_gid copies
    the netdev's address into an otherwise zero GID; the table has one entry)."""
    raw = bytes(int(x, 16) for x in mac.split(":")) + bytes(10)
    return ":".join(f"{raw[i]:02x}{raw[i + 1]:02x}" for i in range(0, 16, 2))


@dataclass
class RoceSetup:
    """How a RoCE interface is configured (the knobs the checks judge)."""

    mtu: int = 9000
    pfc: tuple[int, ...] = (3,)
    prio_tc: tuple[int, ...] = (0, 0, 0, 1, 0, 0, 0, 0)
    dscp_prio: tuple[tuple[int, int], ...] = ((26, 3),)
    trust: tuple[str, ...] | None = None  # None: apptrust not supported (ice)
    pause: tuple[bool, bool] = (False, False)
    fw_lldp: bool = False
    link_up: bool = True
    roce_mode: str | None = None  # configfs rdma_cm default_roce_mode, None = not created
    ecn: tuple[int, ...] = tuple(range(8))  # mlx5: priorities with ECN on (the driver default)
    dcqcn: bool | None = None  # irdma configfs roce_dcqcn_enable; None = directory not created


def e810(node: FakeNode, ipv4: str | None, mac: str, setup: RoceSetup | None = None,
         address: str = "0000:c2:00.0", bridge: str = "0000:00:01.1",
         netdev: str = "enp194s0np0", rdmadev: str | None = None, device_id: int = 0x1592,
         pcie: tuple[str, int, str, int] = PCIE4_X16, firmware: str = "4.91 0x800214b5 1.3909.0",
         speed: int = 100000, iwarp: bool = False, counters: dict[str, int] | None = None,
         statistics: dict[str, int] | None = None) -> None:
    """Intel E810-CQDA1 (8086:1592) with in-tree ice + irdma in RoCE v2 mode. `counters`:
    its hw_counters (default: the CNP/ECN ones at 0); `statistics`: `ethtool -S` counters.

    `iwarp`: irdma came up in iWARP instead (Intel's out-of-tree driver's default, or devlink
    enable_iwarp): ice's auxiliary device is `ice.iwarp.0`, the device is an RNIC (node_type
    4) named `iwp…` by rdma-core's udev rule (`roce…` for RoCE), its port has one GID — the
    MAC, zero-padded, type "IB/RoCE v1" as the kernel's non-RoCE GID cache labels it — no
    IPv4-mapped GID and no P_Key table, and `ibv_devinfo` prints transport iWARP (1)."""
    setup = setup or RoceSetup()
    rdmadev = rdmadev or ("iwp194s0" if iwarp else "rocep194s0")
    pci_dir = node.pci_device(address, 0x8086, device_id, 0x020000, "ice", bridge=bridge, link=pcie)
    node.netdev(netdev, pci_dir, mac, mtu=setup.mtu, speed=speed, up=setup.link_up,
                ipv4=ipv4)
    node.ethtool(netdev, "ice", firmware, address, pause=setup.pause, priv_flags={
        "link-down-on-close": False, "fw-lldp-agent": setup.fw_lldp,
        "vf-true-promisc-support": False, "mdd-auto-reset-vf": False,
        "vf-vlan-pruning": False, "legacy-rx": False})
    node.dcb(netdev, pfc=setup.pfc, prio_tc=setup.prio_tc, dscp_prio=setup.dscp_prio,
             trust=setup.trust)
    node.devlink_params[f"pci/{address}"] = [
        {"name": "enable_roce", "type": "generic",
         "values": [{"cmode": "runtime", "value": not iwarp}]},
        {"name": "enable_iwarp", "type": "generic",
         "values": [{"cmode": "runtime", "value": iwarp}]},
    ]
    aux = f"{pci_dir}/ice.{'iwarp' if iwarp else 'roce'}.0"
    dev = node.rdma_device(rdmadev, aux, node_type="4: RNIC" if iwarp else "1: CA", fw_ver="1.70",
                           guid=gid_link_local(mac)[20:])
    gids: list[tuple[str, str, str | None]] = [(gid_link_local(mac), "RoCE v2", netdev)]
    if ipv4:
        gids.append((gid_ipv4(ipv4.split("/")[0]), "RoCE v2", netdev))
    if iwarp:
        gids = [(gid_iwarp(mac), "IB/RoCE v1", netdev)]
    state = ("4: ACTIVE", "5: LinkUp") if setup.link_up else ("1: DOWN", "3: Disabled")
    node.rdma_port(dev, 1, gids, state=state[0], phys_state=state[1],
                   rate="100 Gb/sec (4X EDR)" if speed >= 100000 else "25 Gb/sec (1X EDR)",
                   table_size=1 if iwarp else 8)
    node.devinfo(rdmadev, 0x8086, device_id, "1.70", [
        (1, "ACTIVE" if setup.link_up else "DOWN", 4096, roce_active_mtu(setup.mtu, 4096)[0], "Ethernet")],
        transport="iWARP (1)" if iwarp else "InfiniBand (0)")
    node.hw_counters(dev, 1, {"cnpSent": 0, "cnpHandled": 0, "RxECNMrkd": 0} if counters is None
                     else counters)
    if statistics is not None:
        node.statistics(netdev, statistics)
    if setup.dcqcn is not None:
        node.file(f"/sys/kernel/config/irdma/{rdmadev}/roce_dcqcn_enable", f"{int(setup.dcqcn)}\n")
    if setup.roce_mode:
        node.file(f"/sys/kernel/config/rdma_cm/{rdmadev}/ports/1/default_roce_mode",
                  setup.roce_mode + "\n")


def connectx(node: FakeNode, ipv4: str | None, mac: str, setup: RoceSetup | None = None,
             address: str = "0000:c2:00.0", bridge: str = "0000:00:01.1",
             netdev: str = "enp194s0f0np0", rdmadev: str = "mlx5_0", device_id: int = 0x101D,
             pcie: tuple[str, int, str, int] = PCIE4_X16,
             firmware: str = "22.39.1002 (MT_0000000437)", speed: int = 100000,
             counters: dict[str, int] | None = None, mlnx_qos: str | None = None,
             traffic_class: int | None = None) -> None:
    """NVIDIA ConnectX (mlx5_core + mlx5_ib). The GID table lists v1/v2 pairs, so the
    IPv4 RoCE v2 entry is index 3. `mlnx_qos`: the output of `mlnx_qos -i IF` (MLNX_OFED
    installed); `traffic_class`: the global RoCE tclass of tc/1/traffic_class (MLNX_OFED)."""
    setup = setup or RoceSetup(trust=("dscp",))
    pci_dir = node.pci_device(address, 0x15B3, device_id, 0x020000, "mlx5_core", bridge=bridge,
                              link=pcie)
    node.netdev(netdev, pci_dir, mac, mtu=setup.mtu, speed=speed, up=setup.link_up, ipv4=ipv4)
    node.ethtool(netdev, "mlx5_core", firmware, address, pause=setup.pause, priv_flags={
        "rx_cqe_moder": True, "tx_cqe_moder": False, "rx_cqe_compress": False,
        "rx_striding_rq": True, "rx_no_csum_complete": False, "xdp_tx_mpwqe": True,
        "skb_tx_mpwqe": True, "tx_port_ts": False})
    node.dcb(netdev, pfc=setup.pfc, prio_tc=setup.prio_tc, dscp_prio=setup.dscp_prio,
             trust=setup.trust)
    dev = node.rdma_device(rdmadev, pci_dir, fw_ver=firmware.split()[0], hca_type="MT4125",
                           guid=gid_link_local(mac)[20:])
    ll = gid_link_local(mac)
    gids: list[tuple[str, str, str | None]] = [(ll, "IB/RoCE v1", netdev), (ll, "RoCE v2", netdev)]
    if ipv4:
        mapped = gid_ipv4(ipv4.split("/")[0])
        gids += [(mapped, "IB/RoCE v1", netdev), (mapped, "RoCE v2", netdev)]
    node.rdma_port(dev, 1, gids, rate="100 Gb/sec (2X HDR)", table_size=16)
    node.devinfo(rdmadev, 0x02C9, 4125, firmware.split()[0],
                 [(1, "ACTIVE", 4096, roce_active_mtu(setup.mtu, 4096)[0], "Ethernet")])
    node.hw_counters(dev, 1, {"np_cnp_sent": 0, "rp_cnp_handled": 0,
                              "np_ecn_marked_roce_packets": 0} if counters is None else counters)
    if mlnx_qos is not None:
        node.command(["mlnx_qos", "-i", netdev], mlnx_qos)
    if traffic_class is not None:
        node.file(f"{dev}/tc/1/traffic_class", f"Global tclass={traffic_class}\n")
    for point in ("roce_np", "roce_rp"):
        for priority in range(8):
            node.file(f"{pci_dir}/net/{netdev}/ecn/{point}/enable/{priority}",
                      f"{int(priority in setup.ecn)}\n")
    if setup.roce_mode:
        node.file(f"/sys/kernel/config/rdma_cm/{rdmadev}/ports/1/default_roce_mode",
                  setup.roce_mode + "\n")


def connectx3_ib(node: FakeNode, ipv4: str | None, port_guid: str, lid: int, sm_lid: int = 1,
                 address: str = "0000:c3:00.0", bridge: str = "0000:00:01.2",
                 netdev: str = "ibp195s0", subnet_manager: bool = True) -> None:
    """Mellanox ConnectX-3 (15b3:1003, mlx4) on InfiniBand FDR with IPoIB, behind an
    M.2-to-PCIe adapter (8 GT/s x4 of x8), as in the Strix Halo wiki's setup."""
    pci_dir = node.pci_device(address, 0x15B3, 0x1003, 0x020700, "mlx4_core", bridge=bridge,
                              link=("8.0 GT/s PCIe", 4, "8.0 GT/s PCIe", 8))
    mac = "80:00:02:08:fe:80:00:00:00:00:00:00:" + port_guid.replace(":", "")[0:2] + ":" + ":".join(
        port_guid.replace(":", "")[i:i + 2] for i in range(2, 16, 2))
    node.netdev(netdev, pci_dir, mac, mtu=2044, speed=56000 if subnet_manager else None,
                up=subnet_manager, arp_type=32, ipv4=ipv4)
    node.ethtool(netdev, "ib_ipoib", "2.42.5000", address)
    node.dcb(netdev, supported=False)
    dev = node.rdma_device("mlx4_0", pci_dir, fw_ver="2.42.5000", hca_type="MT4099",
                           guid=port_guid)
    gid = "fe80:0000:0000:0000:" + port_guid
    state = ("4: ACTIVE", "5: LinkUp") if subnet_manager else ("2: INIT", "5: LinkUp")
    node.rdma_port(dev, 1, [(gid, "IB/RoCE v1", None)], state=state[0], phys_state=state[1],
                   link_layer="InfiniBand", rate="56 Gb/sec (4X FDR)", lid=lid,
                   sm_lid=sm_lid if subnet_manager else 0)
    node.rdma_port(dev, 2, [], state="1: DOWN", phys_state="2: Polling",
                   link_layer="InfiniBand", rate="10 Gb/sec (4X SDR)")
    node.devinfo("mlx4_0", 0x02C9, 4099, "2.42.5000", [
        (1, "ACTIVE" if subnet_manager else "INIT", 4096, 4096, "InfiniBand"),
        (2, "DOWN", 4096, 4096, "InfiniBand")])


def connectx_vpi_ib(node: FakeNode, ipv4: str | None, port_guid: str,
                    address: str = "0000:c2:00.0", bridge: str = "0000:00:01.1",
                    netdev: str = "ib0", rdmadev: str = "mlx5_0", device_id: int = 0x101B,
                    linked: bool = False) -> None:
    """An NVIDIA ConnectX-6 VPI (15b3:101b, mlx5) whose port runs InfiniBand (its firmware's
    LINK_TYPE_P1=1): PCI class 0207 (InfiniBand controller), an IPoIB netdev `ib0` of type 32
    in datagram mode (MTU 2044, `ethtool -i` driver `mlx5_core[ib_ipoib]`), a port with
    link_layer InfiniBand, its rate in IB terms and the one IB GID (fe80::GUID). `linked`:
    False when the cable goes to an Ethernet port — the port stays DOWN / Polling with no LID
    and no subnet manager, and ib0 has no carrier."""
    pci_dir = node.pci_device(address, 0x15B3, device_id, 0x020700, "mlx5_core", bridge=bridge,
                              link=PCIE4_X16)
    guid = port_guid.replace(":", "")
    mac = "00:00:10:87:fe:80:00:00:00:00:00:00:" + ":".join(guid[i:i + 2] for i in range(0, 16, 2))
    node.netdev(netdev, pci_dir, mac, mtu=2044, speed=100000 if linked else None, up=linked,
                arp_type=32, ipv4=ipv4)
    node.ethtool(netdev, "mlx5_core[ib_ipoib]", "20.39.1002 (MT_0000000222)", address)
    node.dcb(netdev, supported=False)
    dev = node.rdma_device(rdmadev, pci_dir, fw_ver="20.39.1002", hca_type="MT4123",
                           guid=port_guid)
    state = ("4: ACTIVE", "5: LinkUp") if linked else ("1: DOWN", "2: Polling")
    node.rdma_port(dev, 1, [("fe80:0000:0000:0000:" + port_guid, "IB/RoCE v1", None)],
                   state=state[0], phys_state=state[1], link_layer="InfiniBand",
                   rate="100 Gb/sec (4X EDR)" if linked else "10 Gb/sec (4X SDR)",
                   lid=3 if linked else 0, sm_lid=1 if linked else 0, table_size=8)
    node.devinfo(rdmadev, 0x02C9, 4123, "20.39.1002", [
        (1, "ACTIVE" if linked else "DOWN", 4096, 4096, "InfiniBand")])


def usb4_routers(node: FakeNode, peer_hostname: str | None, ipv4: str | None = None,
                 mac: str = "02:5d:3a:71:8c:01", speed_gbps: int = 40, mtu: int = 65520,
                 rxe: bool = False, statistics: dict[str, int] | None = None) -> None:
    """Strix Halo's two USB4 host routers (1022:158d/158e, driver thunderbolt) and, when
    `peer_hostname` is given, a Linux XDomain peer with thunderbolt-net on it (`statistics`:
    its /sys/class/net/thunderbolt0/statistics files, none when not given)."""
    bridge = "0000:00:08.3"
    host = node.pci_device("0000:c7:00.5", 0x1022, 0x158D, 0x0C0340, "thunderbolt", bridge=bridge,
                           link=("16.0 GT/s PCIe", 16, "16.0 GT/s PCIe", 16))
    node.pci_device("0000:c7:00.6", 0x1022, 0x158E, 0x0C0340, "thunderbolt", bridge=bridge,
                    link=("16.0 GT/s PCIe", 16, "16.0 GT/s PCIe", 16))
    bus = "/sys/bus/thunderbolt/devices"
    root = f"{host}/domain0/0-0"
    node.rel_link(f"{bus}/domain0", f"{host}/domain0")
    node.rel_link(f"{bus}/0-0", root)
    node.file(f"{root}/uevent", "DEVTYPE=thunderbolt_device\nUSB4_VERSION=1.0\n")
    node.file(f"{root}/generation", "4\n")
    node.file(f"{root}/device_name", "Strix Halo USB4 Host Router\n")
    node.file(f"{root}/vendor_name", "AMD\n")
    if peer_hostname is None:
        return
    peer = f"{root}/0-1"
    node.rel_link(f"{bus}/0-1", peer)
    node.file(f"{peer}/uevent", "DEVTYPE=thunderbolt_xdomain\n")
    node.file(f"{peer}/device_name", peer_hostname + "\n")
    node.file(f"{peer}/vendor_name", "Linux\n")
    lane = speed_gbps / 2
    for side in ("rx", "tx"):
        node.file(f"{peer}/{side}_speed", f"{lane:.1f} Gb/s\n")
        node.file(f"{peer}/{side}_lanes", "2\n")
    service = f"{peer}/0-1.0"
    node.rel_link(f"{bus}/0-1.0", service)
    node.file(f"{service}/uevent", "DEVTYPE=thunderbolt_service\nDRIVER=thunderbolt-net\n")
    node.rel_link(f"{service}/driver", "/sys/bus/thunderbolt/drivers/thunderbolt-net")
    altname = "enx" + mac.replace(":", "")
    node.netdev("thunderbolt0", service, mac, mtu=mtu, speed=speed_gbps * 1000, ipv4=ipv4,
                altnames=(altname,))
    node.ethtool("thunderbolt0", "thunderbolt-net", "", "0-1.0")
    if statistics is not None:
        node.netdev_statistics("thunderbolt0", statistics)
    node.dcb("thunderbolt0", supported=False)
    if rxe and ipv4:
        dev = node.rdma_device("rxe0", "/sys/devices/virtual", fw_ver="0.0.0",
                               parent_netdev="thunderbolt0")
        node.rdma_port(dev, 1, [(gid_link_local(mac), "RoCE v2", "thunderbolt0"),
                                (gid_ipv4(ipv4.split("/")[0]), "RoCE v2", "thunderbolt0")],
                       rate="10 Gb/sec (1X QDR)")
        node.devinfo("rxe0", 0xFFFFFF, 0, "0.0.0", [(1, "ACTIVE", 4096, 4096, "Ethernet")])


def onboard_lan(node: FakeNode, ipv4: str, mac: str) -> None:
    """The board's Realtek RTL8125 2.5 GbE (management network, no RDMA)."""
    pci_dir = node.pci_device("0000:c0:00.0", 0x10EC, 0x8125, 0x020000, "r8169",
                              bridge="0000:00:02.1", link=("5.0 GT/s PCIe", 1, "5.0 GT/s PCIe", 1))
    node.netdev("enp192s0", pci_dir, mac, mtu=1500, speed=2500, ipv4=ipv4)
    node.ethtool("enp192s0", "r8169", "rtl8125b-2_0.0.2 07/13/20", "0000:c0:00.0")
    node.dcb("enp192s0", supported=False)


def usb4_bond(node: FakeNode, peer_hostname: str, ipv4: str, mode: str = "balance-rr 0",
              tcp_reordering: int | None = 3, macs: tuple[str, str] = ("02:5d:3a:71:8c:01",
                                                                         "02:5d:3a:71:8d:01")
              , statistics: dict[str, int] | None = None) -> None:
    """Two USB4 cables to one peer (thunderbolt0 on the first host router's domain, thunderbolt1
    on the second's), enslaved to bond0 (`mode` as bonding/mode prints it) which carries
    `ipv4`; `tcp_reordering`: /proc/sys/net/ipv4/tcp_reordering (None: not captured);
    `statistics`: thunderbolt1's netdev statistics (none when not given)."""
    usb4_routers(node, peer_hostname, mac=macs[0])
    host = "/sys/devices/pci0000:00/0000:00:08.3/0000:c7:00.6"
    bus = "/sys/bus/thunderbolt/devices"
    root = f"{host}/domain1/1-0"
    node.rel_link(f"{bus}/domain1", f"{host}/domain1")
    node.rel_link(f"{bus}/1-0", root)
    node.file(f"{root}/uevent", "DEVTYPE=thunderbolt_device\nUSB4_VERSION=1.0\n")
    node.file(f"{root}/generation", "4\n")
    peer = f"{root}/1-1"
    node.rel_link(f"{bus}/1-1", peer)
    node.file(f"{peer}/uevent", "DEVTYPE=thunderbolt_xdomain\n")
    node.file(f"{peer}/device_name", peer_hostname + "\n")
    for side in ("rx", "tx"):
        node.file(f"{peer}/{side}_speed", "20.0 Gb/s\n")
        node.file(f"{peer}/{side}_lanes", "2\n")
    service = f"{peer}/1-1.0"
    node.rel_link(f"{bus}/1-1.0", service)
    node.file(f"{service}/uevent", "DEVTYPE=thunderbolt_service\nDRIVER=thunderbolt-net\n")
    node.rel_link(f"{service}/driver", "/sys/bus/thunderbolt/drivers/thunderbolt-net")
    node.netdev("thunderbolt1", service, macs[1], mtu=65520, speed=40000)
    node.ethtool("thunderbolt1", "thunderbolt-net", "", "1-1.0")
    if statistics is not None:
        node.netdev_statistics("thunderbolt1", statistics)
    bond = node.netdev("bond0", "/sys/devices/virtual", macs[0], mtu=65520, speed=80000, ipv4=ipv4)
    del node.links[f"{bond}/device"]  # a virtual device: no `device` link
    node.file(f"{bond}/bonding/mode", mode + "\n")
    node.file(f"{bond}/bonding/slaves", "thunderbolt0 thunderbolt1\n")
    if tcp_reordering is not None:
        node.file("/proc/sys/net/ipv4/tcp_reordering", f"{tcp_reordering}\n")


def llama_cpp(node: FakeNode, rdma: bool = True, backend: str = "vulkan",
              commit: str = "930e2fa59", build: int = 10991) -> None:
    """A shared llama.cpp build in /opt/llama.cpp/build/bin, as the collector's survey reports
    it (facts/llama_cpp.py): the RPC server and llama-server, their libraries, the version line
    in the layout `llama-server --version` prints (ggml-org/llama.cpp#28971). Synthesized."""
    from strixwizard.facts.llama_cpp import LLAMA_PROGRAMS
    from strixwizard.facts.rpc_cache import RPC_CACHE

    folder = "/opt/llama.cpp/build/bin"
    libraries = sorted({"libggml-base.so", "libggml-cpu.so", "libggml-rpc.so", "libggml.so",
                        f"libggml-{backend}.so", *(["libibverbs.so"] if rdma else [])})
    lines = []
    for index, name in enumerate(("ggml-rpc-server", "llama-server")):
        digest = f"{commit}{index}".encode().hex().ljust(64, "0")[:64]
        lines += [f"binary {name} {folder}/{name}", f"sha256 {digest}", f"rdma {int(rdma)}",
                  *(f"library {lib}" for lib in libraries)]
    lines += [f"version version: 0.4.1-dev (build {build}, commit {commit})",
              "version built with GNU 14.2.1 for Linux x86_64"]
    node.command(list(LLAMA_PROGRAMS.argv), "\n".join(lines) + "\n")
    node.command(list(RPC_CACHE.argv), rpc_cache_survey(cached_kib=41_943_040))


"""The demo site's nodes: two Strix Halo boxes with Intel E810-CQDA1 NICs joined back to back
(kyuz0's setup: enp194s0np0 / rocep194s0 at 0000:c2:00.0, 192.168.100.1/30 and .2), plus a
USB4 cable between them running thunderbolt-net, and the onboard 2.5 GbE on the LAN.

Faults left in for the wizard to find (each is a real, common one):
- both E810s sit in the board's x4 slot (via a riser): PCIe 4.0 x4 caps RDMA near 50 Gb/s;
- node-b boots without `amdgpu.gttsize`/`ttm.pages_limit`, so its iGPU may map
  only half of RAM and big models will not load;
- node-b's E810 kept MTU 1500 (RoCE active_mtu 1024, and a mismatch with node-a's 9000),
  its firmware LLDP agent is still on, and link-level pause is on together with PFC;
- the USB4 link is TCP only (thunderbolt-net): fine for management, not for RCCL;
- its fabric counters (as read after the recorded RDMA run, recordings/counters.json) show
  node-b's global pause and node-a's irdma discards: PFC is not doing its job;
- both run systemd: node-a (Fedora 43 Workstation) with NetworkManager, node-b (Ubuntu 24.04
  Server) with netplan's systemd-networkd, so fixes persist as they would there;
- node-b runs Ubuntu 24.04, whose rdma-core 50 (libirdma) is known to make RCCL fail with
  `Unknown completion` errors against irdma (strixwizard/data/known_bad.json).
"""

from __future__ import annotations

import json
from pathlib import Path

from strixwizard.demo.builder import FakeNode
from strixwizard.demo.hardware import (
    PCIE4_X4_OF_X16,
    RoceSetup,
    e810,
    llama_cpp,
    onboard_lan,
    usb4_routers,
)
from strixwizard.facts.packages import DPKG_QUERY, PACKAGES

RECORDINGS = Path(__file__).resolve().parent / "recordings"
TUNED_CMDLINE = "iommu=pt amdgpu.gttsize=126976 ttm.pages_limit=32505856"
MEM_TOTAL_KB = 131533192


def strix_halo_node(hostname: str, tuned_gtt: bool = True) -> FakeNode:
    node = FakeNode(hostname)
    node.cpu()
    node.memory(MEM_TOTAL_KB)
    node.kernel(cmdline_extra=TUNED_CMDLINE if tuned_gtt else "iommu=pt")
    gtt = 126976 * 1024**2 if tuned_gtt else (MEM_TOTAL_KB * 1024 // 2) // 4096 * 4096
    node.igpu(gtt_bytes=gtt)
    node.rocm()
    return node


#: `dpkg-query -W` answers of Ubuntu 24.04 (noble): its rdma-core 50 and linux-firmware.
NOBLE_PACKAGES = {"rdma-core": "50.0-2build2", "ibverbs-providers": "50.0-2build2",
                  "linux-firmware": "20240318.git3b128b60-0ubuntu2.1"}
NOBLE_OS_RELEASE = ('PRETTY_NAME="Ubuntu 24.04.3 LTS"\nNAME="Ubuntu"\nVERSION_ID="24.04"\n'
                    'VERSION="24.04.3 LTS (Noble Numbat)"\nVERSION_CODENAME=noble\nID=ubuntu\n'
                    'ID_LIKE=debian\n')


def ubuntu_noble(node: FakeNode, cmdline_extra: str = "iommu=pt") -> None:
    """An Ubuntu 24.04 install (mainline 6.18 kernel): os-release and what dpkg-query knows."""
    node.kernel(release="6.18.6-061806-generic", cmdline_extra=cmdline_extra,
                os_pretty="Ubuntu 24.04.3 LTS")
    node.file("/usr/lib/os-release", NOBLE_OS_RELEASE)
    for package in PACKAGES:
        argv = list(DPKG_QUERY.command(package=package))
        if package in NOBLE_PACKAGES:
            node.command(argv, f"{package}\t{NOBLE_PACKAGES[package]}\n")
        else:
            node.command(argv, "", rc=1, stderr=f"dpkg-query: no packages found matching {package}\n")


def systemd_init(node: FakeNode) -> None:
    """PID 1 is systemd, as on every Fedora 43 and Ubuntu 24.04 install."""
    node.file("/proc/1/comm", "systemd\n")


def _ifindex(node: FakeNode, netdev: str) -> int:
    return int(next(entry["ifindex"] for entry in node.ip_links if entry["ifname"] == netdev))


def network_manager(node: FakeNode, connections: dict[str, str]) -> None:
    """NetworkManager connects these netdevs (netdev → connection name), as Fedora Workstation
    sets up wired NICs: `nmcli -t -f DEVICE,TYPE,STATE,CONNECTION device status` (terse output,
    colon-separated: https://networkmanager.dev/docs/api/latest/nmcli.html)."""
    from strixwizard.facts.persistence import NMCLI_DEVICES

    lines = [f"{netdev}:ethernet:connected:{name}" for netdev, name in connections.items()]
    node.command(list(NMCLI_DEVICES.argv), "\n".join([*lines, "lo:loopback:connected (externally):lo"])
                 + "\n")


def networkd(node: FakeNode, netdevs: tuple[str, ...]) -> None:
    """systemd-networkd manages these netdevs from netplan's generated files (Ubuntu Server:
    netplan writes /run/systemd/network/10-netplan-IF.network,
    https://netplan.readthedocs.io/en/stable/netplan-generate/); its per-link state file
    /run/systemd/netif/links/IFINDEX as systemd's link_save() writes it."""
    from strixwizard.facts.persistence import NETIF_LINKS

    for netdev in netdevs:
        node.file(f"{NETIF_LINKS}/{_ifindex(node, netdev)}", (
            "# This is private data. Do not parse.\nADMIN_STATE=configured\nOPER_STATE=routable\n"
            "CARRIER_STATE=carrier\nADDRESS_STATE=routable\nIPV4_ADDRESS_STATE=routable\n"
            "IPV6_ADDRESS_STATE=degraded\nONLINE_STATE=online\nACTIVATION_POLICY=up\n"
            f"NETWORK_FILE=/run/systemd/network/10-netplan-{netdev}.network\n"
            'NETWORK_FILE_DROPINS=""\nDNS=\nNTP=\nSIP=\nDOMAINS=\nROUTE_DOMAINS=\nLLMNR=yes\n'
            "MDNS=no\n"))


def recorded_counters(node: str) -> tuple[dict[str, int], dict[str, int]]:
    """A demo node's `ethtool -S` and hw_counters as read after the recorded RDMA run
    (recordings/counters.json): what its snapshot holds."""
    data = json.loads((RECORDINGS / "counters.json").read_text(encoding="utf-8"))
    after = {s["source"]: s["values"] for s in data["hosts"][node]["after"]}
    return after["ethtool -S"], after["hw_counters"]


def rdma_link(node: FakeNode, device: str, netdev: str, netdev_index: int) -> None:
    node.rdma_links([{"ifindex": 0, "ifname": device, "port": 1, "state": "ACTIVE",
                      "physical_state": "LINK_UP", "netdev": netdev, "netdev_index": netdev_index}])


def not_recorded(node: FakeNode, argv: list[str]) -> None:
    """A command the node has (its other uses are recorded) whose output for this device is in
    no recording: said so, never "command not found" on a node where the program answered."""
    node.command(argv, "", rc=1, stderr="not in the demo's recordings (the recorded run read "
                 "the E810's counters only)")


def demo_nodes() -> dict[str, FakeNode]:
    a = strix_halo_node("strix-a")
    onboard_lan(a, "192.168.1.21/24", "9c:6b:00:4a:21:01")
    statistics, counters = recorded_counters("node-a")
    e810(a, "192.168.100.1/30", "b4:96:91:9c:3a:10", pcie=PCIE4_X4_OF_X16, counters=counters,
         statistics=statistics)
    rdma_link(a, "rocep194s0", "enp194s0np0", 3)
    usb4_routers(a, "strix-b", ipv4="10.0.0.1/30", mac="02:5d:3a:71:8c:01")
    not_recorded(a, ["ethtool", "-S", "thunderbolt0"])
    systemd_init(a)
    network_manager(a, {"enp192s0": "Wired connection 1", "enp194s0np0": "fabric",
                        "thunderbolt0": "usb4"})
    llama_cpp(a)

    b = strix_halo_node("strix-b", tuned_gtt=False)
    ubuntu_noble(b)
    onboard_lan(b, "192.168.1.22/24", "9c:6b:00:4a:22:01")
    faulty = RoceSetup(mtu=1500, fw_lldp=True, pause=(True, True))
    statistics, counters = recorded_counters("node-b")
    e810(b, "192.168.100.2/30", "b4:96:91:9c:41:d8", setup=faulty, pcie=PCIE4_X4_OF_X16,
         counters=counters, statistics=statistics)
    rdma_link(b, "rocep194s0", "enp194s0np0", 3)
    usb4_routers(b, "strix-a", ipv4="10.0.0.2/30", mac="02:5d:3a:71:8c:02")
    not_recorded(b, ["ethtool", "-S", "thunderbolt0"])
    systemd_init(b)
    networkd(b, ("enp192s0", "enp194s0np0", "thunderbolt0"))
    llama_cpp(b)
    return {"node-a": a, "node-b": b}

"""Synthesise node trees in the formats real machines show, and capture them.

The demo site and the test scenarios are written with this: a `FakeNode` holds
the files, symlinks and command outputs of a machine (their contents follow
real captures quoted in the project's research notes), `write_root` lays them
out as a filesystem tree, and `capture` runs the real collector over that tree
so the snapshot is exactly what `strixwizard capture` would write. Command
outputs are recorded answers, never run.
"""

from __future__ import annotations

import json
import os
import posixpath
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from strixwizard import __version__
from strixwizard.facts.dcb import dcb_argv
from strixwizard.facts.devlink import DEVLINK_PARAMS
from strixwizard.facts.ethtool import DRIVER_INFO, PAUSE, PRIV_FLAGS
from strixwizard.facts.llama_cpp import LLAMA_PROGRAMS
from strixwizard.facts.netdev import IP_ADDR
from strixwizard.facts.rdma import IBV_DEVINFO
from strixwizard.facts.rpc_cache import RPC_CACHE
from strixwizard.facts.spec import SPEC
from strixwizard.onnode.collector import DirSink, TarSink, collect

#: /proc/self/limits as Linux writes it (memlock unlimited), the base of `FakeNode.limits`.
#: The demo's snapshots carry a fixed capture time, so rebuilding them changes no byte.
CAPTURED_AT = "2026-11-20T09:30:00+00:00"
DEMO_MTIME = 1795167000  # CAPTURED_AT as a Unix time
LIMITS_FILE = Path(__file__).with_name("proc_self_limits.txt")

STRIX_HALO_395 = "AMD RYZEN AI MAX+ 395 w/ Radeon 8060S"
ZEN5_FLAGS = (
    "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr "
    "sse sse2 ht syscall nx mmxext fxsr_opt pdpe1gb rdtscp lm constant_tsc rep_good amd_lbr_v2 "
    "nopl nonstop_tsc cpuid extd_apicid aperfmperf rapl pni pclmulqdq monitor ssse3 fma cx16 "
    "sse4_1 sse4_2 movbe popcnt aes xsave avx f16c rdrand lahf_lm cmp_legacy svm extapic "
    "cr8_legacy abm sse4a misalignsse 3dnowprefetch osvw ibs skinit wdt tce topoext perfctr_core "
    "perfctr_nb bpext perfctr_llc mwaitx cpb cat_l3 cdp_l3 hw_pstate ssbd mba perfmon_v2 ibrs "
    "ibpb stibp ibrs_enhanced vmmcall fsgsbase tsc_adjust bmi1 avx2 smep bmi2 erms invpcid cqm "
    "rdt_a avx512f avx512dq rdseed adx smap avx512ifma clflushopt clwb avx512cd sha_ni avx512bw "
    "avx512vl xsaveopt xsavec xgetbv1 xsaves avx_vnni avx512_bf16 clzero irperf xsaveerptr "
    "rdpru wbnoinvd cppc arat npt lbrv svm_lock nrip_save tsc_scale vmcb_clean flushbyasid "
    "decodeassists pausefilter pfthreshold avic v_vmsave_vmload vgif x2avic v_spec_ctrl vnmi "
    "avx512vbmi umip pku ospke avx512_vbmi2 gfni vaes vpclmulqdq avx512_vnni avx512_bitalg "
    "avx512_vpopcntdq rdpid bus_lock_detect movdiri movdir64b overflow_recov succor smca fsrm "
    "avx512_vp2intersect flush_l1d amd_lbr_pmc_freeze"
)


#: The file system the demo's nodes keep root's home on: a 2 TB NVMe.
DEMO_ROOT_FS_KIB = 1_967_874_324


def rpc_cache_survey(cached_kib: int | None) -> str:
    """ggml-rpc-server's tensor cache in root's home as the survey prints it (facts/rpc_cache.py):
    `du -s -k` of the folder (or `absent`), then `df -P -k` of its file system. Synthesized."""
    folder = "/root/.cache/llama.cpp/rpc"
    used = 412_000_000 + (cached_kib or 0)
    available = DEMO_ROOT_FS_KIB - used
    du = "absent" if cached_kib is None else f"{cached_kib}\t{folder}"
    return (f"cache {folder}\n{du}\n"
            "Filesystem     1024-blocks      Used  Available Capacity Mounted on\n"
            f"/dev/nvme0n1p2  {DEMO_ROOT_FS_KIB} {used} {available}      "
            f"{round(100 * used / DEMO_ROOT_FS_KIB)}% /\n")


@dataclass
class FakeNode:
    hostname: str
    files: dict[str, str] = field(default_factory=dict)
    links: dict[str, str] = field(default_factory=dict)
    commands: dict[tuple[str, ...], dict[str, Any]] = field(default_factory=dict)
    ip_links: list[dict[str, Any]] = field(default_factory=list)
    devlink_params: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    devinfo_blocks: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.file("/proc/sys/kernel/hostname", self.hostname + "\n")
        self.limits()

    # -- primitives ----------------------------------------------------------
    def file(self, path: str, text: str) -> None:
        self.files[path] = text

    def link(self, path: str, target: str) -> None:
        self.links[path] = target

    def command(self, argv: list[str], stdout: str, rc: int = 0, stderr: str = "") -> None:
        self.commands[tuple(argv)] = {"argv": argv, "rc": rc, "stdout": stdout, "stderr": stderr}

    def rel_link(self, path: str, target: str) -> None:
        """A symlink at `path` to absolute `target`, stored relative as sysfs does."""
        self.link(path, posixpath.relpath(target, posixpath.dirname(path)))

    # -- node identity -------------------------------------------------------
    def cpu(self, model_name: str = STRIX_HALO_395, family: int = 26, model: int = 112,
            threads: int = 32, vendor: str = "AuthenticAMD") -> None:
        cores = max(threads // 2, 1)
        entries = []
        for n in range(threads):
            entries.append(
                f"processor\t: {n}\nvendor_id\t: {vendor}\ncpu family\t: {family}\n"
                f"model\t\t: {model}\nmodel name\t: {model_name}\nstepping\t: 0\n"
                f"microcode\t: 0xb70001d\ncpu MHz\t\t: 3000.000\ncache size\t: 1024 KB\n"
                f"physical id\t: 0\nsiblings\t: {threads}\ncore id\t\t: {n % cores}\n"
                f"cpu cores\t: {cores}\napicid\t\t: {n}\ninitial apicid\t: {n}\nfpu\t\t: yes\n"
                f"fpu_exception\t: yes\ncpuid level\t: 16\nwp\t\t: yes\nflags\t\t: {ZEN5_FLAGS}\n"
                "bugs\t\t: sysret_ss_attrs spectre_v1 spectre_v2 spec_store_bypass srso\n"
                "bogomips\t: 5988.74\nTLB size\t: 3072 4K pages\nclflush size\t: 64\n"
                "cache_alignment\t: 64\naddress sizes\t: 48 bits physical, 48 bits virtual\n"
                "power management: ts ttp tm hwpstate cpb eff_freq_ro [13] [14] [15]\n"
            )
        self.file("/proc/cpuinfo", "\n".join(entries) + "\n")

    def memory(self, total_kb: int = 131533192) -> None:
        free = total_kb - 9_000_000
        self.file(
            "/proc/meminfo",
            f"MemTotal:       {total_kb} kB\nMemFree:        {free} kB\n"
            f"MemAvailable:   {free + 1_500_000} kB\nBuffers:          112344 kB\n"
            "Cached:          2245080 kB\nSwapCached:            0 kB\n"
            "SwapTotal:       8388604 kB\nSwapFree:        8388604 kB\n"
            "Hugepagesize:       2048 kB\n",
        )

    def kernel(self, release: str = "6.18.5-200.fc43.x86_64", cmdline_extra: str = "",
               os_pretty: str = "Fedora Linux 43 (Workstation Edition)") -> None:
        self.file("/proc/sys/kernel/osrelease", release + "\n")
        self.file(
            "/proc/cmdline",
            f"BOOT_IMAGE=(hd0,gpt2)/vmlinuz-{release} root=UUID=3f1c2a8e-8d1b-4c55-9e0a-"
            f"6b2d7c1e9f40 ro rootflags=subvol=root rhgb quiet {cmdline_extra}".rstrip() + "\n",
        )
        self.file("/usr/lib/os-release", f'NAME="Fedora Linux"\nVERSION_ID=43\n'
                  f'ID=fedora\nPRETTY_NAME="{os_pretty}"\n')
        self.link("/etc/os-release", "../usr/lib/os-release")

    def pci_device(self, address: str, vendor: int, device: int, pci_class: int,
                   driver: str | None, bridge: str = "0000:00:08.1",
                   link: tuple[str, int, str, int] | None = None) -> str:
        """Add a PCI function; returns its sysfs directory. `link` = (cur speed, width, max...)."""
        below = f"{bridge}/{address}" if bridge else address  # "": a root port itself
        directory = f"/sys/devices/pci0000:00/{below}"
        self.file(f"{directory}/vendor", f"0x{vendor:04x}\n")
        self.file(f"{directory}/device", f"0x{device:04x}\n")
        self.file(f"{directory}/class", f"0x{pci_class:06x}\n")
        self.file(f"{directory}/subsystem_vendor", f"0x{vendor:04x}\n")
        self.file(f"{directory}/subsystem_device", "0x0000\n")
        if link is not None:
            speed, width, max_speed, max_width = link
            self.file(f"{directory}/current_link_speed", f"{speed}\n")
            self.file(f"{directory}/current_link_width", f"{width}\n")
            self.file(f"{directory}/max_link_speed", f"{max_speed}\n")
            self.file(f"{directory}/max_link_width", f"{max_width}\n")
        self.link(f"/sys/bus/pci/devices/{address}", f"../../../devices/pci0000:00/{below}")
        if driver is not None:
            self.link(f"{directory}/driver", f"../../../../bus/pci/drivers/{driver}")
        return directory

    def igpu(self, address: str = "0000:c5:00.0", gtt_bytes: int = 126976 * 1024**2,
             vram_bytes: int = 512 * 1024**2, kfd: bool = True, gfx_version: int = 110501,
             driver: str | None = "amdgpu") -> None:
        directory = self.pci_device(address, 0x1002, 0x1586, 0x038000, driver,
                                    link=("16.0 GT/s PCIe", 16, "16.0 GT/s PCIe", 16))
        if driver != "amdgpu":
            return
        self.file(f"{directory}/mem_info_gtt_total", f"{gtt_bytes}\n")
        self.file(f"{directory}/mem_info_vram_total", f"{vram_bytes}\n")
        self.link("/sys/class/drm/card1", f"../../devices/pci0000:00/0000:00:08.1/{address}/drm/card1")
        self.link(f"{directory}/drm/card1/device", "../../../" + address)
        self.file("/sys/module/ttm/parameters/pages_limit", f"{gtt_bytes // 4096}\n")
        if not kfd:
            return
        bus = int(address.split(":")[1], 16)
        nodes = "/sys/devices/virtual/kfd/kfd/topology/nodes"
        self.link("/sys/class/kfd/kfd", "../../devices/virtual/kfd/kfd")
        self.file(f"{nodes}/0/properties", "cpu_cores_count 32\nsimd_count 0\nmem_banks_count 1\n"
                  "gfx_target_version 0\nlocation_id 0\ndomain 0\n")
        self.file(f"{nodes}/1/properties", (
            "cpu_cores_count 0\nsimd_count 80\nmem_banks_count 1\ncaches_count 160\n"
            "io_links_count 1\nmax_waves_per_simd 16\nlds_size_in_kb 64\ngds_size_in_kb 0\n"
            f"wave_front_size 32\narray_count 4\nsimd_arrays_per_engine 2\ncu_per_simd_array 10\n"
            f"simd_per_cu 2\nmax_slots_scratch_cu 32\ngfx_target_version {gfx_version}\n"
            f"vendor_id 4098\ndevice_id 5510\nlocation_id {bus << 8}\ndomain 0\n"
            "drm_render_minor 128\nnum_xcc 1\nmax_engine_clk_fcompute 2900\n"
        ))

    # -- platform ------------------------------------------------------------
    def limits(self, memlock_kb: int | None = None) -> None:
        """/proc/self/limits (a real one, `proc_self_limits.txt`) with this memlock; None =
        unlimited (the collector's own session limits)."""
        lock = "unlimited" if memlock_kb is None else str(memlock_kb * 1024)
        memlock = f"{'Max locked memory':<26}{lock:<21}{lock:<21}{'bytes':<10}\n"
        lines = LIMITS_FILE.read_text().splitlines(keepends=True)
        self.file("/proc/self/limits", "".join(
            memlock if line.startswith("Max locked memory") else line for line in lines))

    def rocm(self, version: str = "7.2.0-43", rccl_targets: tuple[str, ...] = ("gfx1100", "gfx1151"),
             compressed: bool = False, library: str = "/opt/rocm/lib/librccl.so.1") -> None:
        """ROCm's version file and the recorded `grep` over librccl (see facts/rocm.py)."""
        from strixwizard.facts.rocm import RCCL_LIBRARIES, rccl_argv

        self.file("/opt/rocm/.info/version", version + "\n")
        for lib in RCCL_LIBRARIES:
            if lib != library:
                self.command(list(rccl_argv(lib)), "", rc=2,
                             stderr=f"grep: {lib}: No such file or directory\n")
        lines = []
        for _ in range(3):  # one bundle per translation unit: ids repeat
            lines += ["CCOB"] if compressed else [f"amdgcn-amd-amdhsa--{t}" for t in rccl_targets]
        self.command(list(rccl_argv(library)), "\n".join(lines) + "\n", rc=0 if lines else 1)

    # -- network devices -------------------------------------------------------
    def netdev(self, name: str, device_dir: str, mac: str, mtu: int = 1500, speed: int | None = None,
               up: bool = True, arp_type: int = 1, ipv4: str | None = None,
               altnames: tuple[str, ...] = ()) -> str:
        """A netdev under `device_dir` (a PCI function or a Thunderbolt service)."""
        directory = f"{device_dir}/net/{name}"
        ifindex = len(self.ip_links) + 2
        self.file(f"{directory}/mtu", f"{mtu}\n")
        self.file(f"{directory}/operstate", "up\n" if up else "down\n")
        self.file(f"{directory}/carrier", "1\n" if up else "0\n")
        self.file(f"{directory}/speed", f"{speed if up and speed else -1}\n")
        self.file(f"{directory}/address", mac + "\n")
        self.file(f"{directory}/type", f"{arp_type}\n")
        self.file(f"{directory}/ifindex", f"{ifindex}\n")
        if arp_type == 32:  # IPoIB: its mode (datagram by default; connected on request)
            self.file(f"{directory}/mode", "datagram\n")
        self.rel_link(f"/sys/class/net/{name}", directory)
        self.rel_link(f"{directory}/device", device_dir)
        addr_info: list[dict[str, Any]] = []
        if ipv4:
            address, prefix = ipv4.split("/")
            addr_info.append({"family": "inet", "local": address, "prefixlen": int(prefix),
                              "scope": "global", "label": name, "valid_life_time": 4294967295,
                              "preferred_life_time": 4294967295})
        mac_bytes = mac.split(":")
        eui = [f"{int(mac_bytes[0], 16) ^ 2:02x}", *mac_bytes[1:3], "ff", "fe", *mac_bytes[3:]]
        link_local = "fe80::" + ":".join(
            f"{int(eui[i] + eui[i + 1], 16):x}" for i in range(0, 8, 2))
        addr_info.append({"family": "inet6", "local": link_local, "prefixlen": 64, "scope": "link",
                          "valid_life_time": 4294967295, "preferred_life_time": 4294967295})
        entry: dict[str, Any] = {
            "ifindex": ifindex, "ifname": name,
            "flags": ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"] if up else ["BROADCAST", "MULTICAST"],
            "mtu": mtu, "qdisc": "mq", "operstate": "UP" if up else "DOWN", "group": "default",
            "txqlen": 1000, "link_type": "ether" if arp_type == 1 else "infiniband",
            "address": mac, "broadcast": "ff:ff:ff:ff:ff:ff",
        }
        if altnames:
            entry["altnames"] = list(altnames)
        entry["addr_info"] = addr_info
        self.ip_links.append(entry)
        return directory

    def ethtool(self, netdev: str, driver: str, firmware: str, bus_info: str,
                pause: tuple[bool, bool] = (False, False), priv_flags: dict[str, bool] | None = None,
                version: str = "6.18.5-200.fc43.x86_64") -> None:
        """`ethtool -i`, `-a` and `--show-priv-flags` outputs in ethtool 6.x format."""
        self.command(list(DRIVER_INFO.command(netdev=netdev)), (
            f"driver: {driver}\nversion: {version}\nfirmware-version: {firmware}\n"
            f"expansion-rom-version: \nbus-info: {bus_info}\nsupports-statistics: yes\n"
            "supports-test: yes\nsupports-eeprom-access: yes\nsupports-register-dump: yes\n"
            f"supports-priv-flags: {'yes' if priv_flags else 'no'}\n"))

        def on(flag: bool) -> str:
            return "on" if flag else "off"

        self.command(list(PAUSE.command(netdev=netdev)), (
            f"Pause parameters for {netdev}:\nAutonegotiate:\toff\nRX:\t\t{on(pause[0])}\n"
            f"TX:\t\t{on(pause[1])}\n\n"))
        if priv_flags is None:
            self.command(list(PRIV_FLAGS.command(netdev=netdev)), f"Private flags for {netdev}:\n")
        else:
            width = max(len(k) for k in priv_flags)
            self.command(list(PRIV_FLAGS.command(netdev=netdev)),
                         f"Private flags for {netdev}:\n" + "".join(
                             f"{k:<{width}}: {on(v)}\n" for k, v in priv_flags.items()))

    def dcb(self, netdev: str, pfc: tuple[int, ...] = (), prio_tc: tuple[int, ...] = (0,) * 8,
            dscp_prio: tuple[tuple[int, int], ...] = (), trust: tuple[str, ...] | None = None,
            supported: bool = True) -> None:
        """`dcb -j pfc|ets|app|apptrust show dev IF`, as iproute2 prints them."""
        def cmd(obj: str) -> list[str]:
            return list(dcb_argv(obj, netdev))

        if not supported:
            for obj in ("pfc", "ets", "app", "apptrust"):
                self.command(cmd(obj), "", rc=1, stderr="Error: Operation not supported.\n")
            return
        self.command(cmd("pfc"), json.dumps({
            "pfc_cap": 8, "macsec_bypass": False, "delay": 0,
            "prio_pfc": [p in pfc for p in range(8)]}, separators=(",", ":"), allow_nan=False) + "\n")
        tcs = sorted(set(prio_tc))
        self.command(cmd("ets"), json.dumps({
            "willing": False, "ets_cap": 8, "cbs": False,
            "tc_bw": [100 // len(tcs) if tc in tcs else 0 for tc in range(8)],
            "tc_tsa": ["ets" if tc in tcs else "strict" for tc in range(8)],
            "prio_tc": list(prio_tc)}, separators=(",", ":"), allow_nan=False) + "\n")
        app: dict[str, Any] = {}
        if dscp_prio:
            app["dscp_prio"] = [list(pair) for pair in dscp_prio]
        self.command(cmd("app"), json.dumps(app, separators=(",", ":"), allow_nan=False) + "\n")
        if trust is None:
            self.command(cmd("apptrust"), "", rc=1, stderr="Error: Operation not supported.\n")
        else:
            self.command(cmd("apptrust"), json.dumps({"order": list(trust)}, allow_nan=False) + "\n")

    def rdma_device(self, name: str, parent_dir: str, node_type: str = "1: CA",
                    fw_ver: str = "1.70", guid: str = "0000:0000:0000:0000",
                    hca_type: str | None = None, parent_netdev: str | None = None) -> str:
        """An RDMA device under `parent_dir` (PCI function, auxiliary device or virtual)."""
        directory = f"{parent_dir}/infiniband/{name}"
        self.rel_link(f"/sys/class/infiniband/{name}", directory)
        if not parent_dir.startswith("/sys/devices/virtual"):
            self.rel_link(f"{directory}/device", parent_dir)
        self.file(f"{directory}/node_type", node_type + "\n")
        self.file(f"{directory}/fw_ver", fw_ver + "\n")
        self.file(f"{directory}/node_guid", guid + "\n")
        if hca_type:
            self.file(f"{directory}/hca_type", hca_type + "\n")
        if parent_netdev:
            self.file(f"{directory}/parent", parent_netdev + "\n")
        return directory

    def rdma_port(self, device_dir: str, number: int, gids: list[tuple[str, str, str | None]],
                  state: str = "4: ACTIVE", phys_state: str = "5: LinkUp",
                  link_layer: str = "Ethernet", rate: str = "100 Gb/sec (4X EDR)",
                  lid: int = 0, sm_lid: int = 0, table_size: int = 8) -> None:
        """A port with its GID table: (gid, type, ndev) per index; the rest of the table is zero."""
        base = f"{device_dir}/ports/{number}"
        self.file(f"{base}/state", state + "\n")
        self.file(f"{base}/phys_state", phys_state + "\n")
        self.file(f"{base}/link_layer", link_layer + "\n")
        self.file(f"{base}/rate", rate + "\n")
        self.file(f"{base}/lid", f"0x{lid:x}\n")
        self.file(f"{base}/sm_lid", f"0x{sm_lid:x}\n")
        for index in range(max(table_size, len(gids))):
            if index < len(gids):
                gid, gid_type, ndev = gids[index]
                self.file(f"{base}/gids/{index}", gid + "\n")
                self.file(f"{base}/gid_attrs/types/{index}", gid_type + "\n")
                if ndev:
                    self.file(f"{base}/gid_attrs/ndevs/{index}", ndev + "\n")
            else:  # empty entries: reading their types gives EINVAL, so the capture lacks them
                self.file(f"{base}/gids/{index}", "0000:0000:0000:0000:0000:0000:0000:0000\n")

    def hw_counters(self, device_dir: str, port: int, counters: dict[str, int]) -> None:
        for name, value in counters.items():
            self.file(f"{device_dir}/ports/{port}/hw_counters/{name}", f"{value}\n")

    def statistics(self, netdev: str, counters: dict[str, int]) -> None:
        """`ethtool -S IF` as ethtool prints it (a header, then indented `name: value` lines)."""
        self.command(["ethtool", "-S", netdev], "NIC statistics:\n" + "".join(
            f"     {name}: {value}\n" for name, value in counters.items()))

    def netdev_statistics(self, netdev: str, counters: dict[str, int]) -> None:
        """/sys/class/net/IF/statistics/NAME files (the netdev made by `netdev` first)."""
        link = self.links[f"/sys/class/net/{netdev}"]
        directory = posixpath.normpath(posixpath.join("/sys/class/net", link))
        for name, value in counters.items():
            self.file(f"{directory}/statistics/{name}", f"{value}\n")

    def rdma_links(self, links: list[dict[str, Any]]) -> None:
        """`rdma -j link show` as iproute2's rdma/link.c prints it (one JSON line)."""
        self.command(["rdma", "-j", "link", "show"],
                     json.dumps(links, separators=(",", ":"), allow_nan=False) + "\n")

    def devinfo(self, device: str, vendor_id: int, part_id: int, fw_ver: str,
                ports: list[tuple[int, str, int, int, str]], guid: str = "0000:0000:0000:0000",
                transport: str = "InfiniBand (0)") -> None:
        """An `ibv_devinfo` block: ports as (number, state, max_mtu, active_mtu, link_layer);
        `transport` as ibv_devinfo names it ("InfiniBand (0)" for IB and RoCE, "iWARP (1)")."""
        codes = {256: 1, 512: 2, 1024: 3, 2048: 4, 4096: 5}
        states = {"ACTIVE": 4, "DOWN": 1, "INIT": 2, "ARMED": 3}
        text = (f"hca_id:\t{device}\n\ttransport:\t\t\t{transport}\n\tfw_ver:\t\t\t\t{fw_ver}\n"
                f"\tnode_guid:\t\t\t{guid}\n\tsys_image_guid:\t\t\t{guid}\n"
                f"\tvendor_id:\t\t\t0x{vendor_id:04x}\n\tvendor_part_id:\t\t\t{part_id}\n"
                f"\thw_ver:\t\t\t\t0x2\n\tphys_port_cnt:\t\t\t{len(ports)}\n")
        for number, state, max_mtu, active, layer in ports:
            text += (f"\t\tport:\t{number}\n\t\t\tstate:\t\t\tPORT_{state} ({states[state]})\n"
                     f"\t\t\tmax_mtu:\t\t{max_mtu} ({codes[max_mtu]})\n"
                     f"\t\t\tactive_mtu:\t\t{active} ({codes[active]})\n"
                     f"\t\t\tsm_lid:\t\t\t0\n\t\t\tport_lid:\t\t0\n\t\t\tport_lmc:\t\t0x00\n"
                     f"\t\t\tlink_layer:\t\t{layer}\n\n")
        self.devinfo_blocks.append(text)

    def finish(self) -> None:
        """Render the commands that summarise several helpers (ip addr, devlink, ibv_devinfo)."""
        if self.ip_links:
            lo = {"ifindex": 1, "ifname": "lo", "flags": ["LOOPBACK", "UP", "LOWER_UP"],
                  "mtu": 65536, "qdisc": "noqueue", "operstate": "UNKNOWN", "group": "default",
                  "txqlen": 1000, "link_type": "loopback", "address": "00:00:00:00:00:00",
                  "broadcast": "00:00:00:00:00:00",
                  "addr_info": [{"family": "inet", "local": "127.0.0.1", "prefixlen": 8,
                                 "scope": "host", "label": "lo"}]}
            self.command(list(IP_ADDR.command()), json.dumps([lo, *self.ip_links], allow_nan=False) + "\n")
        if self.devlink_params:
            self.command(list(DEVLINK_PARAMS),
                         json.dumps({"param": self.devlink_params}, allow_nan=False) + "\n")
        if self.devinfo_blocks:
            self.command(list(IBV_DEVINFO.command()), "".join(self.devinfo_blocks))
        elif IBV_DEVINFO.command() not in self.commands:
            self.command(list(IBV_DEVINFO.command()), "", rc=255, stderr="Failed to get IB devices list: "
                         "Function not implemented\n")

    # -- output --------------------------------------------------------------
    def write_root(self, root: Path) -> None:
        for path, text in self.files.items():
            target = root / path.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
        for path, link_target in self.links.items():
            target = root / path.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.is_symlink():
                target.unlink()
            os.symlink(link_target, target)

    def _answer(self, argv: list[str]) -> dict[str, Any]:
        known = self.commands.get(tuple(argv))
        if known is not None:
            return known
        if tuple(argv) == LLAMA_PROGRAMS.argv:  # sh is on every node: no llama.cpp prints nothing
            return {"argv": argv, "rc": 0, "stdout": "", "stderr": ""}
        if tuple(argv) == RPC_CACHE.argv:  # no RPC server ran with -c: no cache folder
            return {"argv": argv, "rc": 0, "stdout": rpc_cache_survey(None), "stderr": ""}
        return {"argv": argv, "rc": 127, "stdout": "", "stderr": f"{argv[0]}: command not found"}

    def capture(self, out: Path, as_tar: bool = False) -> Path:
        """Write this node as a snapshot (directory, or .tar.gz) through the real collector."""
        # Fixed time and a label: built from real formats, not read off a machine.
        meta = {"captured_at": CAPTURED_AT, "synthesized": True}
        self.finish()
        with tempfile.TemporaryDirectory(prefix="strixwizard-fake-") as root:
            self.write_root(Path(root))
            if as_tar:
                with open(out, "wb") as stream:
                    tar = TarSink(stream, mtime=DEMO_MTIME)
                    collect(dict(SPEC), tar, __version__, root, self._answer, meta)
            else:
                sink = DirSink(os.fspath(out))
                collect(dict(SPEC), sink, __version__, root, self._answer, meta)
        return out

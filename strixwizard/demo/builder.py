"""Synthesise node trees in the formats real machines show, and capture them.

The demo site and the test scenarios are written with this: a `FakeNode` holds
the files, symlinks and command outputs of a machine (their contents follow
real captures quoted in the project's research notes), `write_root` lays them
out as a filesystem tree, and `capture` runs the real collector over that tree
so the snapshot is exactly what `strixwizard capture` would write. Command
outputs are recorded answers, never run.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from strixwizard import __version__
from strixwizard.probe.collector import DirSink, TarSink, collect
from strixwizard.probe.spec import SPEC

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


@dataclass
class FakeNode:
    hostname: str
    files: dict[str, str] = field(default_factory=dict)
    links: dict[str, str] = field(default_factory=dict)
    commands: dict[tuple[str, ...], dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.file("/proc/sys/kernel/hostname", self.hostname + "\n")

    # -- primitives ----------------------------------------------------------
    def file(self, path: str, text: str) -> None:
        self.files[path] = text

    def link(self, path: str, target: str) -> None:
        self.links[path] = target

    def command(self, argv: list[str], stdout: str, rc: int = 0, stderr: str = "") -> None:
        self.commands[tuple(argv)] = {"argv": argv, "rc": rc, "stdout": stdout, "stderr": stderr}

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
        directory = f"/sys/devices/pci0000:00/{bridge}/{address}"
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
        self.link(f"/sys/bus/pci/devices/{address}", f"../../../devices/pci0000:00/{bridge}/{address}")
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
        return {"argv": argv, "rc": 127, "stdout": "", "stderr": f"{argv[0]}: command not found"}

    def capture(self, out: Path, as_tar: bool = False) -> Path:
        """Write this node as a snapshot (directory, or .tar.gz) through the real collector."""
        # Fixed time and a label: built from real formats, not read off a machine.
        meta = {"captured_at": "2026-11-20T09:30:00+00:00", "synthesized": True}
        with tempfile.TemporaryDirectory(prefix="strixwizard-fake-") as root:
            self.write_root(Path(root))
            if as_tar:
                with open(out, "wb") as stream:
                    collect(dict(SPEC), TarSink(stream), __version__, root, self._answer, meta)
            else:
                sink = DirSink(os.fspath(out))
                collect(dict(SPEC), sink, __version__, root, self._answer, meta)
        return out

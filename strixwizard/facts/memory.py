"""System memory and how much of it the iGPU may map (GTT / TTM limits)."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

from strixwizard.facts.outputs import file_output, read_output
from strixwizard.probe import Probe

GIB = 1024**3
PAGE_BYTES = 4096


@dataclass(frozen=True)
class MemoryInfo:
    """System RAM and what the iGPU may use of it (GTT, VRAM carve-out, TTM limit)."""

    total_bytes: int | None  # MemTotal
    gtt_bytes: int | None  # amdgpu mem_info_gtt_total of the iGPU card
    vram_bytes: int | None  # the BIOS carve-out (mem_info_vram_total)
    ttm_pages_limit: int | None  # /sys/module/ttm/parameters/pages_limit, 4 KiB pages
    available_bytes: int | None = None  # MemAvailable: what the system can still hand out

    @property
    def total_gib(self) -> float | None:
        return None if self.total_bytes is None else self.total_bytes / GIB

    @property
    def gtt_gib(self) -> float | None:
        return None if self.gtt_bytes is None else self.gtt_bytes / GIB


def parse_meminfo(text: str) -> dict[str, int]:
    """`/proc/meminfo` as bytes per key."""
    values: dict[str, int] = {}
    for line in text.splitlines():
        key, sep, rest = line.partition(":")
        words = rest.split()
        if not sep or not words or not words[0].isdigit():
            continue
        unit = 1024 if len(words) > 1 and words[1] == "kB" else 1
        values[key.strip()] = int(words[0]) * unit
    return values


def _int(text: str | None) -> int | None:
    try:
        return int(text.strip()) if text is not None else None
    except ValueError:
        return None


MEMINFO = file_output("meminfo", "/proc/meminfo", parse_meminfo)


def memory_info(probe: Probe, gpu_pci_address: str | None) -> MemoryInfo:
    meminfo = read_output(probe, MEMINFO) or {}
    gtt = vram = None
    for card in probe.listdir("/sys/class/drm"):
        if not card.startswith("card") or "-" in card:
            continue  # connectors such as card1-DP-1
        link = probe.readlink(f"/sys/class/drm/{card}/device")
        if gpu_pci_address and (not link or posixpath.basename(link) != gpu_pci_address):
            continue
        gtt = _int(probe.read(f"/sys/class/drm/{card}/device/mem_info_gtt_total"))
        vram = _int(probe.read(f"/sys/class/drm/{card}/device/mem_info_vram_total"))
        if gtt is not None:
            break
    return MemoryInfo(
        total_bytes=meminfo.get("MemTotal"),
        gtt_bytes=gtt,
        vram_bytes=vram,
        ttm_pages_limit=_int(probe.read("/sys/module/ttm/parameters/pages_limit")),
        available_bytes=meminfo.get("MemAvailable"),
    )

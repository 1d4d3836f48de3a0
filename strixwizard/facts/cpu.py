"""CPU identity from /proc/cpuinfo: is this a Strix Halo, and which SKU."""

from __future__ import annotations

import re
from dataclasses import dataclass

from strixwizard.facts.outputs import file_output, read_output
from strixwizard.probe import Probe

#: Strix Halo reports CPU family 26 (0x1A), model 112 (0x70). Matching on the
#: numbers is safer than on the marketing string, which varies by SKU and BIOS.
STRIX_HALO_FAMILY = 26
STRIX_HALO_MODEL = 112

_SKU = re.compile(r"ryzen\s+ai\s+max(?P<plus>\+)?\s*(?P<pro>pro\s+)?(?P<num>\d{3})", re.IGNORECASE)
_IGPU = re.compile(r"radeon\s+(?P<gpu>\d{4}S)\b", re.IGNORECASE)


@dataclass(frozen=True)
class CpuInfo:
    """The CPU as /proc/cpuinfo describes it."""

    vendor: str
    family: int | None
    model: int | None
    model_name: str
    threads: int
    cores: int | None

    @property
    def is_strix_halo(self) -> bool:
        return (
            self.vendor == "AuthenticAMD"
            and self.family == STRIX_HALO_FAMILY
            and self.model == STRIX_HALO_MODEL
        )

    @property
    def sku(self) -> str | None:
        """`Ryzen AI Max+ 395`, `Ryzen AI Max PRO 390`... from the model name, if it names one."""
        match = _SKU.search(self.model_name)
        if not match:
            return None
        plus = "+" if match["plus"] else ""
        pro = " PRO" if match["pro"] else ""
        return f"Ryzen AI Max{plus}{pro} {match['num']}"

    @property
    def igpu_name(self) -> str | None:
        """`Radeon 8060S`, as the model name advertises it."""
        match = _IGPU.search(self.model_name)
        return f"Radeon {match['gpu'].upper()}" if match else None


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def parse_cpuinfo(text: str) -> CpuInfo | None:
    """Parse x86 /proc/cpuinfo. Returns None when it holds no processor entry."""
    first: dict[str, str] = {}
    threads = 0
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key = key.strip()
        if key == "processor":
            threads += 1
        if threads == 1:
            first.setdefault(key, value.strip())
    if threads == 0:
        return None
    return CpuInfo(
        vendor=first.get("vendor_id", ""),
        family=_int(first.get("cpu family")),
        model=_int(first.get("model")),
        model_name=first.get("model name", ""),
        threads=threads,
        cores=_int(first.get("cpu cores")),
    )


CPUINFO = file_output("cpuinfo", "/proc/cpuinfo", parse_cpuinfo)


def cpu_info(probe: Probe) -> CpuInfo | None:
    return read_output(probe, CPUINFO)

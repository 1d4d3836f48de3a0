"""The integrated GPU: PCI identity and what ROCm's KFD topology reports."""

from __future__ import annotations

from dataclasses import dataclass

from strixwizard.facts.outputs import file_output, read_output
from strixwizard.facts.pci import PciDevice
from strixwizard.probe import Probe

AMD_VENDOR = 0x1002
#: Radeon 8050S/8060S (Strix Halo). One id covers both; rocminfo names them apart.
STRIX_HALO_IGPU_DEVICE = 0x1586
KFD_NODES = "/sys/class/kfd/kfd/topology/nodes"


def gfx_name(target_version: int) -> str:
    """KFD's `gfx_target_version` (major*10000 + minor*100 + stepping) as `gfx1151`."""
    major, rest = divmod(target_version, 10000)
    minor, stepping = divmod(rest, 100)
    return f"gfx{major}{minor:x}{stepping:x}"


@dataclass(frozen=True)
class KfdGpu:
    """A GPU node of the KFD topology (what ROCm sees)."""

    node: int
    gfx_target: str
    simd_count: int
    pci_location: int | None  # bus << 8 | device << 3 | function, as KFD stores it
    pci_domain: int | None


@dataclass(frozen=True)
class GpuInfo:
    """The iGPU on the PCI bus and the GPUs ROCm sees through KFD."""

    pci: PciDevice | None  # the Strix Halo iGPU on the PCI bus, if present
    kfd_gpus: tuple[KfdGpu, ...]  # GPU nodes ROCm can see; empty without amdgpu/KFD
    kfd_present: bool

    @property
    def gfx_target(self) -> str | None:
        return self.kfd_gpus[0].gfx_target if self.kfd_gpus else None


def parse_kfd_properties(text: str) -> dict[str, int]:
    props: dict[str, int] = {}
    for line in text.splitlines():
        key, _, value = line.strip().partition(" ")
        try:
            props[key] = int(value.strip())
        except ValueError:
            continue
    return props


KFD_PROPERTIES = file_output("kfd.properties", KFD_NODES + "/{node}/properties",
                             parse_kfd_properties)


def kfd_gpus(probe: Probe) -> tuple[KfdGpu, ...]:
    gpus = []
    for entry in probe.listdir(KFD_NODES):
        props = read_output(probe, KFD_PROPERTIES, node=entry) if entry.isdigit() else None
        if props is None:
            continue
        version = props.get("gfx_target_version", 0)
        if props.get("simd_count", 0) <= 0 or version <= 0:
            continue  # a CPU node
        gpus.append(
            KfdGpu(
                node=int(entry),
                gfx_target=gfx_name(version),
                simd_count=props["simd_count"],
                pci_location=props.get("location_id"),
                pci_domain=props.get("domain"),
            )
        )
    return tuple(sorted(gpus, key=lambda g: g.node))


def gpu_info(probe: Probe, pci: tuple[PciDevice, ...]) -> GpuInfo:
    igpu = next(
        (d for d in pci if d.vendor == AMD_VENDOR and d.device == STRIX_HALO_IGPU_DEVICE), None
    )
    return GpuInfo(pci=igpu, kfd_gpus=kfd_gpus(probe), kfd_present=bool(probe.listdir(KFD_NODES)))

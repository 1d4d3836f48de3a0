"""IOMMU mode, as the kernel command line asks for it.

`iommu=pt`: passthrough for host DMA (the common RDMA advice, kyuz0's guide);
`amd_iommu=off` / `iommu=off`: no IOMMU (kyuz0 reports 5-12% faster);
neither: the distribution default, translated DMA, which puts every NIC and
GPU DMA through IOMMU page tables.
"""

from __future__ import annotations

from dataclasses import dataclass

from strixwizard.facts.kernel import KernelInfo


@dataclass(frozen=True)
class IommuMode:
    """The IOMMU's mode, and the kernel parameter that decided it."""

    mode: str  # "passthrough", "off" or "translated"
    source: str  # the parameter that decided it, or "default"


def iommu_mode(kernel: KernelInfo) -> IommuMode | None:
    if not kernel.cmdline:
        return None
    amd = kernel.param("amd_iommu")
    generic = kernel.param("iommu")
    if amd == "off":
        return IommuMode("off", "amd_iommu=off")
    if generic == "off":
        return IommuMode("off", "iommu=off")
    if generic == "pt" or kernel.param("iommu.passthrough") == "1":
        return IommuMode("passthrough", "iommu=pt" if generic == "pt" else "iommu.passthrough=1")
    return IommuMode("translated", "default")

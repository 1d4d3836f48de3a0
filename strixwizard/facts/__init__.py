"""Facts: typed, parsed views of a node, computed lazily from its probe.

Each fact lives in its own module as a pure function `fact(probe) -> dataclass`.
`NodeFacts` gathers them per node and caches each on first use, so a check only
pays for the facts it reads, and a parser that fails affects only the checks
that need it. Checks see these dataclasses, never raw text.

To add a fact: write `facts/<topic>.py`, add a cached property here, extend
`probe/spec.py` so captures and SSH collect what it reads.
"""

from __future__ import annotations

from functools import cached_property

from strixwizard.facts.cpu import CpuInfo, cpu_info
from strixwizard.facts.gpu import GpuInfo, gpu_info
from strixwizard.facts.kernel import KernelInfo, kernel_info
from strixwizard.facts.memory import MemoryInfo, memory_info
from strixwizard.facts.pci import PciDevice, pci_devices
from strixwizard.probe import Probe


class NodeFacts:
    """Everything known about one node. Properties are computed once, on demand."""

    def __init__(self, name: str, probe: Probe) -> None:
        self.name = name
        self._probe = probe

    @cached_property
    def cpu(self) -> CpuInfo | None:
        return cpu_info(self._probe)

    @cached_property
    def pci(self) -> tuple[PciDevice, ...]:
        return pci_devices(self._probe)

    @cached_property
    def gpu(self) -> GpuInfo:
        return gpu_info(self._probe, self.pci)

    @cached_property
    def kernel(self) -> KernelInfo:
        return kernel_info(self._probe)

    @cached_property
    def memory(self) -> MemoryInfo:
        return memory_info(self._probe, self.gpu.pci.address if self.gpu.pci else None)


__all__ = ["CpuInfo", "GpuInfo", "KernelInfo", "MemoryInfo", "NodeFacts", "PciDevice"]

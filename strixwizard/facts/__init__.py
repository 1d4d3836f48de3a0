"""Facts: typed, parsed views of a node, computed lazily from its probe.

Each fact lives in its own module as a pure function `fact(probe) -> dataclass`.
`NodeFacts` gathers them per node and caches each on first use, so a check only
pays for the facts it reads, and a parser that fails affects only the checks
that need it. Checks see these dataclasses, never raw text.

To add a tool output or file: declare it once, in the fact module that reads
it, with `command_output(name, argv, parser, render=...)` or `file_output(name,
path, parser)` (facts/outputs.py), read it with `run_output`/`read_output`, and
list real texts with what they parse to in tests/data/fact_cases/<name>.json.
The capture spec, the fix read-back (`fixing/readers.py`) and dry runs follow
from the declaration. To add a fact: a function `fact(probe) -> dataclass` in
`facts/<topic>.py` and a cached property here.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from typing import Any

from strixwizard.facts import ethtool
from strixwizard.facts.bond import Bond, bonds, tcp_reordering
from strixwizard.facts.counters import FabricCounters, fabric_counters
from strixwizard.facts.cpu import CpuInfo, cpu_info
from strixwizard.facts.dcb import DcbInfo, dcb_info
from strixwizard.facts.devlink import devlink_params
from strixwizard.facts.ecn import Congestion, congestion
from strixwizard.facts.gpu import GpuInfo, gpu_info
from strixwizard.facts.iommu import IommuMode, iommu_mode
from strixwizard.facts.kernel import KernelInfo, kernel_info
from strixwizard.facts.limits import Memlock, memlock
from strixwizard.facts.llama_cpp import LlamaSurvey, llama_survey
from strixwizard.facts.memory import MemoryInfo, memory_info
from strixwizard.facts.netdev import Netdev, netdevs
from strixwizard.facts.nic import Nic, nics
from strixwizard.facts.outputs import Output, Reading, declared_so_far, read_output, run_output
from strixwizard.facts.packages import Packages, packages
from strixwizard.facts.pci import PciDevice, pci_devices
from strixwizard.facts.persistence import Persistence, persistence
from strixwizard.facts.qos import MLNX_QOS, TRAFFIC_CLASS, MlnxQos, TrafficClass
from strixwizard.facts.rdma import RdmaDevice, RdmaPort, devinfo_captured, rdma_devices
from strixwizard.facts.rdma_link import RDMA_LINK, RdmaLink
from strixwizard.facts.rocm import RocmInfo, rocm_info
from strixwizard.facts.rpc_cache import RpcCacheReading, rpc_cache
from strixwizard.facts.source import run, why_unknown
from strixwizard.facts.thunderbolt import Usb4Info, usb4_info
from strixwizard.facts.verbs_providers import VerbsView, verbs_view
from strixwizard.probe import Probe


class NodeFacts:
    """Everything known about one node. Properties are computed once, on demand."""

    def __init__(self, name: str, probe: Probe, llama_bin_dir: str | None = None) -> None:
        self.name = name
        self._probe = probe
        #: the folder the llama.cpp survey looks in first (`doctor --llama-bin-dir`)
        self.llama_bin_dir = llama_bin_dir
        self._dcb: dict[str, DcbInfo] = {}
        self._pause: dict[str, ethtool.Pause | None] = {}
        self._priv: dict[str, dict[str, bool] | None] = {}

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

    # -- platform tuning -----------------------------------------------------
    @cached_property
    def iommu(self) -> IommuMode | None:
        return iommu_mode(self.kernel)

    @cached_property
    def memlock(self) -> Memlock | None:
        return memlock(self._probe)

    @cached_property
    def llama(self) -> LlamaSurvey:
        """The node's llama.cpp programs: where, RDMA or not, which backend and build."""
        return llama_survey(self._probe, self.llama_bin_dir)

    @cached_property
    def rpc_cache(self) -> RpcCacheReading:
        """ggml-rpc-server's tensor cache folder (`-c`): its size, its file system's room."""
        return rpc_cache(self._probe)

    @cached_property
    def rocm(self) -> RocmInfo:
        return rocm_info(self._probe)

    @cached_property
    def packages(self) -> Packages:
        """Installed versions of rdma-core and the amdgpu firmware (facts/packages.py)."""
        return packages(self._probe)

    # -- network -------------------------------------------------------------
    @cached_property
    def netdevs(self) -> tuple[Netdev, ...]:
        return netdevs(self._probe)

    def netdev(self, name: str | None) -> Netdev | None:
        return next((n for n in self.netdevs if n.name == name), None)

    @cached_property
    def netdevs_by_pci(self) -> dict[str, tuple[str, ...]]:
        by_pci: dict[str, list[str]] = {}
        for dev in self.netdevs:
            if dev.pci_address:
                by_pci.setdefault(dev.pci_address, []).append(dev.name)
        return {k: tuple(v) for k, v in by_pci.items()}

    @cached_property
    def nics(self) -> tuple[Nic, ...]:
        return nics(self._probe, self.pci, self.netdevs_by_pci)

    def nic_of(self, netdev: Netdev | None) -> Nic | None:
        if netdev is None or netdev.pci_address is None:
            return None
        return next((n for n in self.nics if n.address == netdev.pci_address), None)

    @cached_property
    def rdma(self) -> tuple[RdmaDevice, ...]:
        return rdma_devices(self._probe, self.netdevs_by_pci)

    @cached_property
    def rdma_ports(self) -> tuple[RdmaPort, ...]:
        return tuple(port for dev in self.rdma for port in dev.ports)

    def rdma_device(self, name: str) -> RdmaDevice | None:
        return next((d for d in self.rdma if d.name == name), None)

    def ports_on(self, netdev: str) -> tuple[RdmaPort, ...]:
        """RDMA ports whose netdev is `netdev` (hardware first)."""
        ports = [p for p in self.rdma_ports if p.netdev == netdev]
        hw = {d.name for d in self.rdma if d.is_hardware}
        return tuple(sorted(ports, key=lambda p: p.device not in hw))

    @cached_property
    def active_mtu_captured(self) -> bool:
        return devinfo_captured(self._probe)

    @cached_property
    def devlink(self) -> dict[str, dict[str, object]] | None:
        return devlink_params(self._probe)

    def dcb(self, netdev: str) -> DcbInfo:
        if netdev not in self._dcb:
            self._dcb[netdev] = dcb_info(self._probe, netdev)
        return self._dcb[netdev]

    def congestion(self, netdev: str, rdma_device: str | None, port: int | None) -> Congestion:
        """ECN/DCQCN state of a RoCE port where the driver exposes it (see facts/ecn.py)."""
        return congestion(self._probe, netdev, rdma_device, port)

    def pause(self, netdev: str) -> ethtool.Pause | None:
        if netdev not in self._pause:
            self._pause[netdev] = ethtool.pause(self._probe, netdev)
        return self._pause[netdev]

    def priv_flags(self, netdev: str) -> dict[str, bool] | None:
        if netdev not in self._priv:
            self._priv[netdev] = ethtool.priv_flags(self._probe, netdev)
        return self._priv[netdev]

    def counters(self, netdev: str, rdma_device: str | None, port: int | None) -> FabricCounters:
        """The health counters of a fabric interface and its RDMA port (facts/counters.py)."""
        ports = [(rdma_device, port)] if rdma_device is not None and port is not None else []
        return fabric_counters(self._probe, [netdev], ports)

    def mlnx_qos(self, netdev: str) -> Reading[MlnxQos]:
        """`mlnx_qos -i IF` (ConnectX, when MLNX_OFED's tool is installed)."""
        return run_output(self._probe, MLNX_QOS, netdev=netdev)

    def traffic_class(self, rdma_device: str) -> TrafficClass | None:
        """The RoCE global traffic class of /sys/class/infiniband/DEV/tc/1 (None: no such file)."""
        return read_output(self._probe, TRAFFIC_CLASS, rdmadev=rdma_device, tc="1")

    @cached_property
    def rdma_links(self) -> Reading[tuple[RdmaLink, ...]]:
        """`rdma -j link show`: the kernel's RDMA links, a cross-check of sysfs."""
        return run_output(self._probe, RDMA_LINK)

    def why_unknown(self, argv: Sequence[str]) -> str:
        """Why a command gives no answer on this node (not captured, not installed, failed)."""
        return why_unknown(argv, run(self._probe, argv))

    # -- persistence (how changes survive a reboot; read by fixes) ------------
    @cached_property
    def persistence(self) -> Persistence:
        return persistence(self._probe)

    # -- USB4 ----------------------------------------------------------------
    @cached_property
    def usb4(self) -> Usb4Info:
        return usb4_info(self._probe, self.pci)

    @cached_property
    def verbs(self) -> VerbsView:
        """What libibverbs made of the devices: max_qp of each it opened, and its warnings."""
        return verbs_view(self._probe)

    def pci_device(self, address: str | None) -> PciDevice | None:
        return next((d for d in self.pci if d.address == address), None)

    # -- bonds and the TCP settings they need ------------------------------------
    @cached_property
    def bonds(self) -> tuple[Bond, ...]:
        return bonds(self._probe, self.netdevs)

    @cached_property
    def tcp_reordering(self) -> int | None:
        """net.ipv4.tcp_reordering of the node's network namespace (None: not captured)."""
        return tcp_reordering(self._probe)


def declared() -> tuple[Output[Any], ...]:
    """Every declared output, in declaration order: every fact module is imported above."""
    return declared_so_far()


def output(name: str) -> Output[Any]:
    """The declared output `name` (KeyError when no fact module declares it)."""
    return {o.name: o for o in declared()}[name]


__all__ = [
    "Bond", "CpuInfo", "DcbInfo", "GpuInfo", "IommuMode", "KernelInfo", "Memlock", "MemoryInfo",
    "Netdev", "Nic", "NodeFacts", "PciDevice", "RdmaDevice", "RdmaPort", "RocmInfo", "Usb4Info",
    "declared", "output",
]

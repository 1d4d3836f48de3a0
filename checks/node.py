"""Node identity: is this a Strix Halo, can ROCm use its iGPU, can the iGPU hold a big model."""

from __future__ import annotations

from collections.abc import Iterator

from checks.scope import CPU_CAPTURED, PCI_CAPTURED
from strixwizard.checking.declare import failed, node_check, passed, skipped, verdict, warned
from strixwizard.facts import NodeFacts
from strixwizard.facts.cpu import STRIX_HALO_FAMILY, STRIX_HALO_MODEL, CpuInfo
from strixwizard.model import Finding, Status
from strixwizard.site import LLAMA_RPC, Site


@node_check("node.strix_halo", per=CPU_CAPTURED)
def cpu_is_strix_halo(node: NodeFacts, site: Site, cpu: CpuInfo) -> Iterator[Finding]:
    """Passes when /proc/cpuinfo shows AMD family 26 model 112; names the SKU from the model name."""
    described = f"{cpu.model_name or 'unknown CPU'} ({cpu.vendor} family {cpu.family} model {cpu.model})"
    observed = (cpu.sku or cpu.model_name) if cpu.is_strix_halo else described
    if not cpu.is_strix_halo and site.stack == LLAMA_RPC:
        # llama.cpp RPC mixes kinds of nodes (a GB10, a Mac, a CUDA box beside a Strix Halo)
        yield passed(node.name, observed, "a node with a llama.cpp build (any kind, for llama-rpc)",
                     "Not a Strix Halo: as a llama.cpp RPC node it is judged on what it has (its "
                     "llama.cpp build, NICs and links); the gfx1151 checks skip on it.")
        return
    yield verdict(cpu.is_strix_halo, node.name, observed,
                  f"AuthenticAMD family {STRIX_HALO_FAMILY} model {STRIX_HALO_MODEL}",
                  "Not a Strix Halo node: gfx1151 checks below do not apply to it.", Status.FAIL)


@node_check("node.igpu", requires=(PCI_CAPTURED,))
def igpu_visible_to_rocm(node: NodeFacts, site: Site) -> Iterator[Finding]:
    """Checks the 1002:1586 PCI device, its amdgpu driver and the KFD topology's gfx target."""
    gpu = node.gpu
    cpu = node.cpu
    expected = "1002:1586 bound to amdgpu, KFD gfx1151"
    if gpu.pci is None:
        if cpu is not None and not cpu.is_strix_halo:
            yield skipped(node.name, "no Strix Halo iGPU on this node (not a Strix Halo CPU)")
        else:
            yield failed(
                node.name,
                observed="no 1002:1586 device on the PCI bus",
                expected=expected,
                detail="The iGPU is missing from PCI: check the BIOS graphics settings.",
            )
        return
    entity = f"{node.name}/{gpu.pci.address}"
    if gpu.pci.driver != "amdgpu":
        yield failed(
            entity,
            observed=f"driver {gpu.pci.driver or 'none'}",
            expected=expected,
            detail="amdgpu is not bound to the iGPU; load it (`modprobe amdgpu`) and check dmesg.",
        )
    elif not gpu.kfd_gpus:
        yield failed(
            entity,
            observed="amdgpu bound, but no GPU node in the KFD topology",
            expected=expected,
            detail="ROCm cannot see the GPU: /sys/class/kfd has no GPU node (kernel built without "
            "HSA_AMD, or amdgpu failed to init KFD; see dmesg).",
        )
    elif gpu.gfx_target != "gfx1151":
        yield warned(
            entity,
            observed=f"KFD reports {gpu.gfx_target}",
            expected=expected,
            detail="An unexpected gfx target; ROCm libraries must carry code for it.",
        )
    else:
        yield passed(entity, observed=f"amdgpu, KFD {gpu.gfx_target}", expected=expected)


@node_check("node.gtt")
def gtt_sized_for_models(node: NodeFacts, site: Site) -> Iterator[Finding]:
    """Compares amdgpu's GTT pool with MemTotal against the site's `gtt_min_fraction`."""
    memory = node.memory
    if memory.total_bytes is None:
        yield skipped(node.name, "memory information (/proc/meminfo) was not captured")
        return
    if memory.gtt_bytes is None:
        yield skipped(node.name, "no amdgpu GTT size reported (no iGPU driver, or not captured)")
        return
    fraction = memory.gtt_bytes / memory.total_bytes
    wanted = site.thresholds.gtt_min_fraction
    yield verdict(fraction >= wanted, node.name,
                  f"GTT {memory.gtt_gib:.1f} GiB = {fraction:.0%} of {memory.total_gib:.1f} GiB RAM",
                  f">= {wanted:.0%} of RAM",
                  "Models larger than the GTT pool fail to load; raise ttm.pages_limit (and "
                  "amdgpu.gttsize on older kernels) on the kernel command line.")

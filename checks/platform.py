"""Node platform for RDMA inference: ROCm and RCCL for gfx1151, TTM limit, IOMMU mode, memlock."""

from __future__ import annotations

from collections.abc import Iterator

from checks.scope import IOMMU_CAPTURED, MEMLOCK_CAPTURED, STRIX_HALO
from strixwizard.checking.declare import node_check, skipped, verdict
from strixwizard.facts import NodeFacts
from strixwizard.facts.iommu import IommuMode
from strixwizard.facts.limits import Memlock
from strixwizard.facts.memory import GIB, PAGE_BYTES
from strixwizard.model import Finding, Status
from strixwizard.site import RAY, Site

#: ROCm releases before 7.2 crash in hipMalloc on gfx1151 (research notes §4.8).
MIN_ROCM = (7, 2)


@node_check("node.rocm", requires=(STRIX_HALO,))
def rocm_version(node: NodeFacts, site: Site) -> Iterator[Finding]:
    """Reads /opt/rocm/.info/version. Without it the host ROCm is unknown (containers bring their own)."""
    rocm = node.rocm
    expected = f">= {'.'.join(map(str, MIN_ROCM))}"
    if rocm.version is None:
        yield skipped(
            node.name,
            "no ROCm version at /opt/rocm/.info/version (no AMD ROCm on the host, or a distribution "
            "build); if vLLM runs in a container, its ROCm is what counts",
        )
    else:
        yield verdict(rocm.version[:2] >= MIN_ROCM, node.name, f"ROCm {rocm.version_text}",
                      expected, "ROCm older than 7.2 crashes in hipMalloc on gfx1151.", Status.FAIL)


@node_check("node.rccl_gfx1151", requires=(STRIX_HALO,), stacks=(RAY,))
def rccl_has_gfx1151(node: NodeFacts, site: Site) -> Iterator[Finding]:
    """Looks for `amdgcn-amd-amdhsa--gfx1151` bundle ids in librccl.so.1; compressed bundles are unknown."""
    rccl = node.rocm.rccl
    has_code = rccl.has_gfx1151
    if has_code is None:
        yield skipped(node.name, f"cannot tell whether RCCL has gfx1151 code: {rccl.note}")
        return
    yield verdict(has_code, node.name, f"{rccl.library}: {', '.join(rccl.targets)}",
                  "gfx1151 among the targets",
                  "Install RCCL >= 2.28.3 (ROCm/rocm-systems PR #3415) or a gfx1151 build such as the "
                  "gfx1151-rccl branch of https://github.com/kyuz0/rocm-systems; otherwise "
                  "multi-node inference fails at ncclCommInitRank.",
                  Status.FAIL)


@node_check("node.ttm_limit")
def ttm_limit(node: NodeFacts, site: Site) -> Iterator[Finding]:
    """Compares ttm.pages_limit * 4 KiB with amdgpu's GTT size (or the site's GTT fraction of RAM)."""
    memory = node.memory
    if memory.ttm_pages_limit is None or memory.total_bytes is None:
        yield skipped(node.name, "ttm.pages_limit or MemTotal not captured (no ttm module loaded?)")
        return
    limit = memory.ttm_pages_limit * PAGE_BYTES
    if memory.gtt_bytes is not None:
        wanted, expected = memory.gtt_bytes, f">= GTT size {memory.gtt_bytes / GIB:.1f} GiB"
    else:
        wanted = int(site.thresholds.gtt_min_fraction * memory.total_bytes)
        expected = f">= {site.thresholds.gtt_min_fraction:.0%} of RAM"
    yield verdict(limit >= wanted, node.name,
                  f"ttm.pages_limit {memory.ttm_pages_limit} = {limit / GIB:.1f} GiB", expected,
                  "TTM caps what the iGPU can map below the GTT size: raise ttm.pages_limit on the "
                  "kernel command line (32505856 = 124 GiB).")


@node_check("node.iommu", per=IOMMU_CAPTURED)
def iommu(node: NodeFacts, site: Site, mode: IommuMode) -> Iterator[Finding]:
    """Reads iommu=/amd_iommu= from /proc/cmdline; no parameter means the default translated mode."""
    yield verdict(mode.mode in ("passthrough", "off"), node.name, f"{mode.mode} ({mode.source})",
                  "iommu=pt or amd_iommu=off", "Add iommu=pt to the kernel command line. amd_iommu=off "
                  "was measured 5-12% faster still by the Strix Halo toolboxes' users "
                  "(https://github.com/kyuz0/amd-strix-halo-toolboxes/issues/66).")


@node_check("node.memlock", per=MEMLOCK_CAPTURED)
def memlock_unlimited(node: NodeFacts, site: Site, limit: Memlock) -> Iterator[Finding]:
    """Reads "Max locked memory" from /proc/self/limits of the collecting session (see facts/limits.py)."""
    observed = ("unlimited" if limit.unlimited else
                f"{limit.soft // 1024} KiB (soft)" if limit.soft is not None else "?")
    yield verdict(limit.unlimited, node.name, observed, "unlimited",
                  "As seen by the probing session. Set `* soft/hard memlock unlimited` in "
                  "/etc/security/limits.d, LimitMEMLOCK=infinity for services, --ulimit memlock=-1 "
                  "for containers (root with CAP_IPC_LOCK is exempt).")

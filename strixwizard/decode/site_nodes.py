"""`advise --site/--demo/--snapshot`: what the advice takes from a site's nodes. Pure.

Each node's llama.cpp GPU backend comes from the libraries its programs carry (the facts'
llama.cpp survey: libggml-hip/amdhip64 is ROCm, libggml-vulkan/libvulkan is Vulkan), and its
memory for weights from what the iGPU may map (amdgpu's GTT pool) bounded by what the system
can still hand out (MemAvailable): on a unified-memory box the weights live in system RAM.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from strixwizard.decode.backends import ROCM, VULKAN
from strixwizard.facts.llama_cpp import LlamaSurvey
from strixwizard.facts.memory import MemoryInfo

GIB = 2**30
#: The facts' backend names (facts/llama_cpp.BACKENDS) as `advise --backend` takes them.
BACKEND_OF = {"ROCm (HIP)": ROCM, "Vulkan": VULKAN}


@dataclass(frozen=True)
class SiteNode:
    """One node as the advice sees it: its backend and memory for weights, each with what it
    was read from or why it is not known (None)."""

    name: str
    backend: str | None
    backend_note: str
    memory_bytes: float | None
    memory_note: str


def node_backend(survey: LlamaSurvey) -> tuple[str | None, str]:
    """The node's llama.cpp GPU backend (vulkan, rocm) and what says so, or None and why."""
    build = survey.build
    if build is None:
        return None, survey.why_unknown or "llama.cpp was not surveyed"
    if not build.programs:
        return None, "no llama.cpp program found"
    found = {BACKEND_OF[b] for b in build.backends if b in BACKEND_OF}
    named = ", ".join(build.backends) or "no GPU backend library"
    if len(found) != 1:
        return None, (f"llama.cpp carries {named}: not one backend the advice knows (vulkan or rocm)"
                      if not found else f"llama.cpp carries both {named}: give --backend")
    (backend,) = found
    built = f", build {build.build}" if build.build is not None else ""
    return backend, f"{named} in its llama.cpp programs{built}"


def node_memory(memory: MemoryInfo) -> tuple[float | None, str]:
    """The bytes of weights the node can hold: the GTT pool, bounded by MemAvailable."""
    gtt, available = memory.gtt_bytes, memory.available_bytes
    if gtt is None and available is None:
        return None, "neither the iGPU's GTT pool nor MemAvailable was read"
    if gtt is None:
        assert available is not None
        return float(available), f"MemAvailable {available / GIB:.1f} GiB (the GTT pool was not read)"
    if available is None or available >= gtt:
        return float(gtt), f"the iGPU's GTT pool, {gtt / GIB:.1f} GiB (amdgpu mem_info_gtt_total)"
    return float(available), (f"MemAvailable {available / GIB:.1f} GiB, less than the iGPU's GTT pool "
                              f"of {gtt / GIB:.1f} GiB")


def site_node(name: str, survey: LlamaSurvey, memory: MemoryInfo) -> SiteNode:
    backend, backend_note = node_backend(survey)
    memory_bytes, memory_note = node_memory(memory)
    return SiteNode(name, backend, backend_note, memory_bytes, memory_note)


def site_backend(nodes: Sequence[SiteNode]) -> tuple[str | None, str]:
    """The backend every node runs, or None and why (unknown on a node, or nodes differ)."""
    unknown = [n for n in nodes if n.backend is None]
    if unknown:
        return None, "; ".join(f"{n.name}: {n.backend_note}" for n in unknown)
    kinds = sorted({n.backend for n in nodes if n.backend})
    if len(kinds) > 1:
        return None, "the nodes run different backends: " + ", ".join(f"{n.name} {n.backend}" for n in nodes)
    return kinds[0], ", ".join(f"{n.name}: {n.backend_note}" for n in nodes)


def to_json(node: SiteNode) -> dict[str, object]:
    return {"name": node.name, "backend": node.backend, "backend_source": node.backend_note,
            "memory_gib": None if node.memory_bytes is None else round(node.memory_bytes / GIB, 2),
            "memory_source": node.memory_note}

"""llama.cpp RPC, the stack most Strix Halo clusters run: is the RPC server built with the RDMA
transport, which GPU backend does the build carry, and is it the same build on every node.

A node without llama.cpp skips these (the site may run vLLM or ds4 only); a node that is not a
Strix Halo (a GB10, a Mac, a CUDA box) is judged on what it has, never failed for being other.
"""

from __future__ import annotations

from collections.abc import Iterator

from strixwizard.checking.declare import failed, node_check, passed, site_check, skipped, warned
from strixwizard.facts import NodeFacts
from strixwizard.facts.llama_cpp import SEARCHED, LlamaBuild
from strixwizard.model import Finding
from strixwizard.site import LLAMA_RPC, Site
from strixwizard.topology import Topology

#: Mismatched RDMA builds on the two ends abort split model loads "with no useful message".
MISMATCH_SOURCE = "https://github.com/ThinkOffApp/mac-amd-cuda-llm-cluster"
#: ROCm 7.2 with llama.cpp's ROCm backend hangs at load_tensors on gfx1151; Vulkan works.
ROCM_HANG_SOURCE = "https://github.com/ROCm/ROCm/issues/6027"
#: GGML_RPC_RDMA defaults to ON when libibverbs is found at configure time
#: (ggml/src/ggml-rpc/CMakeLists.txt): a build machine without libibverbs-dev builds TCP only.
BUILD_FLAGS = "libibverbs-dev installed and -DGGML_RPC=ON -DGGML_RPC_RDMA=ON"


def _build(node: NodeFacts) -> tuple[LlamaBuild | None, str]:
    """The node's llama.cpp, or why there is none to judge."""
    survey = node.llama
    if survey.build is None:
        return None, f"llama.cpp not known: {survey.why_unknown}"
    if not survey.build.programs:
        first = f"in {node.llama_bin_dir}, " if node.llama_bin_dir else ""
        return None, ("no llama.cpp program (ggml-rpc-server, rpc-server, llama-server) "
                      f"{first}on root's PATH or in {', '.join(SEARCHED)}")
    return survey.build, ""


@node_check("llama.rpc_rdma", stacks=(LLAMA_RPC,))
def rpc_rdma(node: NodeFacts, site: Site) -> Iterator[Finding]:
    """The RPC server carries llama.cpp's RDMA transport, or it talks TCP only."""
    build, why = _build(node)
    if build is None:
        yield skipped(node.name, why)
        return
    server = build.rpc_server
    if server is None:
        yield skipped(node.name, "no ggml-rpc-server here (llama-server only: the head of a "
                      "split, which needs the same transport as its workers)")
        return
    if server.rdma:
        yield passed(node.name, f"{server.path}: RDMA transport built in", "GGML_RPC_RDMA=ON")
        return
    yield warned(node.name, f"{server.path}: TCP only", "GGML_RPC_RDMA=ON",
                 f"This build talks TCP to its peers even over an RDMA NIC. Build llama.cpp with "
                 f"{BUILD_FLAGS} on every node (docs: the llama.cpp guide).", fixable=False)


@node_check("llama.gpu_backend", stacks=(LLAMA_RPC,))
def gpu_backend(node: NodeFacts, site: Site) -> Iterator[Finding]:
    """Which GPU backend the build carries; CPU only on a node with a GPU leaves it unused."""
    build, why = _build(node)
    if build is None:
        yield skipped(node.name, why)
        return
    backends = build.backends
    observed = ", ".join(backends) or "CPU only"
    has_gpu = node.gpu.pci is not None or bool(node.gpu.kfd_gpus)
    if not backends and has_gpu:
        yield warned(node.name, observed, "a GPU backend (Vulkan or ROCm on a Radeon 8060S)",
                     "llama.cpp was built without a GPU backend: the iGPU is unused. Build with "
                     "-DGGML_VULKAN=ON or -DGGML_HIP=ON -DGPU_TARGETS=gfx1151.", fixable=False)
        return
    rocm = node.rocm.version
    if "ROCm (HIP)" in backends and rocm is not None and rocm[:2] == (7, 2):
        yield warned(node.name, f"{observed}, ROCm {node.rocm.version_text}",
                     "Vulkan, or ROCm other than 7.2",
                     "llama.cpp's ROCm backend on ROCm 7.2 was reported to hang at load_tensors on "
                     f"gfx1151 while Vulkan worked ({ROCM_HANG_SOURCE}); if a load hangs, try a "
                     "Vulkan build.", fixable=False)
        return
    yield passed(node.name, observed)


def _cure(builds: dict[str, LlamaBuild], rdma: dict[str, bool]) -> str:
    """The exact steps that give the TCP-only nodes the RDMA nodes' build."""
    tcp_only = [name for name, has in rdma.items() if not has]
    source = next(name for name, has in rdma.items() if has)
    programs = ", ".join(p.path for p in builds[source].programs)
    return (f"Cure: on {', '.join(tcp_only)}, build the same commit with {BUILD_FLAGS} "
            "(docs/llama-cpp.md, step 1: `strixwizard deploy --stack llama-rpc --build SOURCE "
            "--apply` builds one commit and installs it on every node), or copy " + source
            + f"'s programs ({programs}, with "
            "any libggml*.so beside them) to the same paths there; then run `strixwizard doctor "
            "--stack llama-rpc` again. (Building every node without RDMA also agrees, on TCP.)")


@site_check("llama.same_build", stacks=(LLAMA_RPC,))
def same_build(topology: Topology, site: Site) -> Iterator[Finding]:
    """Every node with llama.cpp runs one build, and all of them or none with RDMA."""
    builds = {}
    for node in topology.nodes:
        build, _ = _build(node)
        if build is not None:
            builds[node.name] = build
    if len(builds) < 2:
        yield skipped(site.name, f"{len(builds)} node(s) with llama.cpp: nothing to compare")
        return
    rdma = {name: any(p.rdma for p in b.programs) for name, b in builds.items()}
    ids = {name: b.build_id or "unknown build" for name, b in builds.items()}
    observed = "; ".join(f"{name}: {ids[name]}, {'RDMA' if rdma[name] else 'TCP only'}"
                         for name in builds)
    if len(set(rdma.values())) > 1:
        yield failed(site.name, observed, "the RDMA transport on every node or on none",
                     "An RDMA build on one end and a TCP-only build on the other abort split model "
                     f"loads with no useful message ({MISMATCH_SOURCE}). {_cure(builds, rdma)}",
                     fixable=False)
        return
    if len(set(ids.values())) > 1:
        yield warned(site.name, observed, "one build on every node",
                     "llama.cpp RPC needs the same RPC protocol on both ends; the same commit is the "
                     "safe choice (nodes of other kinds may need their own build of that commit).",
                     fixable=False)
        return
    yield passed(site.name, observed, "one build on every node")


#: The field: the `-c` cache "wrote 441 GB in one day of sweeps" (shared research, pain 5).
CACHE_GROWTH_SOURCE = "https://github.com/ThinkOffApp/mac-amd-cuda-llm-cluster"
#: A cache above this many times the node's memory holds tensors of models no longer loaded: a
#: worker holds at most about its memory's worth of weights at a time (one model resident and
#: one being swapped in is twice that), and the server deletes no cached file.
CACHE_MEMORY_MULTIPLE = 2
GIB = 2**30


def _cache_cure(path: str) -> str:
    return (f"Cure: the files in {path} are only a cache (each a weight tensor, named by its hash; "
            "ggml-rpc-server reads one back when a client sends the same tensor again), so they "
            f"can all go: stop ggml-rpc-server, then `rm -rf {path}`; the next load sends the "
            "tensors again. Or deploy with --no-rpc-cache (no cache at all), or start the server "
            "with LLAMA_CACHE pointing at a larger file system (ggml-rpc-server keeps its cache in "
            "$LLAMA_CACHE/rpc, tools/rpc/rpc-server.cpp).")


@node_check("llama.rpc_cache", stacks=(LLAMA_RPC,))
def rpc_cache(node: NodeFacts, site: Site) -> Iterator[Finding]:
    """The RPC server's tensor cache (`-c`) leaves room on its file system and holds no more than
    twice this node's memory."""
    reading = node.rpc_cache
    if reading.cache is None:
        yield skipped(node.name, reading.why_unknown)
        return
    cache = reading.cache
    if not cache.exists or cache.size_bytes is None:
        yield skipped(node.name, f"no RPC tensor cache: {cache.path} does not exist (ggml-rpc-server "
                      "has not run with -c here)")
        return
    size, free = cache.size_bytes, cache.fs_free_bytes
    observed = (f"{cache.path}: {size / GIB:.1f} GiB cached, {free / GIB:.0f} GiB free on "
                f"{cache.mount}")
    memory = node.memory.total_bytes
    if memory is None:
        yield skipped(node.name, f"{observed}; this node's memory (MemTotal) is not known, and the "
                      "limits are relative to it")
        return
    bound = CACHE_MEMORY_MULTIPLE * memory
    expected = (f"<= {bound / GIB:.0f} GiB cached ({CACHE_MEMORY_MULTIPLE} x this node's memory) and "
                f">= {memory / GIB:.0f} GiB free (one model's share)")
    problems = []
    if free < memory:
        problems.append(
            f"{free / GIB:.0f} GiB free is less than this node's memory ({memory / GIB:.0f} GiB), the "
            "most one model's share can add to the cache. The server does not check its cache "
            "writes and loads a cached file back without checking its size (ggml-rpc.cpp "
            "rpc_server::set_tensor, set_tensor_hash): a file cut short by a full disk is loaded "
            "as weights.")
    if size > bound:
        problems.append(
            f"{size / GIB:.0f} GiB cached is more than {CACHE_MEMORY_MULTIPLE} x this node's memory: "
            "tensors of models no longer loaded, since the server never deletes a cached file "
            f"(in the field it wrote 441 GB in one day of sweeps, {CACHE_GROWTH_SOURCE}).")
    if problems:
        yield warned(node.name, observed, expected, " ".join([*problems, _cache_cure(cache.path)]),
                     fixable=False)
        return
    yield passed(node.name, observed, expected)

"""The model-load plan of `deploy --stack llama-rpc`: `--no-mmap` above about 100 GiB of
weights, and how long the load may take. Pure but for `model_bytes` (a stat of the file).

With mmap on, llama-server / llama-cli hang at 0 % GPU or fault while loading a large model
over RPC: the kernel maps the file and the HIP runtime's GPU buffers collide on the unified
memory (https://github.com/ggml-org/llama.cpp/issues/19745; wkljohn hit it above ~100 GiB,
https://github.com/wkljohn/llama.cpp-strix-halo-RCCL-RDMA). `--no-mmap` reads straight into
the buffers.

The load reads the file once on the head and sends each worker its share over the fabric:
about bytes / disk + the workers' share / link. Published loads are slower than that
(46 min for GLM-5.2's 287 GiB over experimental RDMA, fread and tensor upload,
https://github.com/hellas-ai/nix-strix-halo/pull/111), so it is a floor, said as one.
"""

from __future__ import annotations

from pathlib import Path

from strixwizard.facts.rpc_cache import RpcCacheReading

NO_MMAP_BYTES = 100 * 2**30
DISK_GBPS = 3.0  # GB/s: an NVMe read (a stand-in; no Strix Halo figure is published)
LINK_GBPS = (10.0, 50.0)  # Gb/s: USB4 networking, and a 50 GbE RDMA NIC in an x4 slot
ISSUE = "https://github.com/ggml-org/llama.cpp/issues/19745"


def model_bytes(path: str | None) -> int | None:
    """The GGUF's size when the file is on this machine (the head, as usual), else None."""
    if not path:
        return None
    try:
        file = Path(path)
        return file.stat().st_size if file.is_file() else None
    except OSError:
        return None


def needs_no_mmap(size: int | None) -> bool:
    return size is not None and size > NO_MMAP_BYTES


def load_notes(size: int | None, workers: int, no_mmap_given: bool) -> list[str]:
    """What the plan says about loading: --no-mmap planned (and why), and a load-time floor.
    Nothing for files under 1 GiB or of unknown size."""
    if size is None or size < 2**30:
        return []
    gib = size / 2**30
    notes = []
    if needs_no_mmap(size):
        notes.append(f"--no-mmap {'given' if no_mmap_given else 'planned'}: the model is {gib:.0f} GiB "
                     f"(> 100 GiB), and with mmap a large model over RPC hangs or faults while "
                     f"loading ({ISSUE})")
    share = size * workers / (workers + 1)
    disk_s = size / (DISK_GBPS * 1e9)
    links = ", ".join(f"{share * 8 / (g * 1e9):.0f} s at {g:g} Gb/s" for g in LINK_GBPS)
    notes.append(f"load: {gib:.1f} GiB read on the head (≥ {disk_s:.0f} s at {DISK_GBPS:g} GB/s) and "
                 f"{share / 2**30:.1f} GiB sent to the workers ({links}); a floor, real loads are "
                 "slower (46 min for 287 GiB published, hellas-ai/nix-strix-halo#111); with the "
                 "RPC cache (-c, on unless --no-rpc-cache) a worker reads its tensors from its own "
                 "disk from the second load on")
    return notes


def cache_notes(caches: dict[str, RpcCacheReading], cache_on: bool) -> list[str]:
    """Where each worker's `-c` tensor cache is and what it holds (facts/rpc_cache.py), said
    where the plan passes `-c`; `doctor --stack llama-rpc` judges it (llama.rpc_cache)."""
    if not cache_on:
        return ["RPC tensor cache off (--no-rpc-cache): every load sends the workers their "
                "tensors over the link"]
    notes = []
    for node, reading in caches.items():
        cache = reading.cache
        if cache is None:
            notes.append(f"RPC tensor cache (-c) on {node}: size not known ({reading.why_unknown})")
            continue
        free = f"{cache.fs_free_bytes / 2**30:.0f} GiB free on {cache.mount}"
        held = (f"holds {cache.size_bytes / 2**30:.1f} GiB" if cache.size_bytes is not None
                else "is not there yet")
        notes.append(f"RPC tensor cache (-c) on {node}: {cache.path} {held}, {free}; it grows by "
                     "this node's share of every model loaded and nothing deletes it "
                     "(`strixwizard doctor --stack llama-rpc` judges its size: llama.rpc_cache)")
    return notes

"""Unequal nodes (`advise --nodes-spec 100:212,60:212`): each node's usable memory and
bandwidth, the llama.cpp `-ts` (tensor split) of a layer split that fits them, and its
predicted decode speed. Pure.

In a pipeline (`-sm layer`) a token reads each node's layers at that node's bandwidth, one node
after the other, so the time is the sum over nodes of share x bytes / bandwidth, plus the
per-token fixed cost and a hop per extra node. The fastest split that fits therefore fills the
fastest nodes first (a GB10 or a Mac beside a Strix Halo takes as much as fits; the field's
best Mac + Strix placement, -ts 15/85, did that), and among nodes of equal bandwidth shares
by memory, which keeps the most headroom for the KV cache on each. Nodes left with nothing
are left out: every extra node costs a hop.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from strixwizard.errors import UsageError

GIB = 2**30
MAX_SPEC_NODES = 64


@dataclass(frozen=True)
class NodeSpec:
    """One node: usable memory for weights (bytes) and memory bandwidth (GB/s)."""

    memory_bytes: float
    bandwidth_gbps: float


def parse_spec(text: str, default_bandwidth: float) -> list[NodeSpec]:
    """`MEM_GIB[:GBPS],...` in llama.cpp's device order (the order of `-ts`)."""
    nodes = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        mem, _, bw = part.partition(":")
        try:
            gib, gbps = float(mem), float(bw) if bw else default_bandwidth
        except ValueError as error:
            raise UsageError(f"--nodes-spec {text!r}: give MEM_GIB[:GBPS] per node, e.g. 100:212,60:212") \
                from error
        if not 1 <= gib <= 100000 or not 1 <= gbps <= 100000:
            raise UsageError(f"--nodes-spec {part!r}: memory 1-100000 GiB, bandwidth 1-100000 GB/s")
        nodes.append(NodeSpec(gib * GIB, gbps))
    if not 2 <= len(nodes) <= MAX_SPEC_NODES:
        raise UsageError(f"--nodes-spec: give 2 to {MAX_SPEC_NODES} nodes (got {len(nodes)})")
    return nodes


def best_split(weights: float, nodes: Sequence[NodeSpec]) -> list[float] | None:
    """The bytes of weights each node holds in the fastest split that fits (None: the nodes'
    memory together is too small)."""
    if sum(n.memory_bytes for n in nodes) < weights:
        return None
    held = [0.0] * len(nodes)
    left = weights
    for bandwidth in sorted({n.bandwidth_gbps for n in nodes}, reverse=True):
        group = [i for i, n in enumerate(nodes) if n.bandwidth_gbps == bandwidth]
        room = sum(nodes[i].memory_bytes for i in group)
        take = min(room, left)
        for i in group:
            held[i] = take * nodes[i].memory_bytes / room
        left -= take
        if left <= 0:
            break
    return held


def given_split(weights: float, nodes: Sequence[NodeSpec], ratios: Sequence[float]) -> list[float]:
    """The bytes each node holds under a `-ts` the user gives; UsageError when one node cannot
    hold its share."""
    if len(ratios) != len(nodes) or any(r < 0 for r in ratios) or sum(ratios) <= 0:
        raise UsageError(f"--tensor-split: give {len(nodes)} non-negative shares, one per --nodes-spec node")
    held = [weights * r / sum(ratios) for r in ratios]
    for i, (h, n) in enumerate(zip(held, nodes, strict=True)):
        if h > n.memory_bytes:
            split = "/".join(f"{r:g}" for r in ratios)
            raise UsageError(f"--tensor-split {split} cannot fit: node {i + 1} would hold "
                             f"{h / GIB:.1f} GiB of weights and has {n.memory_bytes / GIB:.1f} GiB")
    return held


def ts_text(held: Sequence[float]) -> str:
    """`-ts` as whole percentages, in device order."""
    total = sum(held)
    return "/".join(str(round(100 * h / total)) for h in held)


def read_ms(bytes_per_token: float, weights: float, held: Sequence[float],
            nodes: Sequence[NodeSpec]) -> float:
    """A token's read time through the pipeline: each node's share at its bandwidth."""
    return sum(bytes_per_token * h / weights / (n.bandwidth_gbps * 1e9) * 1e3
               for h, n in zip(held, nodes, strict=True))

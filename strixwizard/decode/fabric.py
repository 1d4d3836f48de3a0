"""What a Test step's results say about decode, for the wizard's panel "what this fabric buys
you". Pure.

A `test decode` run carries all-reduce times at the decode sizes; the Test step's usual run
does not, so the panel takes what it has, each labelled: RCCL's all_reduce_perf rows (measured
or recorded, interpolated to the decode size), and the 2-rank estimate from a pair's one-way
latency at its test size (2 x one-way, plus half the message at the measured RDMA bandwidth;
for TCP no bandwidth term: a lower bound).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from strixwizard.decode.collectives import ESTIMATED, MEASURED, RDMA, RECORDED, TCP, CollectivePoint
from strixwizard.decode.document import points_of
from strixwizard.decode.shapes import ModelShape
from strixwizard.live.results import REPLAYED, Measurement, verdicts


def _rccl_points(m: Measurement) -> list[CollectivePoint]:
    times = m.detail.get("in_place_us") or {}
    source = RECORDED if m.source == REPLAYED else MEASURED
    transport = RDMA if m.detail.get("transport") == "NET/IB" else "rccl-socket"
    return [CollectivePoint(transport, int(size), float(us), source, m.tool,
                            "RCCL all_reduce_perf, 2 ranks, interpolated to the decode size")
            for size, us in sorted(times.items(), key=lambda item: int(item[0]))]


#: What a TCP figure measured on this machine's loopback (the demo) is, wherever it is shown
#: beside RDMA between nodes.
LOOPBACK_NOTE = ("TCP on this machine's loopback, not a network (no wire, no RCCL): it does not "
                 "compare with RDMA between nodes")


def on_loopback(m: Measurement) -> bool:
    """A TCP result measured between 127.0.0.1 and itself (the demo's TCP baseline)."""
    return m.transport == TCP and "loopback" in m.path


def _latency_point(m: Measurement, size: int, bandwidth_gbps: float | None) -> CollectivePoint | None:
    if m.latency is None or m.latency.median_us is None:
        return None
    wire = (size / 2) * 8 / (bandwidth_gbps * 1e3) if bandwidth_gbps else 0.0
    how = (f"2 x one-way {m.detail.get('size_bytes', '?')} B {m.tool} + half the message at "
           f"{bandwidth_gbps:.1f} Gb/s" if bandwidth_gbps else
           f"2 x one-way {m.tool} at its test size (no bandwidth term: a lower bound)")
    if on_loopback(m):
        how = f"{LOOPBACK_NOTE}; {how}"
    return CollectivePoint(m.transport, size, 2 * (m.latency.median_us + wire), ESTIMATED, m.tool, how)


def fabric_points(results: Sequence[Measurement], shape: ModelShape) -> list[CollectivePoint]:
    """All-reduce times per transport at the model's batch-1 decode size, best evidence first:
    a decode run's own times, else RCCL rows, else estimates from the latency tests."""
    decode = points_of(results)
    if decode:
        return decode
    points: list[CollectivePoint] = []
    for m in results:
        if m.kind == "rccl" and m.status is not None and m.detail.get("in_place_us"):
            points = _rccl_points(m)
            break
    have = {p.transport for p in points}
    size = shape.message_bytes(1)
    bandwidth = next((m.bandwidth_gbps for m in verdicts(results)
                      if m.kind == "bandwidth" and m.bandwidth_gbps), None)
    for transport in (RDMA, TCP):
        if transport in have:
            continue
        latency = next((m for m in verdicts(results) if m.kind == "latency" and m.transport == transport
                        and m.latency is not None), None)
        point = _latency_point(latency, size, bandwidth if transport == RDMA else None) if latency else None
        if point is not None:
            points.append(point)
    return points


def fabric_document(results: Sequence[Measurement], shape: ModelShape, nodes: int = 2) -> dict[str, Any]:
    """The "decode" object (the contract of `test decode --json`) from a Test step's results:
    batch 1, TP = 1, 2 and the node count, the default memory bandwidth. What the wizard's panel
    shows, and what a report of a wizard run can chart."""
    from strixwizard.decode.bandwidth import mem_bandwidth
    from strixwizard.decode.document import DecodeRun

    bandwidth, source = mem_bandwidth(None)
    run = DecodeRun(shape, [1], sorted({1, 2, max(2, nodes)}), bandwidth, source)
    if not points_of(results):
        run.notes.append("from the Test step's own figures; `strixwizard test decode` times the "
                         "all-reduce at the model's decode sizes")
    if any(on_loopback(m) for m in verdicts(results)):
        run.notes.append(LOOPBACK_NOTE)
    return run.document_of(fabric_points(results, shape))

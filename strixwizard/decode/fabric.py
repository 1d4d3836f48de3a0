"""What a Test step's results say about decode, for the wizard's panel "what this fabric buys
you". Pure.

A `test decode` run carries all-reduce times at the decode sizes; the Test step's usual run
does not, so the panel takes what it has, each labelled: RCCL's all_reduce_perf rows (measured
or recorded, interpolated to the decode size), and the 2-rank estimate from a pair's one-way
latency at its test size (2 x one-way, plus half the message at the measured RDMA bandwidth;
for TCP no bandwidth term: a lower bound). Beside RCCL over RDMA the TCP estimate is RCCL over
sockets: what RCCL adds over a TCP round trip is added, so the two compare like for like.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from strixwizard.decode.advise import RCCL_OVER_RTT_US
from strixwizard.decode.collectives import (
    ESTIMATED,
    MEASURED,
    RCCL_SOCKET_ESTIMATE,
    RCCL_TOOL,
    RDMA,
    RECORDED,
    TCP,
    CollectivePoint,
)
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


def _latency_point(m: Measurement, size: int, bandwidth_gbps: float | None,
                   rccl_over_us: float = 0.0) -> CollectivePoint | None:
    """The 2-rank all-reduce from a one-way latency (its median, else its average); with
    `rccl_over_us`, RCCL over sockets: what RCCL adds over the round trip on top."""
    if m.latency is None:
        return None
    one_way = m.latency.median_us if m.latency.median_us is not None else m.latency.avg_us
    if one_way is None:
        return None
    wire = (size / 2) * 8 / (bandwidth_gbps * 1e3) if bandwidth_gbps else 0.0
    how = (f"2 x one-way {m.detail.get('size_bytes', '?')} B {m.tool} + half the message at "
           f"{bandwidth_gbps:.1f} Gb/s" if bandwidth_gbps else
           f"2 x one-way {m.tool} at its test size (no bandwidth term: a lower bound)")
    tool = m.tool
    if rccl_over_us:
        how = (f"2 x one-way {m.tool} + {rccl_over_us:g} µs, what RCCL over NET/Socket adds over a "
               "TCP round trip (wkljohn), as the RDMA figure is RCCL's")
        tool = RCCL_SOCKET_ESTIMATE
    if on_loopback(m):
        how = f"{LOOPBACK_NOTE}; {how}"
    return CollectivePoint(m.transport, size, 2 * (one_way + wire) + rccl_over_us, ESTIMATED, tool, how)


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
    rccl_rdma = any(p.tool == RCCL_TOOL for p in points if p.transport == RDMA)
    for transport in (RDMA, TCP):
        if transport in have:
            continue
        latency = next((m for m in verdicts(results) if m.kind == "latency" and m.transport == transport
                        and m.latency is not None), None)
        # beside RCCL over RDMA, TCP is RCCL over sockets too: like for like
        over = RCCL_OVER_RTT_US[TCP] if transport == TCP and rccl_rdma else 0.0
        point = (_latency_point(latency, size, bandwidth if transport == RDMA else None, over)
                 if latency else None)
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
    return run.document_of(fabric_points(results, shape), nodes=max(2, nodes))

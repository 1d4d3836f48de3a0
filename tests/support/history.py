"""Test runs recorded for the history tests through the real history API, as
`strixwizard test` records them."""

from __future__ import annotations

from pathlib import Path

from strixwizard.live.history import record_run
from strixwizard.live.results import LatencyStats, Measurement
from strixwizard.model import Status

PAIR = ("node-a", "node-b")


def _latency(transport: str, tool: str, median: float, status: Status | None = Status.PASS,
             role: str = "verdict") -> Measurement:
    stats = LatencyStats(median * 0.9, median, median * 1.05, median * 1.3, median * 2, median * 4)
    return Measurement("latency", transport, tool, PAIR, status, "", role=role, figure=median, unit="µs",
                       latency=stats)


def _bandwidth(gbps: float, status: Status = Status.PASS) -> Measurement:
    return Measurement("bandwidth", "rdma", "ib_write_bw", PAIR, status, "", figure=gbps, unit="Gb/s",
                       bandwidth_gbps=gbps)


def store_run(path: Path, day: int, rdma: float, tcp: float, gbps: float, site: str = "lab",
              rdma_status: Status = Status.PASS) -> None:
    """Record one `test latency` run of site `site` on 2026-03-0`day` through the real history
    API, as `strixwizard test` records it: RDMA and TCP latency, a TCP reference, RDMA bandwidth."""
    results = [_latency("rdma", "ib_write_lat", rdma, rdma_status),
               _latency("tcp", "strixwizard tcp ping-pong", tcp),
               _latency("tcp", "sockperf ping-pong", tcp * 3, None, "reference"), _bandwidth(gbps)]
    record_run(site, "test latency", f"2026-03-0{day}T10:00:00+00:00", results, path)

"""The result document of a `strixwizard test` run (see the package docstring for its shape)."""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from strixwizard.live.counters import counter_rows, packet_rows
from strixwizard.live.history import Comparison
from strixwizard.live.results import Measurement, exit_code, overall_status, verdicts
from strixwizard.live.verdict import ratio_text
from strixwizard.model import EXIT_NO_VERDICT, document_header
from strixwizard.site import Thresholds


@dataclass(frozen=True)
class LikeForLike:
    pair: tuple[str, str]
    rdma: Measurement
    tcp: Measurement
    ratio: float | None
    summary: str

    def to_json(self) -> dict[str, Any]:
        def side(m: Measurement) -> dict[str, Any]:
            return {"tool": m.tool, "median_us": m.latency.median_us if m.latency else None,
                    "avg_us": m.latency.avg_us if m.latency else None,
                    "p99_us": m.latency.p99_us if m.latency else None, "source": m.source, "path": m.path}

        return {"pair": list(self.pair), "rdma": side(self.rdma), "tcp": side(self.tcp),
                "ratio": self.ratio, "summary": self.summary}


def like_for_like(results: Sequence[Measurement]) -> list[LikeForLike]:
    """Per pair: the judged RDMA one-way median beside the judged TCP one-way median (their
    averages when either has no median)."""
    out = []
    latency = [m for m in verdicts(results) if m.kind == "latency" and m.latency is not None]
    pairs = list(dict.fromkeys(tuple(sorted(m.pair)) for m in latency))
    for pair in pairs:
        rdma = next((m for m in latency if tuple(sorted(m.pair)) == pair and m.transport == "rdma"), None)
        tcp = next((m for m in latency if tuple(sorted(m.pair)) == pair and m.transport == "tcp"), None)
        if rdma is None or tcp is None or rdma.latency is None or tcp.latency is None:
            continue
        r, t = rdma.latency, tcp.latency
        if r.median_us is not None and t.median_us is not None:
            ratio, summary = ratio_text(r.median_us, t.median_us)
        else:  # a figure published without a median (the demo's TCP baseline): averages both
            ratio, summary = ratio_text(r.avg_us, t.avg_us, "averages: one side has no median")
        if rdma.source != tcp.source:
            summary += f" (RDMA: {rdma.source}; TCP: {tcp.source}, {tcp.path})"
        out.append(LikeForLike((pair[0], pair[1]), rdma, tcp, ratio, summary))
    return out


def matrix_json(nodes: Sequence[str], results: Sequence[Measurement], rounds: list[list[tuple[str, str]]],
                round_seconds: list[float]) -> dict[str, Any]:
    def table(kind: str, transport: str) -> dict[str, dict[str, float | None]]:
        grid: dict[str, dict[str, float | None]] = {a: {b: None for b in nodes if b != a} for a in nodes}
        for m in verdicts(results):
            if m.kind == kind and m.transport == transport:
                a, b = m.pair
                grid.setdefault(a, {})[b] = m.figure
                grid.setdefault(b, {})[a] = m.figure
        return grid

    return {
        "nodes": list(nodes),
        "rounds": [[list(p) for p in r] for r in rounds],
        "round_seconds": round_seconds,
        "elapsed_s": sum(round_seconds),
        "tcp_latency_us": table("latency", "tcp"),
        "rdma_latency_us": table("latency", "rdma"),
        "rdma_bandwidth_gbps": table("bandwidth", "rdma"),
    }


@dataclass
class MeasurementReport:
    command: str
    site: str
    thresholds: Thresholds
    results: list[Measurement] = field(default_factory=list)
    demo: bool = False
    matrix: dict[str, Any] | None = None
    history: dict[str, Any] | None = None
    decode: dict[str, Any] | None = None  # `test decode`: see strixwizard.decode
    comparisons: list[Comparison] = field(default_factory=list)
    error: str | None = None
    generated_at: str = field(
        default_factory=lambda: datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"))
    #: the signal that cancelled the run (exit 128 + it), and an export that failed (exit 2)
    signal: int | None = None
    export_error: str | None = None

    @property
    def exit_code(self) -> int:
        if self.signal is not None:
            return 128 + self.signal
        return EXIT_NO_VERDICT if self.error or self.export_error else exit_code(self.results)

    def to_json(self) -> dict[str, Any]:
        t = self.thresholds
        document: dict[str, Any] = {
            **document_header(self.site, self.generated_at),
            "command": f"test {self.command}",
            "demo": self.demo,
            "status": "error" if self.error else overall_status(self.results).value,
            "exit_code": self.exit_code,
            "thresholds": {"rdma_latency_us": t.rdma_latency_us, "tcp_latency_us": t.tcp_latency_us,
                           "bandwidth_fraction": t.bandwidth_fraction},
            "results": [m.to_json() for m in self.results],
            "like_for_like": [c.to_json() for c in like_for_like(self.results)],
            "matrix": self.matrix,
            "history": self.history,
            "counters": counter_rows(self.results),
            "rdma_packets": packet_rows(self.results),
        }
        if self.decode is not None:
            document["decode"] = self.decode
        if self.error:
            document["error"] = self.error
        if self.export_error:
            document["export_error"] = self.export_error
        return document

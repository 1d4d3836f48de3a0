"""Judge measurements against the site's thresholds. Pure functions, no I/O.

Edges: a figure exactly at the threshold passes (the thresholds say "at
most 8 µs", "at least 80%"). A missing figure, or a non-finite one, is never
a pass: it is an error (nothing was measured). An unknown link rate leaves a
bandwidth unjudged (skip), with the reason.
"""

from __future__ import annotations

import math

from strixwizard.live.results import LatencyStats
from strixwizard.model import Status
from strixwizard.site import Thresholds


def _usable(value: float | None) -> bool:
    return value is not None and math.isfinite(value) and value >= 0


def judge_latency(stats: LatencyStats | None, limit_us: float, what: str) -> tuple[Status, str]:
    """The median one-way latency against `limit_us` (perftest's t_typical is the median).

    Tools that print no median (perftest's duration mode `-D` gives `t_avg` only) are
    judged on their average, and the summary says so."""
    if stats is not None and _usable(stats.median_us):
        value, kind = stats.median_us, "median"
    elif stats is not None and stats.median_us is None and _usable(stats.avg_us):
        value, kind = stats.avg_us, "average (no median printed)"
    else:
        return Status.ERROR, f"{what}: no latency figure was measured"
    assert value is not None
    status = Status.PASS if value <= limit_us else Status.FAIL
    word = "within" if status is Status.PASS else "over"
    return status, f"{what}: {kind} one-way {value:.2f} µs, {word} the {limit_us:g} µs limit"


def judge_rdma_latency(stats: LatencyStats | None, thresholds: Thresholds) -> tuple[Status, str]:
    return judge_latency(stats, thresholds.rdma_latency_us, "RDMA")


def judge_tcp_latency(stats: LatencyStats | None, thresholds: Thresholds) -> tuple[Status, str]:
    return judge_latency(stats, thresholds.tcp_latency_us, "TCP")


def judge_bandwidth(gbps: float | None, link_rate_gbps: float | None, thresholds: Thresholds
                    ) -> tuple[Status, str]:
    if not _usable(gbps):
        return Status.ERROR, "no bandwidth figure was measured"
    assert gbps is not None
    if not _usable(link_rate_gbps) or not link_rate_gbps:
        return Status.SKIP, f"{gbps:.2f} Gb/s measured; the link's rate is unknown, so it is not judged"
    fraction = gbps / link_rate_gbps
    wanted = thresholds.bandwidth_fraction
    status = Status.PASS if fraction >= wanted else Status.FAIL
    word = "at least" if status is Status.PASS else "below"
    return status, (f"{gbps:.2f} Gb/s is {fraction:.0%} of the {link_rate_gbps:g} Gb/s link rate, "
                    f"{word} the {wanted:.0%} wanted")


def ratio_text(rdma_us: float | None, tcp_us: float | None) -> tuple[float | None, str]:
    """RDMA/TCP ratio of two median one-way latencies, and how a user reads it."""
    if not (_usable(rdma_us) and _usable(tcp_us)) or not rdma_us or not tcp_us:
        return None, "no ratio: one of the two figures is missing"
    ratio = rdma_us / tcp_us
    return ratio, (f"RDMA {rdma_us:.2f} µs vs TCP {tcp_us:.2f} µs one-way (medians): "
                   f"ratio {ratio:.3f}, RDMA is {tcp_us / rdma_us:.1f}x faster")

"""Judge measurements against the site's thresholds. Pure functions, no I/O.

Edges: a figure exactly at the threshold passes (the thresholds say "at
most 8 µs", "at least 80%"). A missing figure, or a non-finite one, is never
a pass: it is an error (nothing was measured). An unknown link rate leaves a
bandwidth unjudged (skip), with the reason. Bandwidth falls in a named band:
line rate, capped by the NIC's PCIe link (expected for its slot), or degraded.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from strixwizard.facts.nic import PCIE_RDMA_EFFICIENCY
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


#: The bands a bandwidth figure falls in (NVIDIA's DGX Spark ConnectX check names the same
#: cases: a PCIe-limited slot is expected, a link far below both ceilings is broken).
LINE_RATE = "line-rate"  # at least the wanted fraction of the link rate
PCIE_CAPPED = "pcie-capped"  # below the link rate, but as much as the NIC's PCIe link allows
DEGRADED = "degraded"  # below the wanted fraction of both ceilings: something is broken


@dataclass(frozen=True)
class BandwidthBand:
    name: str  # LINE_RATE, PCIE_CAPPED or DEGRADED
    ceiling_gbps: float  # what the pair can reach: the link rate, or the PCIe ceiling if lower


def _pcie_ceiling(pcie_gbps: float | None) -> float | None:
    return pcie_gbps * PCIE_RDMA_EFFICIENCY if _usable(pcie_gbps) and pcie_gbps else None


def bandwidth_band(gbps: float | None, link_rate_gbps: float | None, thresholds: Thresholds,
                   pcie_gbps: float | None = None) -> BandwidthBand | None:
    """The band of a measured figure, None when it cannot be judged (no figure, no link rate)."""
    if not _usable(gbps) or not _usable(link_rate_gbps) or not link_rate_gbps:
        return None
    assert gbps is not None
    wanted = thresholds.bandwidth_fraction
    pcie = _pcie_ceiling(pcie_gbps)
    ceiling = min(link_rate_gbps, pcie) if pcie is not None else link_rate_gbps
    if gbps >= wanted * link_rate_gbps:
        return BandwidthBand(LINE_RATE, ceiling)
    if pcie is not None and pcie < link_rate_gbps and gbps >= wanted * pcie:
        return BandwidthBand(PCIE_CAPPED, ceiling)
    return BandwidthBand(DEGRADED, ceiling)


def judge_bandwidth(gbps: float | None, link_rate_gbps: float | None, thresholds: Thresholds,
                    pcie_gbps: float | None = None) -> tuple[Status, str]:
    """PASS at line rate; WARN when the NIC's PCIe link is the cap (expected for the slot,
    `nic.pcie_link` names it); FAIL when degraded below both ceilings. `pcie_gbps`: the
    narrower end's usable PCIe bandwidth, unknown → judged on the link rate alone."""
    if not _usable(gbps):
        return Status.ERROR, "no bandwidth figure was measured"
    assert gbps is not None
    band = bandwidth_band(gbps, link_rate_gbps, thresholds, pcie_gbps)
    if band is None or not link_rate_gbps:
        return Status.SKIP, f"{gbps:.2f} Gb/s measured; the link's rate is unknown, so it is not judged"
    fraction = gbps / link_rate_gbps
    wanted = thresholds.bandwidth_fraction
    head = f"{gbps:.2f} Gb/s is {fraction:.0%} of the {link_rate_gbps:g} Gb/s link rate"
    if band.name == LINE_RATE:
        return Status.PASS, f"{head}, at least the {wanted:.0%} wanted (line rate)"
    assert pcie_gbps is not None or band.name == DEGRADED
    if band.name == PCIE_CAPPED:
        return Status.WARN, (f"{head}, below the {wanted:.0%} wanted: capped by the PCIe link "
                             f"({pcie_gbps:.0f} Gb/s usable, about {band.ceiling_gbps:.0f} Gb/s of "
                             "RDMA), as expected for that slot — not a fabric fault (see "
                             "nic.pcie_link: a wider slot lifts it)")
    pcie = _pcie_ceiling(pcie_gbps)
    also = (f" and below {wanted:.0%} of the ~{pcie:.0f} Gb/s its PCIe link allows"
            if pcie is not None and pcie < link_rate_gbps else "")
    return Status.FAIL, (f"{head}, below the {wanted:.0%} wanted{also}: degraded — the link or its "
                         "settings lose bandwidth (pause/PFC, MTU, errors in the fabric counters, "
                         "a lane trained down, NIC power or thermal throttling)")


def ratio_text(rdma_us: float | None, tcp_us: float | None, statistic: str = "medians"
               ) -> tuple[float | None, str]:
    """RDMA/TCP ratio of two one-way latencies, and how a user reads it: which is faster, by
    how much, in plain words ("RDMA is 6.5x faster than TCP", never "0.6x faster")."""
    if not (_usable(rdma_us) and _usable(tcp_us)) or not rdma_us or not tcp_us:
        return None, "no ratio: one of the two figures is missing"
    ratio = rdma_us / tcp_us
    if ratio < 1:
        plain = f"RDMA is {tcp_us / rdma_us:.1f}x faster than TCP (it takes {ratio:.2f}x the time)"
    elif ratio > 1:
        plain = f"TCP is {ratio:.1f}x faster than RDMA (RDMA takes {ratio:.2f}x the time of TCP)"
    else:
        plain = "RDMA and TCP take the same time"
    return ratio, f"RDMA {rdma_us:.2f} µs vs TCP {tcp_us:.2f} µs one-way ({statistic}): {plain}"

"""Software RDMA (rxe/siw, opted in with `allow_soft_rdma`): perftest and the verbs ping-pong side by side.

On a software RDMA link the figures say nothing about production speed, but both
tools running over the same device, port and GID prove the setup and the tool.
Each result is labelled so, and the verbs ping-pong carries its ratio to perftest's
median (ours / perftest), as the TCP ping-pong does against sockperf.
"""

from __future__ import annotations

from dataclasses import replace

from strixwizard.live.perftest import PerftestSettings
from strixwizard.live.results import Measurement
from strixwizard.live.tcp import TcpSettings
from strixwizard.topology import SOFT_RDMA_LABEL

#: warm-up round trips of the verbs ping-pong on software RDMA: at ~1 ms a round trip (rxe in
#: an emulated VM), the usual 1000 would spend the whole time bound warming up
SOFT_WARMUP = 50
#: ib_write_bw iterations on software RDMA: the usual 5000 x 64 KiB (327 MB) at the few MB/s of
#: rxe in an emulated VM would outlast the run's time bound and leave no figure at all
SOFT_BW_ITERATIONS = 200


def soft_settings(tcp: TcpSettings) -> TcpSettings:
    return replace(tcp, warmup=min(tcp.warmup, SOFT_WARMUP))


def soft_perftest(settings: PerftestSettings) -> PerftestSettings:
    return replace(settings, bw_iterations=min(settings.bw_iterations, SOFT_BW_ITERATIONS))


def labelled(result: Measurement) -> Measurement:
    return replace(result, detail={**result.detail, "software_rdma": True, "note": SOFT_RDMA_LABEL})


def side_by_side(perftest: Measurement, verbs: Measurement) -> tuple[Measurement, Measurement]:
    """Both results labelled; the verbs one with `ratio_to_perftest` (None when a figure is missing)."""
    ours = verbs.latency.median_us if verbs.latency else None
    theirs = perftest.latency.median_us if perftest.latency else None
    ratio = ours / theirs if ours is not None and theirs else None
    summary = verbs.summary
    if ratio is not None:
        summary += f" ({ratio:.2f}x {perftest.tool}'s median {theirs:.2f} µs)"
    verbs = replace(verbs, summary=summary,
                    detail={**verbs.detail, "ratio_to_perftest": ratio, "perftest_tool": perftest.tool})
    return labelled(perftest), labelled(verbs)

"""`--demo`: the TCP baseline measured for real on loopback, RDMA replayed from recordings.

The demo site's nodes are snapshots: nothing can run on them. So the TCP
ping-pong (and sockperf/qperf when installed) runs on this machine between
127.0.0.1 and itself, bounded in time; the RDMA figures come from
`strixwizard/demo/recordings/` and are labelled "replayed recording".
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path

from strixwizard.live.perftest import bandwidth_measurement, latency_measurement
from strixwizard.live.perftest_output import parse_perftest
from strixwizard.live.plan import RdmaEnd
from strixwizard.live.rccl import rccl_measurement
from strixwizard.live.results import REPLAYED, LatencyStats, Measurement
from strixwizard.live.schedule import rounds
from strixwizard.live.tcp import TcpSettings, qperf_reference, sockperf_reference, tcp_latency
from strixwizard.node.connect import connect
from strixwizard.node.target import LocalTarget
from strixwizard.site import Thresholds

RECORDINGS = Path(__file__).resolve().parent.parent / "demo" / "recordings"
LOOPBACK = "127.0.0.1"

#: The recorded baseline without RDMA on the same kind of cluster: the published E810 setup guide
#: (two Strix Halo nodes, E810 back to back, Fedora 43) measured 0.068 ms over the RoCE NIC with
#: `ping -c 10` (its compare_eth_vs_rdma.sh takes ping's rtt avg): an ICMP ROUND TRIP. Halved, it
#: is compared like for like with perftest's one-way figure.
BASELINE_URL = "https://github.com/kyuz0/amd-strix-halo-vllm-toolboxes/blob/main/rdma_cluster/setup_guide.md"
BASELINE_ROUND_TRIP_US = 68.0
BASELINE_TOOL = "ping over the same E810 NIC (published)"
PUBLISHED = "published measurement"


def _meta() -> dict[str, object]:
    data = json.loads((RECORDINGS / "meta.json").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def recorded_ends() -> tuple[RdmaEnd, RdmaEnd]:
    meta = _meta()
    client, server = meta["client"], meta["server"]
    assert isinstance(client, dict) and isinstance(server, dict)
    return RdmaEnd(**client), RdmaEnd(**server)


def _recording(name: str) -> str:
    return (RECORDINGS / name).read_text(encoding="utf-8")


def _path(ends: tuple[RdmaEnd, RdmaEnd]) -> str:
    return f"{ends[0].label} -> {ends[1].label}"


def demo_tcp(pair: tuple[str, str], thresholds: Thresholds, settings: TcpSettings) -> Iterator[Measurement]:
    host = connect(LocalTarget("this machine"))
    path = f"{LOOPBACK} loopback on this machine (the demo nodes are snapshots; not a fabric link)"
    yield tcp_latency(host, host, pair, LOOPBACK, path, thresholds, settings)
    if settings.references:
        yield sockperf_reference(host, host, pair, LOOPBACK, path, settings)
        yield qperf_reference(host, host, pair, LOOPBACK, path, settings)


def published_baseline(pair: tuple[str, str]) -> Measurement:
    """The published non-RDMA figure on the same NIC, one-way (half its round trip), labelled."""
    one_way = BASELINE_ROUND_TRIP_US / 2
    stats = LatencyStats(None, one_way, one_way, None, None, None)
    return Measurement(
        "latency", "tcp", BASELINE_TOOL, pair, None,
        f"{one_way:.0f} µs one-way: half the {BASELINE_ROUND_TRIP_US:.0f} µs ping round trip over "
        f"the E810 without RDMA, published in {BASELINE_URL} (§5.3)",
        role="reference", figure=one_way, unit="µs", latency=stats,
        path="E810 back to back, two Strix Halo nodes (the guide's own run, not this machine)",
        source=PUBLISHED,
        detail={"source": BASELINE_URL, "round_trip_us": BASELINE_ROUND_TRIP_US,
                "how": "ping -c 10, rtt avg (ICMP round trip), halved to one-way"})


def published_comparison(results: Sequence[Measurement]) -> str | None:
    """The demo's story: its recorded RDMA against the published baseline on the same NIC."""
    rdma = next((m for m in results if m.kind == "latency" and m.transport == "rdma"
                 and m.role == "verdict" and m.latency and m.latency.median_us), None)
    base = next((m for m in results if m.tool == BASELINE_TOOL), None)
    if rdma is None or base is None or rdma.latency is None or not base.figure:
        return None
    median = rdma.latency.median_us or 0.0
    return (f"RDMA {median:.2f} µs (recorded) vs {base.figure:.0f} µs without RDMA on the same E810 NIC "
            f"(one-way, half the published {BASELINE_ROUND_TRIP_US:.0f} µs ping round trip, {BASELINE_URL}): "
            f"RDMA is {base.figure / median:.1f}x faster")


def demo_rdma_latency(thresholds: Thresholds) -> Measurement:
    ends = recorded_ends()
    table = parse_perftest(_recording("ib_write_lat.txt"))
    return latency_measurement("ib_write_lat", (ends[0].node, ends[1].node), table, _path(ends), thresholds,
                               source=REPLAYED, detail={"recording": "demo/recordings/ib_write_lat.txt"})


def demo_rdma_bandwidth(thresholds: Thresholds) -> Measurement:
    ends = recorded_ends()
    table = parse_perftest(_recording("ib_write_bw.txt"))
    rate = min(e.rate_gbps for e in ends if e.rate_gbps)
    pcie = min((e.pcie_gbps for e in ends if e.pcie_gbps), default=None)  # both in x4 slots
    return bandwidth_measurement("ib_write_bw", (ends[0].node, ends[1].node), table, _path(ends), rate,
                                 thresholds, source=REPLAYED,
                                 detail={"recording": "demo/recordings/ib_write_bw.txt"}, pcie_gbps=pcie)


def demo_rccl() -> Measurement:
    ends = recorded_ends()
    expected = sorted({f"{e.device}:{e.port}" for e in ends})
    return rccl_measurement((ends[0].node, ends[1].node), _recording("all_reduce_perf.txt"), expected,
                            _path(ends), source=REPLAYED,
                            detail={"recording": "demo/recordings/all_reduce_perf.txt"})


def demo_counters(results: list[Measurement], pair: tuple[str, str]) -> Measurement:
    """The fabric counters recorded around the RDMA run, judged against `results`."""
    from strixwizard.live.counters import recorded

    data = json.loads(_recording("counters.json"))
    return recorded(data, results, pair, REPLAYED)


#: The RDMA path of each pair as the site's own snapshots show it (`live.plan.plan_pair` on
#: their facts; None: no RDMA path there). The recordings were made elsewhere.
SitePaths = dict[tuple[str, str], "tuple[RdmaEnd, RdmaEnd] | None"]


def on_site_path(m: Measurement, site_ends: tuple[RdmaEnd, RdmaEnd] | None) -> Measurement:
    """A replayed RDMA result with the path this site's snapshots show (the same facts doctor
    judges), and a note where that path is not the one the recording was made on."""
    recorded = recorded_ends()
    if site_ends is None:
        note = (f"replayed from a recording made on {_path(recorded)}; this site's snapshots show "
                f"no RDMA path between {m.pair[0]} and {m.pair[1]}: the recording says nothing "
                "about them")
        return replace(m, path="no RDMA path in this site's snapshots", detail={**m.detail, "note": note})
    differ = [f"{s.node} active_mtu {s.mtu}" for s, r in zip(site_ends, recorded, strict=True)
              if s.mtu != r.mtu]
    detail = dict(m.detail)
    if differ:
        mtus = (f"{recorded[0].mtu} on both ends" if recorded[0].mtu == recorded[1].mtu
                else " and ".join(str(r.mtu) for r in recorded))
        detail["note"] = (f"replayed from a recording made at active_mtu {mtus}; this site's path "
                          f"differs ({', '.join(differ)}): the recording cannot show what this "
                          "path does (doctor judges it: link.mtu)")
    return replace(m, path=_path(site_ends), detail=detail)


def demo_results(kind: str, nodes: list[str], thresholds: Thresholds, settings: TcpSettings,
                 paths: SitePaths | None = None) -> Iterator[Measurement]:
    """The demo's results; with `paths`, each replayed RDMA result carries its pair's path as
    the site's snapshots show it (`on_site_path`)."""
    pair = (nodes[0], nodes[1])

    def placed(m: Measurement, on: tuple[str, str]) -> Measurement:
        m = replace(m, pair=on)
        return m if paths is None else on_site_path(m, paths.get(on))

    if kind in ("latency", "matrix"):
        for pairs in rounds(nodes):
            for a, b in pairs:
                yield from demo_tcp((a, b), thresholds, settings)
                yield published_baseline((a, b))
                yield placed(demo_rdma_latency(thresholds), (a, b))
                if kind == "matrix":
                    yield placed(demo_rdma_bandwidth(thresholds), (a, b))
    elif kind == "bandwidth":
        yield placed(demo_rdma_bandwidth(thresholds), pair)
    elif kind == "rccl":
        rccl = demo_rccl()
        yield rccl if paths is None else on_site_path(rccl, paths.get(rccl.pair))

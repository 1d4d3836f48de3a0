"""`--demo`: every figure replayed from recordings of two real Strix Halo nodes.

The demo site's nodes are snapshots: nothing can run on them, and this machine's loopback
is no network, so it is never judged beside them. The RDMA latency, bandwidth and RCCL come
from `strixwizard/demo/recordings/`, and so does the TCP baseline they are compared with:
the same published run's non-RDMA figure over the same E810 link (meta.json's
`tcp_baseline`, with its source and what it is). Every result says "replayed recording".
(The soak, which has no RDMA beside it, runs on loopback: `live.kinds.soak`.)
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from strixwizard.live.perftest import bandwidth_measurement, latency_measurement
from strixwizard.live.perftest_output import parse_perftest
from strixwizard.live.plan import RdmaEnd
from strixwizard.live.rccl import rccl_measurement
from strixwizard.live.results import REPLAYED, LatencyStats, Measurement
from strixwizard.live.schedule import rounds
from strixwizard.live.verdict import judge_tcp_latency
from strixwizard.site import Thresholds

RECORDINGS = Path(__file__).resolve().parent.parent / "demo" / "recordings"
LOOPBACK = "127.0.0.1"


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


def tcp_baseline() -> dict[str, Any]:
    """The recorded TCP baseline of the demo's pair (meta.json's `tcp_baseline`)."""
    base = _meta()["tcp_baseline"]
    assert isinstance(base, dict)
    return base


def demo_tcp(pair: tuple[str, str], thresholds: Thresholds) -> Measurement:
    """The recording's non-RDMA one-way figure over the same E810 link, judged like a TCP
    baseline: an average (the published figure has no median), labelled with what it is."""
    base = tcp_baseline()
    one_way, round_trip = float(base["one_way_us"]), float(base["round_trip_us"])
    stats = LatencyStats(None, None, one_way, None, None, None)
    status, judged = judge_tcp_latency(stats, thresholds)
    ends = recorded_ends()
    path = (f"{ends[0].node}:{ends[0].netdev} {ends[0].address} -> {ends[1].node}:{ends[1].netdev} "
            f"{ends[1].address}, kernel IP stack (the recording's link)")
    return Measurement(
        "latency", "tcp", str(base["tool"]), pair, status,
        f"{judged}: half the {round_trip:g} µs ping round trip over the same E810 link, "
        f"published in {base['source']}",
        figure=one_way, unit="µs", threshold=f"≤ {thresholds.tcp_latency_us:g} µs one-way",
        latency=stats, path=path, source=REPLAYED,
        detail={"recording": "demo/recordings/meta.json (tcp_baseline)", "source": base["source"],
                "round_trip_us": round_trip, "what": base["what"]})


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


def demo_results(kind: str, nodes: list[str], thresholds: Thresholds,
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
                yield demo_tcp((a, b), thresholds)
                yield placed(demo_rdma_latency(thresholds), (a, b))
                if kind == "matrix":
                    yield placed(demo_rdma_bandwidth(thresholds), (a, b))
    elif kind == "bandwidth":
        yield placed(demo_rdma_bandwidth(thresholds), pair)
    elif kind == "rccl":
        rccl = demo_rccl()
        yield rccl if paths is None else on_site_path(rccl, paths.get(rccl.pair))

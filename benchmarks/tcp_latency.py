"""Benchmark: our TCP ping-pong beside sockperf and qperf on one lab link; matrix vs one pair.

Builds real labs (network namespaces, one sshd each; needs root), then:

1. On the fabric veth of a 2-host lab (node0 -> node1's fab0 address), several
   alternating runs of our ping-pong, `sockperf ping-pong --tcp` and
   `qperf tcp_lat`, all with 64-byte messages, all orchestrated over SSH the
   way `strixwizard test latency` does. Prints the median one-way latency of
   each (qperf only reports an average: compared with our average), and the
   ratios. Aim: ours within 15% of sockperf.
2. On an 8-host lab: the all-pairs matrix (28 pairs in 7 rounds of 4
   concurrent pairs) against 8 x and 28 x the time of one pair.

    python benchmarks/tcp_latency.py [--runs 5] [--seconds 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from strixwizard.live.hosts import Host
from strixwizard.live.pairs import latency_pair
from strixwizard.live.plan import plan_pair
from strixwizard.live.runner import run_measurement
from strixwizard.live.schedule import rounds
from strixwizard.live.settings import MatrixTiming, MeasurementSettings
from strixwizard.live.tcp import (
    TcpSettings,
    pingpong_stats,
    qperf_reference,
    sockperf_reference,
)
from strixwizard.node import connect, target_for
from strixwizard.services.nodes import RunRequest, resolve_run
from tests.support.lab import Lab, require_lab_tools, sweep_stale_labs


def _hosts(site_file: Path) -> tuple[dict[str, Host], object, dict[str, object]]:
    site, nodes = resolve_run(RunRequest(site_file=site_file))
    hosts: dict[str, Host] = {s.name: connect(target_for(site, s)) for s in site.nodes}
    facts = {n.report.name: n.facts for n in nodes if n.facts is not None}
    return hosts, site, facts


def link_figures(runs: int, seconds: float) -> None:
    with tempfile.TemporaryDirectory(prefix="strixwizard-bench-", dir="/tmp") as tmp, \
            Lab(Path(tmp), 2) as lab:
        hosts, _, _ = _hosts(lab.write_site_yaml(Path(tmp) / "lab.yaml"))
        client, server = hosts["node0"], hosts["node1"]
        address = str(lab.hosts[1].fabric_addr)
        settings = TcpSettings(size=64, seconds=seconds, round_trips=500_000, warmup=2000,
                               reference_seconds=seconds)
        ours_med, ours_avg, sock_med, qperf_avg = [], [], [], []
        for i in range(runs):
            stats, detail = pingpong_stats(client, server, address, settings)
            sp = sockperf_reference(client, server, ("node0", "node1"), address, "fab0", settings)
            qp = qperf_reference(client, server, ("node0", "node1"), address, "fab0", settings)
            if sp.latency is None or qp.latency is None:
                raise SystemExit(f"reference failed: {sp.summary} / {qp.summary}")
            ours_med.append(stats.median_us)
            ours_avg.append(stats.avg_us)
            sock_med.append(sp.latency.median_us)
            qperf_avg.append(qp.latency.avg_us)
            print(f"  run {i + 1}: ours median {stats.median_us:.2f} µs (avg {stats.avg_us:.2f}, "
                  f"{detail['round_trips']} round trips) | sockperf median {sp.latency.median_us:.2f} µs "
                  f"(avg {sp.latency.avg_us:.2f}) | qperf avg {qp.latency.avg_us:.2f} µs", flush=True)
        o, s, oa, q = (statistics.median(v) for v in (ours_med, sock_med, ours_avg, qperf_avg))
        print(f"\nlab link {lab.hosts[0].fabric_addr} -> {address} (veth between namespaces), 64 B, "
              f"one-way, median of {runs} runs:")
        print(f"  strixwizard ping-pong median : {o:8.2f} µs")
        print(f"  sockperf ping-pong median    : {s:8.2f} µs   ratio ours/sockperf = {o / s:.3f} "
              f"({abs(o / s - 1):.1%} {'within' if abs(o / s - 1) <= 0.15 else 'OUTSIDE'} the 15% aim)")
        print(f"  strixwizard ping-pong average: {oa:8.2f} µs")
        print(f"  qperf tcp_lat average        : {q:8.2f} µs   ratio ours/qperf (averages) = {oa / q:.3f}")
        for host in hosts.values():
            host.close()


def matrix_figures(seconds: float) -> None:
    with tempfile.TemporaryDirectory(prefix="strixwizard-bench-", dir="/tmp") as tmp, \
            Lab(Path(tmp), 8) as lab:
        hosts, site, facts = _hosts(lab.write_site_yaml(Path(tmp) / "lab.yaml"))
        names = [h.name for h in lab.hosts]
        settings = MeasurementSettings(tcp=TcpSettings(seconds=seconds, round_trips=500_000,
                                                   references=False))
        plans = {p: plan_pair(site, facts, *p) for r in rounds(names) for p in r}  # type: ignore[arg-type]
        one = plans[("node0", "node1")]
        list(latency_pair(hosts, one, settings))  # warm the SSH connections
        start = time.monotonic()
        results = list(latency_pair(hosts, one, settings))
        pair_time = time.monotonic() - start
        timing = MatrixTiming()
        start = time.monotonic()
        results = list(run_measurement("matrix", hosts, plans, names, settings, timing=timing))
        matrix_time = time.monotonic() - start
        ok = sum(1 for r in results if r.transport == "tcp" and r.status is not None
                 and r.status.value == "pass")
        print(f"\nmatrix on 8 lab nodes: {len(plans)} pairs in {len(timing.rounds)} rounds, "
              f"{ok} TCP pairs passed")
        print(f"  one pair (TCP ping-pong, {seconds:g} s bound): {pair_time:6.2f} s")
        print(f"  matrix                                 : {matrix_time:6.2f} s  "
              f"(rounds: {', '.join(f'{t:.2f}' for t in timing.round_seconds)})")
        print(f"  8 x one pair = {8 * pair_time:6.2f} s -> matrix / (8 x pair) = "
              f"{matrix_time / (8 * pair_time):.2f}")
        print(f"  28 x one pair (one at a time) = {28 * pair_time:6.2f} s -> speed-up "
              f"{28 * pair_time / matrix_time:.1f}x")
        for host in hosts.values():
            host.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    require_lab_tools()
    sweep_stale_labs()
    link_figures(args.runs, args.seconds)
    matrix_figures(min(args.seconds, 1.0))


if __name__ == "__main__":
    main()

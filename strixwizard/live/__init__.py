"""Measurements: RDMA and TCP latency/bandwidth, RCCL, all-pairs matrices, decode, soak, judged
and streamed.

Importing this package is cheap (nothing below is imported here); `doctor`
never loads it; the `strixwizard test` command itself is `cli/live.py`.

Each kind (`strixwizard test KIND`) is declared once in `kinds/` (see its docstring and
docs/extending/measurement.md). Modules: parsers (`perftest_output`, `tcp_tools_output`,
`rccl_output`, pure), `verdict` (thresholds, pure), `plan` (pair endpoints from facts, pure),
`schedule` (rounds of disjoint pairs), `hosts` (supervised programs over SSH or locally),
`tcp` / `perftest` / `native` / `rccl` / `soak` / `soft_rdma` (orchestration), `counters`
(fabric counters around a run), `results` (measurements and the verdict), `pairs` (what runs
between two nodes), `settings`, `streams` (jobs in threads), `runner` (a kind's run under one
cancel), `history` (SQLite) and `trends` (its series), `demo`, `report`. The text output is
`strixwizard.present.measure`.
The programs sent to nodes (`pingpong.py`, `verbs_pingpong.py`, the supervisor) are in
`strixwizard/onnode/`.

`strixwizard test KIND --json` prints one document (exit 0 pass, 1 a fail,
2 no verdict; `exit_code` repeats it)::

    {
      "schema_version": 1,
      "tool": {"name": "strixwizard", "version": "..."},
      "generated_at": "ISO-8601", "command": "test latency", "site": "lab",
      "demo": false, "status": "pass|fail|error|warn|skip", "exit_code": 0,
      "thresholds": {"rdma_latency_us": 8.0, "tcp_latency_us": 150.0, "bandwidth_fraction": 0.8},
      "results": [{
          "kind": "latency|bandwidth|rccl", "transport": "rdma|tcp",
          "tool": "ib_write_lat|strixwizard tcp ping-pong|sockperf ping-pong|qperf tcp_lat|...",
          "pair": ["node0", "node1"],          # [client side, server side]
          "role": "verdict|reference",         # references are never judged
          "status": "pass|fail|warn|skip|error" or null (reference),
          "summary": "one line a person reads", "figure": 5.19, "unit": "µs|Gb/s|GB/s busbw",
          "threshold": "≤ 8 µs one-way",
          "latency_us": {"min", "median", "avg", "p99", "p99_9", "max", "stdev", "samples"} or null,
          "bandwidth_gbps": null, "link_rate_gbps": null,
          "path": "node0:rocep194s0:1 gid 1 mtu 4096 -> node1:...",
          "source": "measured|replayed recording", "detail": {...}}],
      "like_for_like": [{"pair": [...], "rdma": {"tool", "median_us", "avg_us", "p99_us", "source", "path"},
                         "tcp": {...}, "ratio": 0.07, "summary": "..."}],
      "matrix": null | {"nodes", "rounds": [[[a, b], ...], ...], "round_seconds", "elapsed_s",
                        "tcp_latency_us": {a: {b: x}}, "rdma_latency_us": {...},
                        "rdma_bandwidth_gbps": {...}},
      "history": null | {"path", "run_id", "compared": [{"pair", "kind", "transport", "tool", "figure",
                         "unit", "last_good_figure", "last_good_at", "change", "summary"}]},
      "error": "only when there is no verdict because of bad input"
    }

All latencies are one-way µs (perftest and sockperf/qperf report half the
round trip; our ping-pong halves each round trip), with the same statistics.
"""

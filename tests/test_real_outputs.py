"""Every published tool output in tests/data/real/ read by the project's parsers.

tests/data/real/index.json states, per sample, where it was published and what
the right reading is; INDEX.md is rendered from it (`python -m
tests.test_real_outputs` rewrites it). A sample the parsers cannot read fails
here: nothing is skipped.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import pytest

from strixwizard.facts.counters import ERROR_KINDS, counter_kind, parse_counter, parse_ethtool_stats
from strixwizard.facts.ethtool import parse_driver_info
from strixwizard.facts.qos import parse_mlnx_qos
from strixwizard.facts.rdma import parse_ibv_devinfo
from strixwizard.facts.rdma_link import parse_rdma_link
from strixwizard.facts.rpc_cache import parse_rpc_cache
from strixwizard.facts.verbs_providers import parse_device_limits, parse_provider_warnings
from strixwizard.live.perftest_output import (
    bandwidth_gbps,
    latency_stats,
    parse_perftest,
    parse_perftest_json,
)
from strixwizard.live.rccl import judge_rccl
from strixwizard.live.rccl_output import (
    CollectiveTable,
    RcclOutputError,
    parse_all_reduce,
    parse_transport,
)
from strixwizard.live.tcp_tools_output import parse_qperf_latency, parse_sockperf

REAL = Path(__file__).parent / "data" / "real"
INDEX = json.loads((REAL / "index.json").read_text())["samples"]


def _text(entry: dict[str, Any]) -> str:
    return (REAL / entry["file"]).read_text(encoding="utf-8")


def _same(got: object, want: object) -> bool:
    if isinstance(want, float) and isinstance(got, int | float):
        return math.isclose(got, want, rel_tol=1e-6, abs_tol=1e-6)
    if isinstance(want, list) and isinstance(got, tuple | list):
        return len(got) == len(want) and all(_same(g, w) for g, w in zip(got, want, strict=True))
    return got == want


def _check(what: str, got: dict[str, object], want: dict[str, object]) -> None:
    wrong = {k: (got.get(k, "(not read)"), v) for k, v in want.items() if not _same(got.get(k), v)}
    assert not wrong, f"{what}: read (got, wanted) {wrong}"


def _sockperf(text: str, want: dict[str, object]) -> None:
    stats = parse_sockperf(text)
    _check("sockperf", vars(stats), want)


def _qperf(text: str, want: dict[str, object]) -> None:
    _check("qperf", {"latency_us": parse_qperf_latency(text, str(want.get("test", "tcp_lat")))},
           {k: v for k, v in want.items() if k != "test"})


def _perftest(text: str, want: dict[str, object]) -> None:
    table = parse_perftest(text)
    last = max(table.rows, key=lambda r: r.get("#bytes", 0)) if table.rows else None
    got: dict[str, object] = {
        "test": table.test, "device": table.params.get("Device"), "qps": table.params.get("Number of qps"),
        "rows": len(table.rows), "complete": table.complete, "warnings": len(table.warnings),
        "sizes": [int(r["#bytes"]) for r in table.rows],
        "distinct_sizes": len({r["#bytes"] for r in table.rows}), "cut": table.cut,
    }
    if table.is_bandwidth and last is not None:
        row = last if table.complete else table.rows[-1]  # an unfinished run: its latest period
        got.update(unit=table.unit("BW average"), bw_gbps=bandwidth_gbps(table, row),
                   peak_gbps=bandwidth_gbps(table, row, "BW peak"))
    if table.is_latency and last is not None:
        got.update(vars(latency_stats(table, last)))
    _check("perftest", got, want)


def _perftest_json(text: str, want: dict[str, object]) -> None:
    """A `--out_json` report, its unit unknown to the reader (told from MsgRate x MsgSize)."""
    table = parse_perftest_json(text)
    row = table.rows[0]
    got: dict[str, object] = {"unit": table.unit("BW average"), "device": table.params.get("Device"),
                              "sizes": [int(row["#bytes"])], "bw_gbps": bandwidth_gbps(table, row),
                              "peak_gbps": bandwidth_gbps(table, row, "BW peak")}
    _check("perftest --out_json", got, {k: v for k, v in want.items()})


def _table(text: str) -> CollectiveTable | None:
    try:
        return parse_all_reduce(text)
    except RcclOutputError:
        return None


def _collective(text: str, want: dict[str, object]) -> None:
    table = parse_all_reduce(text)
    first = table.rows[0] if table.rows else None
    got: dict[str, object] = {
        "layout": table.layout, "rows": len(table.rows), "complete": table.complete,
        "avg_busbw_gbs": table.avg_busbw_gbs, "max_busbw_gbs": table.max_busbw_gbs,
        "version": table.version, "world_size": table.world_size, "runs": table.runs,
        "single_rank_copies": table.single_rank_copies,
        "wrong": [r.size_bytes for r in table.wrong_rows],
        "first": [first.dtype, first.redop, first.root] if first else None,
    }
    _check("table", got, want)


def _transport(text: str, want: dict[str, object]) -> None:
    ev = parse_transport(text)
    got: dict[str, object] = {
        "transport": ev.transport, "network": ev.network, "plugin": ev.plugin,
        "ib_devices": ev.ib_devices, "socket_devices": ev.socket_devices, "channels": ev.channels,
        "ib_missing": ev.ib_missing, "ib_unavailable": ev.ib_unavailable, "version": ev.version,
        "virtual_devices": ev.virtual_devices,
    }
    _check("transport", got, want)


def _verdict(text: str, want: dict[str, Any]) -> None:
    status, summary = judge_rccl(_table(text), parse_transport(text), want.get("expected_devices", []),
                                 want.get("expected_ranks"))
    assert status.value == want["status"], summary
    for part in want.get("contains", []):
        assert part in summary, summary


def _ibv_devinfo(text: str, want: dict[str, Any]) -> None:
    ports = {f"{dev}:{port}": vars(info) for (dev, port), info in parse_ibv_devinfo(text).items()}
    assert sorted(ports) == sorted(want), f"ibv_devinfo: ports {sorted(ports)}"
    for key, fields in want.items():
        _check(f"ibv_devinfo {key}", ports[key], fields)


def _ethtool_i(text: str, want: dict[str, object]) -> None:
    _check("ethtool -i", vars(parse_driver_info(text)), want)


def _counter_reading(values: dict[str, int], want: dict[str, Any]) -> None:
    kinds: dict[str, int] = {}
    for name in values:
        kinds[counter_kind(name)] = kinds.get(counter_kind(name), 0) + 1
    errors = {n: v for n, v in values.items() if counter_kind(n) in ERROR_KINDS and v}
    got: dict[str, object] = {"counters": len(values), "kinds": kinds, "nonzero_errors": errors,
                              **{k: values.get(k) for k in want.get("values", {})}}
    _check("counters", got, {k: v for k, v in want.items() if k != "values"} | want.get("values", {}))


def _ethtool_s(text: str, want: dict[str, Any]) -> None:
    _counter_reading(parse_ethtool_stats(text), want)


def _sysfs_counters_ttar(text: str, want: dict[str, Any]) -> None:
    """A ttar archive (prometheus/procfs fixtures) of one counters directory: each file's
    text read by the fact parser of /sys/class/infiniband/DEV/ports/P/{hw_,}counters/NAME."""
    values: dict[str, int] = {}
    lines = text.splitlines()
    for index, line in enumerate(lines):
        if line.startswith("Path: ") and lines[index + 1] == "Lines: 1":
            name = line.rsplit("/", 1)[1]
            if name != "lifespan":
                values[name] = parse_counter(lines[index + 2] + "\n")
    _counter_reading(values, want)


def _sysfs_counters_grep(text: str, want: dict[str, Any]) -> None:
    """`grep -r . DIR/`: one `PATH:VALUE` line per counter file, each value read by the fact
    parser of the counter files."""
    values = {}
    for line in text.splitlines():
        path, _, value = line.rpartition(":")
        name = path.rsplit("/", 1)[1]
        if name != "lifespan":
            values[name] = parse_counter(value + "\n")
    _counter_reading(values, want)


def _rdma_link(text: str, want: dict[str, Any]) -> None:
    links = [[lk.name, lk.state, lk.physical_state, lk.netdev] for lk in parse_rdma_link(text)]
    _check("rdma link", {"links": links}, want)


def _mlnx_qos(text: str, want: dict[str, Any]) -> None:
    qos = parse_mlnx_qos(text)
    _check("mlnx_qos", {"trust": qos.trust, "dcbx_mode": qos.dcbx_mode, "pfc_enabled": qos.pfc_enabled,
                        "priority_tc": {str(k): v for k, v in qos.priority_tc.items()}}, want)


def _llama_rdma(text: str, want: dict[str, Any]) -> None:
    from strixwizard.deploy.stacks.llama_rpc.llama import RdmaEvidence

    ev = RdmaEvidence.of(text)
    _check("llama.cpp RDMA", {"probed": ev.probed, "activated": ev.activated,
                              "errors": ev.errors}, want)


def _devinfo_limits(text: str, want: dict[str, Any]) -> None:
    _check("ibv_devinfo -v max_qp", dict(parse_device_limits(text)), want)


def _libibverbs_warnings(text: str, want: list[dict[str, Any]]) -> None:
    got = [{k: v for k, v in vars(w).items() if k != "line"} for w in parse_provider_warnings(text)]
    assert got == want, f"libibverbs warnings: read {got}, wanted {want}"


def _rpc_cache(text: str, want: dict[str, Any]) -> None:
    _check("RPC cache survey", vars(parse_rpc_cache(text)), want)


def _llama_workers(text: str, want: dict[str, Any]) -> None:
    from strixwizard.deploy.stacks.llama_rpc.llama import rpc_endpoints_holding_layers

    _check("llama-server RPC devices", {"endpoints": rpc_endpoints_holding_layers(text)}, want)


READERS = {"sockperf": _sockperf, "qperf": _qperf, "perftest": _perftest, "perftest_json": _perftest_json,
           "collective": _collective,
           "transport": _transport, "verdict": _verdict,
           # node-level outputs, read through the public fact parsers
           "ibv_devinfo": _ibv_devinfo, "ethtool_i": _ethtool_i, "ethtool_S": _ethtool_s,
           "sysfs_counters_ttar": _sysfs_counters_ttar, "mlnx_qos": _mlnx_qos,
           "sysfs_counters_grep": _sysfs_counters_grep, "rdma_link": _rdma_link,
           "rpc_cache": _rpc_cache, "devinfo_limits": _devinfo_limits,
           "libibverbs_warnings": _libibverbs_warnings,
           # llama.cpp's RPC logs, read by the deploy smoke test's readers
           "llama_rdma": _llama_rdma, "llama_workers": _llama_workers}


@pytest.mark.parametrize("entry", INDEX, ids=[e["file"] for e in INDEX])
def test_sample_reads_as_the_index_says(entry: dict[str, Any]) -> None:
    assert entry["expect"], f"{entry['file']}: the index states no reading"
    text = _text(entry)
    for reader, want in entry["expect"].items():
        READERS[reader](text, want)


def test_every_sample_is_indexed_with_its_provenance() -> None:
    files = {p.name for p in REAL.glob("*.txt")}
    indexed = [e["file"] for e in INDEX]
    assert sorted(indexed) == sorted(set(indexed)), "a sample is indexed twice"
    assert files == set(indexed)
    for entry in INDEX:
        assert entry["source"] and entry["reading"] and entry["trimmed"], entry["file"]


def render_index() -> str:
    lines = [
        "# Published tool outputs",
        "",
        "Byte-exact excerpts of outputs people published (GitHub issues and pull requests,",
        "documentation, other projects' test fixtures), read by the parsers of",
        "`strixwizard/live/` in `tests/test_real_outputs.py`. Nothing here was written or",
        "cleaned up for the tests: where a sample is an excerpt, whole lines were cut at its",
        "ends (or as the *trimmed* column says), never inside. Excerpts of issue threads",
        "are the thread text as the issue index stores it. `index.json` holds the",
        "expected readings; this file is rendered from it",
        "(`python -m tests.test_real_outputs`).",
        "",
        "| file | tool | source | version | trimmed | the right reading | misread before |",
        "|---|---|---|---|---|---|---|",
    ]
    for e in INDEX:
        cells = [f"`{e['file']}`", e["tool"], e["source"], e["version"], e["trimmed"], e["reading"],
                 e["misread_before"] or "—"]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    counts: dict[str, int] = {}
    for e in INDEX:
        counts[e["tool"]] = counts.get(e["tool"], 0) + 1
    lines += ["", "Samples per tool: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
              + f" ({len(INDEX)} in all).", ""]
    return "\n".join(lines)


def test_index_md_is_rendered_from_index_json() -> None:
    assert (REAL / "INDEX.md").read_text(encoding="utf-8") == render_index(), (
        "INDEX.md is stale: run python -m tests.test_real_outputs")


if __name__ == "__main__":
    (REAL / "INDEX.md").write_text(render_index(), encoding="utf-8")
    sys.exit(0)

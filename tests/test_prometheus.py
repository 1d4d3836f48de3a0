"""`doctor --prometheus` and `test --prometheus`: a node_exporter textfile that
prometheus_client's own parser reads back, carrying the same figures as the JSON; written
atomically; `doctor` without the flag never imports prometheus_client. On a full disk the export
fails in one line and the verdict line says so; a hostile bundle's words keep their escaping in
the textfile and the HTML report."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from strixwizard import __version__
from strixwizard.cli.prometheus import write_metrics
from strixwizard.present.prometheus import STATUS_VALUES, counter_deltas, live_test_registry
from tests.support.cli import invoke
from tests.support.hostile import strings
from tests.support.hostile.bundles import hostile_bundle
from tests.support.hostile.strings import FIRMWARE, KERNEL

Samples = dict[str, list[tuple[dict[str, str], float]]]


def _samples(path: Path) -> Samples:
    out: Samples = {}
    for family in text_string_to_metric_families(path.read_text(encoding="utf-8")):
        for sample in family.samples:
            out.setdefault(sample.name, []).append((dict(sample.labels), sample.value))
    return out


def _value(samples: Samples, name: str, **labels: str) -> float:
    found = [v for ls, v in samples[name] if all(ls.get(k) == want for k, want in labels.items())]
    assert len(found) == 1, (name, labels, samples.get(name))
    return found[0]


def test_status_mapping_is_the_worst_status_order() -> None:
    assert STATUS_VALUES == {"pass": 0, "skip": 1, "warn": 2, "error": 3, "fail": 4}


def test_doctor_textfile_carries_what_the_json_says(tmp_path: Path) -> None:
    prom = tmp_path / "strixwizard.prom"
    result = invoke("doctor", "--demo", "--json", "--prometheus", str(prom))
    doc = result.json()
    assert result.rc == 1 and doc["status"] == "fail"
    samples = _samples(prom)
    assert _value(samples, "strixwizard_info", command="doctor") == 1
    assert samples["strixwizard_info"][0][0]["version"] == __version__
    assert _value(samples, "strixwizard_doctor_status", site="demo") == STATUS_VALUES["fail"]
    assert _value(samples, "strixwizard_doctor_exit_code", site="demo") == 1
    assert _value(samples, "strixwizard_doctor_last_run_timestamp_seconds", site="demo") > 1.7e9
    for status, count in doc["summary"].items():
        assert _value(samples, "strixwizard_doctor_checks", status=status) == count
    for check in doc["checks"]:
        value = _value(samples, "strixwizard_check_status", check=check["id"], host=check["host"] or "",
                       entity=check["entity"] or "")
        assert value >= STATUS_VALUES[check["status"]]
    failing = [c for c in doc["checks"] if c["status"] == "fail"]
    assert failing and all(_value(samples, "strixwizard_check_status", check=c["id"],
                                  entity=c["entity"] or "", host=c["host"] or "") == 4 for c in failing)
    for host in doc["hosts"]:
        assert _value(samples, "strixwizard_host_reachable", host=host["name"]) == 1
    for link in doc["links"]:
        assert _value(samples, "strixwizard_link_status", link=link["id"]) == STATUS_VALUES[link["status"]]


def test_test_textfile_carries_the_links_figures(tmp_path: Path) -> None:
    prom = tmp_path / "test.prom"
    result = invoke("test", "latency", "--demo", "--json", "--seconds", "0.3", "--no-references",
                     "--prometheus", str(prom))
    doc = result.json()
    assert result.rc == 0, result.stderr
    samples = _samples(prom)
    assert _value(samples, "strixwizard_test_status", command="test latency") == STATUS_VALUES["pass"]
    assert _value(samples, "strixwizard_test_exit_code", site="demo") == 0
    for r in doc["results"]:
        labels = {"a": r["pair"][0], "b": r["pair"][1], "transport": r["transport"], "tool": r["tool"]}
        stats = r["latency_us"]
        medians = [v for lab, v in samples.get("strixwizard_link_latency_median_microseconds", [])
                   if all(lab.get(k) == w for k, w in labels.items())]
        # the demo's recorded TCP baseline is a published average: no median is made up for it
        assert medians == ([] if stats["median"] is None else [stats["median"]])
        if stats["p99"] is not None:  # a published reference gives its average alone
            assert _value(samples, "strixwizard_link_latency_p99_microseconds", **labels) == stats["p99"]
        if r["role"] == "verdict":
            assert _value(samples, "strixwizard_test_result_status", **labels) == STATUS_VALUES[r["status"]]
    assert "strixwizard_fabric_counter_delta" not in samples  # no counters in this document


def test_bandwidth_and_counter_deltas_in_either_shape(tmp_path: Path) -> None:
    document: dict[str, Any] = {
        "site": "lab", "command": "test bandwidth", "status": "pass", "exit_code": 0,
        "generated_at": "2026-01-02T03:04:05+00:00",
        "results": [{"kind": "bandwidth", "transport": "rdma", "tool": "ib_write_bw", "pair": ["n1", "n2"],
                     "role": "verdict", "status": "pass", "bandwidth_gbps": 92.5, "latency_us": None,
                     "source": "measured"}],
        "counters": [{"host": "n1", "device": "rocep1s0/1", "counter": "out_of_sequence", "before": 1,
                      "after": 4, "delta": 3, "kind": "sequence"},
                     {"host": "n2", "device": "enp1s0", "deltas": {"rx_prio3_pause": 12, "bad": "x"}},
                     "nonsense"],
    }
    path = tmp_path / "t.prom"
    write_metrics(path, live_test_registry(document))
    samples = _samples(path)
    assert _value(samples, "strixwizard_link_bandwidth_gbps", a="n1", b="n2") == 92.5
    assert _value(samples, "strixwizard_test_last_run_timestamp_seconds", site="lab") == 1767323045
    assert _value(samples, "strixwizard_fabric_counter_delta", host="n1", counter="out_of_sequence",
                  kind="sequence") == 3
    assert _value(samples, "strixwizard_fabric_counter_delta", host="n2", device="enp1s0",
                  counter="rx_prio3_pause") == 12
    assert len(samples["strixwizard_fabric_counter_delta"]) == 2
    nested = {"n1": {"rocep1s0/1": {"cnpHandled": 7, "x": None}}, "n2": "junk"}
    assert list(counter_deltas(nested)) == [("n1", "rocep1s0/1", "cnpHandled", "", 7.0)]
    assert list(counter_deltas(None)) == [] and list(counter_deltas("x")) == []


def test_decode_predictions_are_metrics(tmp_path: Path) -> None:
    decode = {"model": {"name": "Llama-3.1-70B"}, "predictions": [
        {"transport": "rdma", "tp": 2, "batch": 1, "tokens_per_s": 7.25, "t_comm_ms": 12.0,
         "t_comp_ms": 120.0, "comm_share": 0.0909, "source": "recorded", "fits": True},
        {"transport": "tcp", "tp": 2, "batch": 1, "tokens_per_s": 5.5, "source": "estimated"}]}
    path = tmp_path / "t.prom"
    write_metrics(path, live_test_registry({"site": "lab", "status": "pass", "decode": decode}))
    samples = _samples(path)
    assert _value(samples, "strixwizard_decode_predicted_tokens_per_second", transport="rdma", tp="2",
                  batch="1", source="recorded", model="Llama-3.1-70B") == 7.25
    assert _value(samples, "strixwizard_decode_predicted_tokens_per_second", transport="tcp") == 5.5
    assert _value(samples, "strixwizard_decode_comm_share", transport="rdma") == 0.0909
    assert len(samples["strixwizard_decode_comm_share"]) == 1  # no share given for tcp
    write_metrics(path, live_test_registry({"site": "lab", "status": "pass"}))
    assert "strixwizard_decode_predicted_tokens_per_second" not in _samples(path)


def test_names_are_escaped_label_values(tmp_path: Path) -> None:
    hostile = 'n"1\\\nx{}'
    document = {"site": hostile, "status": "pass", "results": [
        {"kind": "latency", "transport": "tcp", "tool": "t", "pair": [hostile, "b"], "role": "verdict",
         "status": "pass", "latency_us": {"median": 5.0, "p99": 9.0}, "source": "measured"}]}
    path = tmp_path / "t.prom"
    write_metrics(path, live_test_registry(document))
    assert _value(_samples(path), "strixwizard_link_latency_median_microseconds", a=hostile) == 5.0


def test_file_is_replaced_atomically_and_bad_paths_are_refused(tmp_path: Path) -> None:
    prom = tmp_path / "strixwizard.prom"
    prom.write_text("old\n")
    assert invoke("doctor", "--demo", "--prometheus", str(prom)).rc == 1
    assert "strixwizard_doctor_status" in prom.read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["strixwizard.prom"]  # no temporary left
    assert prom.stat().st_mode & 0o777 == 0o644  # node_exporter reads it as its own user
    wrong = invoke("doctor", "--demo", "--prometheus", str(tmp_path / "x.txt"))
    assert wrong.rc == 2 and "must end in .prom" in wrong.stderr
    missing = invoke("test", "latency", "--demo", "--json", "--prometheus", str(tmp_path / "no" / "x.prom"))
    assert missing.rc == 2 and "no such folder" in missing.stderr
    assert missing.json()["status"] == "error"


def test_doctor_does_not_import_prometheus_client_without_the_flag() -> None:
    code = ("import sys, io, contextlib\nfrom strixwizard.cli.main import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n    main(['doctor', '--demo', '--json'])\n"
            "print('prometheus_client' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          timeout=60)
    assert done.stdout.strip() == "False"


def test_prometheus_and_html_keep_their_escaping(tmp_path: Path) -> None:
    """The textfile and the HTML report held before issue 22 (markup escaped); the HTML and
    Markdown reports now spell control characters out too, as the terminal does."""
    from prometheus_client.parser import text_string_to_metric_families

    from strixwizard.present.report import to_html
    from strixwizard.services.discover import discover
    from strixwizard.services.nodes import RunRequest

    paths = hostile_bundle(tmp_path / "bundle", KERNEL, FIRMWARE)
    prom = tmp_path / "doctor.prom"
    result = invoke("doctor", "--snapshot", *map(str, paths), "--prometheus", str(prom))
    assert result.rc == 1, result.stderr
    text = prom.read_text()
    assert not strings.contains_control(text)
    labels = [v for family in text_string_to_metric_families(text) for sample in family.samples
              for v in sample.labels.values()]
    assert labels  # it parses, every label value whole
    report = discover(RunRequest(snapshots=tuple(paths)), None, plan=False).report
    html = to_html(report)
    assert "[@click=app.screenshot(&#x27;owned.conf&#x27;" in html and "\\x1b]52;c;" in html
    assert not strings.contains_control(html)


# -- exports on a full disk ---------------------------------------------------------------
# Exports never lie about the verdict: a `--prometheus` textfile on a full disk (a 64 KiB tmpfs
# mounted under the test's temp dir and filled with a real file) is one line naming the path and
# the errno, exit 2, no traceback, the verdict line printed after the export and saying so, the
# previous textfile intact and no temporary file left beside it.

@pytest.fixture
def full_dir(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "full"
    folder.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "swexport", str(folder)], check=True)
    try:
        (folder / "old.prom").write_text("# the previous run's file\n")
        with contextlib.suppress(OSError), open(folder / "filler", "wb", buffering=0) as handle:
            while True:
                handle.write(b"\0" * 4096)
        yield folder
    finally:
        if subprocess.run(["umount", str(folder)], check=False).returncode != 0:
            subprocess.run(["umount", "-l", str(folder)], check=False)


def _left_alone(folder: Path) -> None:
    assert sorted(p.name for p in folder.iterdir()) == ["filler", "old.prom"]
    assert (folder / "old.prom").read_text() == "# the previous run's file\n"


def test_doctor_prometheus_on_a_full_disk_is_one_line_and_exit_2(full_dir: Path) -> None:
    prom = full_dir / "old.prom"
    result = invoke("doctor", "--demo", "--prometheus", str(prom))
    assert result.rc == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    (line,) = [x for x in result.stderr.splitlines() if "not written" in x]
    assert line == (f"strixwizard: error: --prometheus {prom} not written: {prom}: No space left "
                    "on device (errno 28 ENOSPC) (exit 2)")
    _left_alone(full_dir)


def test_test_prometheus_on_a_full_disk_says_so_in_the_verdict_line(full_dir: Path) -> None:
    prom = full_dir / "old.prom"
    result = invoke("test", "latency", "--demo", "--seconds", "0.3", "--no-references",
                     "--prometheus", str(prom))
    assert result.rc == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    last = result.stdout.strip().splitlines()[-1]
    assert last == (f"verdict: pass, but --prometheus {prom} not written: {prom}: No space left "
                    "on device (errno 28 ENOSPC) (exit 2)"), result.stdout
    assert "verdict: pass (exit 0)" not in result.stdout
    _left_alone(full_dir)
    as_json = invoke("test", "latency", "--demo", "--seconds", "0.3", "--no-references", "--json",
                      "--prometheus", str(prom))
    assert as_json.rc == 2 and "No space left on device" in as_json.json()["export_error"]
    _left_alone(full_dir)

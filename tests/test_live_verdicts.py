"""A test run's verdict and the summary a person reads: a run that measured nothing it was
asked to judge has no verdict (exit 2), in words; a run is judged on what it was asked
(`--transport tcp`); the matrix counts its rounds; the headline names the cause."""

from __future__ import annotations

import io

from strixwizard.live.report import MeasurementReport as RunReport
from strixwizard.live.results import Measurement, cause, exit_code, overall_status
from strixwizard.model import Status
from strixwizard.present.measure import print_summary
from strixwizard.site import Thresholds
from tests.support.cli import invoke

NO_LINK = "no fabric link found between node1 and node2 (no interfaces in a shared subnet)"


def _tcp(status: Status = Status.PASS) -> Measurement:
    return Measurement("latency", "tcp", "strixwizard tcp ping-pong", ("node1", "node2"), status,
                       "TCP: median one-way 30.00 µs, within the 150 µs limit", figure=30.0, unit="µs")


def _rdma_skip() -> Measurement:
    return Measurement("latency", "rdma", "ib_write_lat", ("node1", "node2"), Status.SKIP,
                       f"RDMA not measured: {NO_LINK}", unit="µs")


def _rdma_pass() -> Measurement:
    return Measurement("latency", "rdma", "ib_write_lat", ("node0", "node1"), Status.PASS,
                       "RDMA: median one-way 5.19 µs", figure=5.19, unit="µs")


def test_rdma_never_measured_is_no_verdict_not_skip() -> None:
    results = [_tcp(), _rdma_skip()]
    assert exit_code(results) == 2
    assert overall_status(results) is Status.ERROR
    report = RunReport("latency", "lab", Thresholds(), results)
    out = io.StringIO()
    print_summary(report, out)
    text = out.getvalue()
    assert "verdict: skip" not in text and "exit 0" not in text
    assert ("no verdict (exit 2): RDMA was never measured (node1 ⇄ node2: RDMA not measured: "
            f"{NO_LINK})") in text
    assert "--transport tcp" in text
    assert report.to_json()["status"] == "error" and report.to_json()["exit_code"] == 2


def test_rdma_measured_on_one_pair_keeps_the_verdict() -> None:
    results = [_tcp(), _rdma_skip(), _rdma_pass()]
    assert exit_code(results) == 0 and overall_status(results) is Status.SKIP
    assert exit_code([_tcp(Status.FAIL), _rdma_skip()]) == 1


def test_tcp_only_run_is_judged_on_tcp() -> None:
    assert exit_code([_tcp()]) == 0 and overall_status([_tcp()]) is Status.PASS


def test_demo_transport_tcp_measures_tcp_alone() -> None:
    result = invoke("test", "latency", "--demo", "--seconds", "0.5", "--no-references", "--json",
                     "--transport", "tcp")
    doc = result.json()
    assert result.rc == 0 and doc["status"] == "pass"
    assert {r["transport"] for r in doc["results"]} == {"tcp"}


def test_transport_tcp_is_refused_for_bandwidth() -> None:
    result = invoke("test", "bandwidth", "--demo", "--transport", "tcp")
    assert result.rc == 2 and "--transport tcp applies to latency, matrix and decode" in result.stderr


def test_one_round_of_the_matrix_is_one_round() -> None:
    from strixwizard.live.report import MeasurementReport
    from strixwizard.present.measure import print_summary
    from strixwizard.site import Thresholds

    report = MeasurementReport(command="matrix", site="demo", thresholds=Thresholds())
    report.matrix = {"nodes": ["a", "b"], "rounds": [[["a", "b"]]], "elapsed_s": 1.0,
                     "tcp_latency_us": {"a": {"b": 9.0}, "b": {"a": 9.0}},
                     "rdma_latency_us": {"a": {}, "b": {}}}
    out = io.StringIO()
    print_summary(report, out)
    assert "Matrix (1 round, 1.0 s)" in out.getvalue()


def _m(status: Status, summary: str, transport: str = "tcp", kind: str = "latency",
       figure: float | None = 1.0) -> Measurement:
    return Measurement(kind, transport, "t", ("node0", "node1"), status, summary, figure=figure)


def test_the_headline_names_the_cause() -> None:
    broken = [_m(Status.PASS, "ok"), _m(Status.ERROR, "mpirun is not installed on node0", "rdma", "rccl",
                                        None)]
    assert cause(broken).startswith("mpirun is not installed on node0 (node0 ⇄ node1 RDMA rccl")
    assert cause([_m(Status.PASS, "ok"), _m(Status.FAIL, "RDMA: 12 µs, over", "rdma")]).startswith(
        "RDMA: 12 µs, over (node0 ⇄ node1 RDMA latency")
    never = [_m(Status.PASS, "ok"), _m(Status.SKIP, "RDMA not measured: no link", "rdma", figure=None)]
    assert cause(never).startswith("RDMA was never measured")
    assert cause([_m(Status.PASS, "ok")]).startswith("every judged figure within its limit")

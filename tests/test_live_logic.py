"""Verdict edges, scheduling, history, the supervisor, the verbs exchange, and the CLI's demo."""

from __future__ import annotations

import itertools
import math
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import cast

import pytest

from strixwizard.live.history import History
from strixwizard.live.results import (
    REPLAYED,
    LatencyStats,
    Measurement,
    exit_code,
    stats_from_samples,
)
from strixwizard.live.schedule import rounds
from strixwizard.live.tcp import TcpSettings, tcp_latency
from strixwizard.live.verdict import judge_bandwidth, judge_rdma_latency, judge_tcp_latency, ratio_text
from strixwizard.model import Status
from strixwizard.node.local import LocalSession
from strixwizard.onnode import verbs_pingpong
from strixwizard.site import Thresholds
from tests.support.cli import invoke

T = Thresholds()


def stats(median: float | None) -> LatencyStats:
    return LatencyStats(None, median, median, None, None, None)


# -- verdicts ---------------------------------------------------------------------
@pytest.mark.parametrize(("median", "status"), [
    (7.99, Status.PASS), (8.0, Status.PASS), (8.01, Status.FAIL), (0.0, Status.PASS),
    (None, Status.ERROR), (math.nan, Status.ERROR), (math.inf, Status.ERROR), (-1.0, Status.ERROR),
])
def test_rdma_latency_edges(median: float | None, status: Status) -> None:
    got, summary = judge_rdma_latency(stats(median), T)
    assert got is status
    if status is Status.FAIL:
        assert "over the 8 µs limit" in summary


def test_tcp_latency_uses_the_site_threshold() -> None:
    assert judge_tcp_latency(stats(150.0), T)[0] is Status.PASS
    assert judge_tcp_latency(stats(150.5), T)[0] is Status.FAIL
    assert judge_tcp_latency(stats(60.0), Thresholds(tcp_latency_us=50))[0] is Status.FAIL


@pytest.mark.parametrize(("gbps", "rate", "status"), [
    (80.0, 100.0, Status.PASS), (79.99, 100.0, Status.FAIL), (50.64, 100.0, Status.FAIL),
    (24.0, 25.0, Status.PASS), (50.0, None, Status.SKIP), (50.0, 0.0, Status.SKIP),
    (None, 100.0, Status.ERROR),
])
def test_bandwidth_edges(gbps: float | None, rate: float | None, status: Status) -> None:
    got, summary = judge_bandwidth(gbps, rate, T)
    assert got is status
    if status is Status.FAIL:
        assert "below the 80% wanted" in summary


def test_ratio_says_which_is_faster_in_plain_words() -> None:
    ratio, text = ratio_text(5.0, 100.0)
    assert ratio == 0.05 and "RDMA is 20.0x faster than TCP (it takes 0.05x the time)" in text
    ratio, text = ratio_text(5.19, 3.0)  # RDMA slower: said so, never "RDMA is 0.6x faster"
    assert ratio is not None and ratio > 1
    assert "TCP is 1.7x faster than RDMA (RDMA takes 1.73x the time of TCP)" in text
    assert "RDMA is 0." not in text
    assert ratio_text(None, 100.0)[0] is None


def test_stats_match_perftests_nearest_rank() -> None:
    s = stats_from_samples(float(x) for x in range(1, 1001))
    assert (s.min_us, s.median_us, s.p99_us, s.p999_us, s.max_us) == (1, 501, 991, 1000, 1000)
    assert s.avg_us == 500.5 and s.samples == 1000
    assert stats_from_samples([]).median_us is None


def _m(status: Status | None, role: str = "verdict") -> Measurement:
    return Measurement("latency", "tcp", "t", ("a", "b"), status, "", role=role)


def test_exit_codes() -> None:
    assert exit_code([_m(Status.PASS), _m(None, "reference")]) == 0
    assert exit_code([_m(Status.PASS), _m(Status.FAIL)]) == 1
    assert exit_code([_m(Status.ERROR), _m(Status.FAIL)]) == 1
    assert exit_code([_m(Status.PASS), _m(Status.ERROR)]) == 2
    assert exit_code([_m(Status.SKIP)]) == 2
    assert exit_code([]) == 2
    assert exit_code([_m(Status.PASS), _m(Status.SKIP)]) == 0


# -- scheduling ---------------------------------------------------------------------
@pytest.mark.parametrize("n", [2, 3, 4, 5, 8, 9, 16])
def test_rounds_cover_every_pair_once_and_no_node_twice_per_round(n: int) -> None:
    nodes = [f"n{i}" for i in range(n)]
    schedule = rounds(nodes)
    assert len(schedule) == (n - 1 if n % 2 == 0 else n)
    seen = [frozenset(p) for r in schedule for p in r]
    assert sorted(map(sorted, seen)) == sorted(map(sorted, map(frozenset, itertools.combinations(nodes, 2))))
    assert len(seen) == len(set(seen))
    for r in schedule:
        members = [x for p in r for x in p]
        assert len(members) == len(set(members))
        assert len(r) == n // 2


def test_rounds_edge_cases() -> None:
    assert rounds([]) == [] and rounds(["a"]) == []
    assert rounds(["a", "b"]) == [[("a", "b")]]
    with pytest.raises(ValueError):
        rounds(["a", "a"])


# -- history -----------------------------------------------------------------------
def _lat(figure: float, status: Status, source: str = "measured") -> Measurement:
    return Measurement("latency", "rdma", "ib_write_lat", ("node0", "node1"), status, "", figure=figure,
                       unit="µs", source=source)


def test_history_compares_with_the_last_good_run(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "history.sqlite"
    with History(path) as history:
        assert history.compare("lab", [_lat(5.0, Status.PASS)])[0].last_good_figure is None
        history.record("lab", "test latency", "2026-01-01T00:00:00+00:00", Status.PASS,
                       [_lat(5.0, Status.PASS)])
        history.record("lab", "test latency", "2026-01-02T00:00:00+00:00", Status.FAIL,
                       [_lat(12.0, Status.FAIL)])
        history.record("other", "test latency", "2026-01-03T00:00:00+00:00", Status.PASS,
                       [_lat(1.0, Status.PASS)])
        assert history.record("lab", "x", "t", Status.PASS, [_lat(1.0, Status.PASS, REPLAYED)]) is None
        (cmp,) = history.compare("lab", [Measurement("latency", "rdma", "ib_write_lat", ("node1", "node0"),
                                                     Status.FAIL, "", figure=6.5, unit="µs")])
        assert cmp.last_good_figure == 5.0 and cmp.last_good_at == "2026-01-01T00:00:00+00:00"
        assert cmp.change == pytest.approx(0.3)
        assert "+30%, worse" in cmp.summary
        assert len(history.runs("lab")) == 2


# -- supervisor and TCP on loopback ---------------------------------------------------
def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def test_stop_ends_the_supervised_program() -> None:
    host = LocalSession()
    process = host.start(["sleep", "30"], 60, "sleep")
    deadline = time.monotonic() + 5
    while not process.supervisor_notes and time.monotonic() < deadline:
        time.sleep(0.02)
    notes = process.supervisor_notes
    pid = int(notes[0].rsplit(" ", 1)[1])
    assert _alive(pid)
    started = time.monotonic()
    process.stop()
    assert time.monotonic() - started < 5
    deadline = time.monotonic() + 5
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid)
    assert process.status == 125


def test_the_time_limit_ends_a_hung_program() -> None:
    process = LocalSession().start(["sleep", "30"], 0.5, "sleep")
    assert process.wait(10)
    assert process.status == 124
    assert any("time limit" in n for n in process.supervisor_notes)


def test_a_missing_program_is_reported_not_installed() -> None:
    process = LocalSession().start(["strixwizard-no-such-tool"], 5)
    assert process.wait(10) and process.status == 127


def test_tcp_pingpong_on_loopback_reports_one_way_percentiles() -> None:
    host = LocalSession()
    m = tcp_latency(host, host, ("a", "b"), "127.0.0.1", "loopback", T,
                    TcpSettings(round_trips=2000, warmup=100, seconds=3))
    assert m.status is Status.PASS, m.summary
    assert m.latency is not None and m.latency.samples == 2000
    assert 0 < m.latency.min_us <= m.latency.median_us <= m.latency.p99_us <= m.latency.max_us  # type: ignore[operator]
    assert m.detail["size_bytes"] == 64


def test_tcp_fixed_port_in_use_falls_back_and_says_so() -> None:
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    port = busy.getsockname()[1]
    try:
        host = LocalSession()
        m = tcp_latency(host, host, ("a", "b"), "127.0.0.1", "loopback", T,
                        TcpSettings(round_trips=200, warmup=10, seconds=2, port=port))
    finally:
        busy.close()
    assert m.status is Status.PASS
    assert m.detail["note"] == f"port {port} on localhost was in use; used a free port instead"
    assert m.detail["port"] != port


def test_tcp_to_nobody_is_an_error_not_a_pass() -> None:
    host = LocalSession()
    m = tcp_latency(host, host, ("a", "b"), "127.0.0.2", "loopback", T,
                    TcpSettings(round_trips=10, warmup=1, seconds=1, start_timeout=3))
    # 127.0.0.2 is loopback too: the server listens there and it works; a bad address must not
    bad = tcp_latency(host, host, ("a", "b"), "192.0.2.1", "nowhere", T,
                      TcpSettings(round_trips=10, warmup=1, seconds=1, start_timeout=3))
    assert m.status is Status.PASS
    assert bad.status is Status.ERROR and "the TCP server did not start" in bad.summary


# -- native verbs ping-pong: only what this machine can run --------------------------------
def test_verbs_pingpong_says_no_rdma_devices_here() -> None:
    """This kernel has no RDMA at all: the verbs path can only be tested up to here."""
    pyverbs_path = "/usr/lib/python3/dist-packages"
    env = dict(os.environ, PYTHONPATH=pyverbs_path)
    done = subprocess.run(
        [sys.executable, "-c", Path(verbs_pingpong.__file__).read_text(), "server", "rocep194s0", "1", "1",
         "127.0.0.1", "0", "64", "10", "1", "2"],
        capture_output=True, text=True, timeout=30, env=env, check=False)
    assert done.returncode == 3
    assert '"no_device": true' in done.stdout
    assert "no RDMA devices on this node" in done.stdout or "pyverbs is not installed" in done.stdout


def test_verbs_connection_data_exchange_over_tcp() -> None:
    left, right = socket.socketpair()
    mine = {"qpn": 17, "psn": 0x1234, "gid": "::ffff:192.168.100.1", "lid": 0, "rkey": 5, "addr": 4096,
            "size": 64}
    theirs = {**mine, "qpn": 18, "gid": "::ffff:192.168.100.2"}
    got: dict[str, object] = {}
    thread = threading.Thread(target=lambda: got.update(verbs_pingpong.exchange(right, theirs)))
    thread.start()
    assert verbs_pingpong.exchange(left, mine) == theirs
    thread.join(5)
    assert got == mine
    left.close()
    right.close()


def test_verbs_exchange_rejects_incomplete_or_oversized_data() -> None:
    left, right = socket.socketpair()
    verbs_pingpong.send_message(right, {"qpn": 1})
    with pytest.raises(ValueError, match="lacks psn"):
        verbs_pingpong.exchange(left, {"qpn": 2})
    right.sendall((1 << 30).to_bytes(4, "big"))
    with pytest.raises(ValueError, match="too large"):
        verbs_pingpong.receive_message(left)
    right.close()
    with pytest.raises(ConnectionError):
        verbs_pingpong.receive_message(left)
    left.close()


class _FakeEnd:
    """Stand-in for the verbs Endpoint (no RDMA here): `write` puts the sequence byte at the
    end of the given slot of the peer's buffer, as an RDMA write of the whole slot would."""

    def __init__(self, size: int) -> None:
        self.size, self.buffer, self.peer = size, bytearray(2 * size), cast("_FakeEnd", None)
        self.writes: list[tuple[int, int]] = []

    def write(self, seq: int, slot: int = 0) -> None:
        self.writes.append((seq, slot))
        self.peer.buffer[(slot + 1) * self.size - 1] = seq

    def wait_for(self, seq: int, deadline: float, slot: int = 0) -> bool:
        while self.buffer[(slot + 1) * self.size - 1] != seq:
            if time.monotonic() > deadline:
                return False
            time.sleep(0)  # let the other rank's thread run (the real one polls memory)
        return True


def test_verbs_allreduce_steps_use_a_slot_each_so_a_peer_a_step_ahead_is_never_missed() -> None:
    """Both ranks run 600 all-reduces at once (sequence bytes wrap at 255); a peer that already
    wrote step 2 must not hide its step 1, which is why each step has its own slot."""
    a, b = _FakeEnd(64), _FakeEnd(64)
    a.peer, b.peer = b, a
    deadline = time.monotonic() + 20
    done: list[bool] = []
    thread = threading.Thread(target=lambda: done.append(
        all(verbs_pingpong._allreduce(b, i, deadline) for i in range(600))))  # type: ignore[arg-type]
    thread.start()
    assert all(verbs_pingpong._allreduce(a, i, deadline) for i in range(600))  # type: ignore[arg-type]
    thread.join(20)
    assert done == [True]
    assert a.writes[:4] == [(1, 0), (2, 1), (3, 0), (4, 1)] and len(a.writes) == 1200


# -- CLI ---------------------------------------------------------------------------------
def test_demo_bandwidth_at_half_the_link_rate_is_named_capped_by_its_x4_slot() -> None:
    result = invoke("test", "bandwidth", "--demo", "--json")
    doc = result.json()
    assert result.rc == 0  # a warning: the slot is the cap, as nic.pcie_link says
    (bw,) = doc["results"]
    assert bw["status"] == "warn" and bw["bandwidth_gbps"] == 50.64 and bw["link_rate_gbps"] == 100.0
    assert "51% of the 100 Gb/s link rate" in bw["summary"]
    assert "capped by the PCIe link (63 Gb/s usable, about 50 Gb/s of RDMA)" in bw["summary"]
    assert (bw["detail"]["band"], bw["detail"]["ceiling_gbps"]) == ("pcie-capped", 50.41)


@pytest.mark.parametrize(("gbps", "rate", "pcie", "status", "band"), [
    (95.0, 100.0, 63.016, Status.PASS, "line-rate"),  # a figure above the slot's: still line rate
    (50.64, 100.0, 63.016, Status.WARN, "pcie-capped"),  # E810 in a PCIe 4.0 x4 slot
    (40.34, 100.0, 63.016, Status.WARN, "pcie-capped"),  # 80 % of the ~50 Gb/s ceiling
    (13.0, 100.0, 63.016, Status.FAIL, "degraded"),  # a 100 Gb/s link carrying 13 Gb/s
    (13.0, 100.0, 252.0, Status.FAIL, "degraded"),  # x16 slot: the link rate is the ceiling
    (50.64, 100.0, None, Status.FAIL, "degraded"),  # PCIe unknown: judged on the link rate
])
def test_bandwidth_bands_name_the_cause(gbps: float, rate: float, pcie: float | None, status: Status,
                                        band: str) -> None:
    from strixwizard.live.verdict import bandwidth_band

    got, summary = judge_bandwidth(gbps, rate, T, pcie)
    assert got is status, summary
    found = bandwidth_band(gbps, rate, T, pcie)
    assert found is not None and found.name == band
    if band == "degraded":
        assert "degraded" in summary and "below the 80% wanted" in summary
        if pcie == 63.016:
            assert "below 80% of the ~50 Gb/s its PCIe link allows" in summary


def test_demo_rccl_passes_on_net_ib() -> None:
    result = invoke("test", "rccl", "--demo", "--json")
    (r,) = result.json()["results"]
    assert result.rc == 0 and r["status"] == "pass" and r["detail"]["transport"] == "NET/IB"


def test_bad_pair_is_no_verdict_with_a_clear_message() -> None:
    result = invoke("test", "latency", "--demo", "--pair", "node-a,nope", "--json")
    assert result.rc == 2
    assert "no node 'nope' in the site" in result.json()["error"]
    assert "no node 'nope'" in result.stderr
    result = invoke("test", "latency")
    assert result.rc == 2 and "--site FILE (or --demo)" in result.stderr


def test_doctor_does_not_import_the_live_tests_heavy_parts() -> None:
    code = ("import sys; from strixwizard.cli.main import _parser; _parser(); "
            "bad = [m for m in ('paramiko', 'pyverbs', 'strixwizard.live.hosts', 'strixwizard.cli.live_run') "
            "if m in sys.modules]; print(bad)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          timeout=60)
    assert done.stdout.strip() == "[]"


def test_pairs_in_rounds_keep_disjoint_pairs_together_in_the_matrix_order() -> None:
    from strixwizard.live.schedule import in_rounds, rounds

    nodes = ["a", "b", "c", "d"]
    every = [p for r in rounds(nodes) for p in r]
    assert in_rounds(every, nodes) == rounds(nodes)
    assert in_rounds([("a", "b")], nodes) == [[("a", "b")]]
    some = in_rounds([("c", "d"), ("a", "b"), ("b", "a")], nodes)
    assert some[0] == [("a", "b"), ("c", "d")] or some[0] == [("c", "d"), ("a", "b")]
    assert some[-1] == [("b", "a")]  # not as the rounds hold it: alone, last


def test_test_latency_on_the_demo_shows_the_path_doctor_judges(tmp_path: Path) -> None:
    import json

    env = {"XDG_STATE_HOME": str(tmp_path)}
    doctor = json.loads(invoke("doctor", "--demo", "--json", env=env).stdout)
    mtu = next(c for c in doctor["checks"] if c["id"] == "link.mtu" and c["status"] == "fail")
    assert "1024" in mtu["observed"]  # node-b's port, as the snapshot has it
    done = invoke("test", "latency", "--demo", "--json", "--seconds", "0.5", "--no-history", env=env)
    rdma = next(r for r in json.loads(done.stdout)["results"] if r["transport"] == "rdma")
    assert rdma["path"].endswith("node-b:rocep194s0:1 gid 1 mtu 1024"), rdma["path"]
    assert "this site's path differs (node-b active_mtu 1024)" in rdma["detail"]["note"]

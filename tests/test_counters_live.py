"""Fabric counters read before and after a live test run (strixwizard/live/counters.py): the
collector spec, the deltas, the lossy WARN, the report's "counters" list, the text output,
the wizard's panel and the demo's recorded deltas."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from strixwizard import __version__
from strixwizard.demo.builder import FakeNode
from strixwizard.demo.hardware import connectx
from strixwizard.demo.scenarios import strix_halo_node
from strixwizard.facts.counters import CounterSet, FabricCounters
from strixwizard.live import report as live_report
from strixwizard.live.counters import (
    CORRUPT,
    LOSSY,
    Sample,
    Target,
    counters_measurement,
    sampled,
)
from strixwizard.live.results import Measurement
from strixwizard.model import Status
from strixwizard.onnode.collector import DirSink, collect
from strixwizard.present.measure import result_lines
from strixwizard.probe import Probe
from strixwizard.probe.snapshot import SnapshotProbe
from strixwizard.site import Thresholds
from strixwizard.tui.panels import panel_views
from tests.support.cli import invoke

PAIR = ("node-a", "node-b")


def rdma_latency(status: Status = Status.PASS) -> Measurement:
    return Measurement("latency", "rdma", "ib_write_lat", PAIR, status, "RDMA: median 5.2 µs",
                       figure=5.2, unit="µs")


def counters(device: str, source: str, **values: int) -> Sample:
    return Sample(FabricCounters((CounterSet(device, source, dict(values)),)))


class CapturingHost:
    """A node the counters are collected from: the real collector over a FakeNode's tree,
    whose counters change between the two reads."""

    name = "node-a"
    python = "python3"

    def __init__(self, tmp_path: Path, nodes: list[FakeNode]) -> None:
        self.tmp_path, self.nodes, self.specs = tmp_path, nodes, []  # type: ignore[var-annotated]

    def collect(self, spec: Mapping[str, Any] | None = None) -> Probe:
        assert spec is not None
        self.specs.append(spec)
        node = self.nodes.pop(0)
        root, out = self.tmp_path / f"root{len(self.specs)}", self.tmp_path / f"snap{len(self.specs)}"
        node.finish()
        node.write_root(root)
        collect(dict(spec), DirSink(os.fspath(out)), __version__, os.fspath(root), node._answer)
        return SnapshotProbe.load(out)


def cx_node(out_of_sequence: int, pause: int) -> FakeNode:
    node = strix_halo_node("cx-a")
    connectx(node, "10.10.0.1/24", "0c:42:a1:11:22:01",
             counters={"out_of_sequence": out_of_sequence, "np_cnp_sent": 2, "lifespan": 10})
    node.statistics("enp194s0f0np0", {"rx_packets": 10, "rx_prio3_pause": pause})
    node.netdev_statistics("enp194s0f0np0", {"rx_crc_errors": out_of_sequence * 2,
                                             "rx_bytes": 1000 + pause})
    return node


def test_counters_are_collected_with_a_small_spec_and_their_deltas_judged(tmp_path: Path) -> None:
    host = CapturingHost(tmp_path, [cx_node(0, 5), cx_node(3, 9)])
    target = Target(("enp194s0f0np0",), (("mlx5_0", 1),))

    def run() -> Iterator[Measurement]:
        yield rdma_latency()

    out = list(sampled(run(), {"node-a": host}, {"node-a": target}, PAIR))
    assert host.specs[0] == {
        "files": ["/sys/class/infiniband/mlx5_0/ports/1/hw_counters/*",
                  "/sys/class/infiniband/mlx5_0/ports/1/counters/*",
                  "/sys/class/net/enp194s0f0np0/statistics/*"],
        "links": ["/sys/class/infiniband/*", "/sys/class/net/*"],
        "commands": [{"argv": ["ethtool", "-S", "enp194s0f0np0"]}]}
    assert out[0].kind == "latency"
    last = out[1]
    assert last.kind == "counters" and last.status is Status.WARN and last.role == "verdict"
    assert last.summary == (f"{CORRUPT}: node-a:enp194s0f0np0 rx_crc_errors +6, "
                            "node-a:mlx5_0/1 out_of_sequence +3 while RDMA latency "
                            "node-a ⇄ node-b passed")
    rows = {(r["device"], r["counter"]): r for r in last.detail["counters"]}
    assert rows[("mlx5_0/1", "out_of_sequence")] == {
        "host": "node-a", "device": "mlx5_0/1", "counter": "out_of_sequence", "before": 0,
        "after": 3, "delta": 3, "kind": "sequence"}
    assert rows[("enp194s0f0np0", "rx_prio3_pause")]["delta"] == 4
    # the netdev statistics in sysfs, read through the same collector: CRC errors are corruption
    assert rows[("enp194s0f0np0", "rx_crc_errors")] == {
        "host": "node-a", "device": "enp194s0f0np0", "counter": "rx_crc_errors", "before": 0,
        "after": 6, "delta": 6, "kind": "corrupt"}
    assert ("enp194s0f0np0", "rx_bytes") not in rows
    assert ("enp194s0f0np0", "rx_packets") not in rows  # only health counters where there are some
    assert ("mlx5_0/1", "lifespan") not in rows


def test_growth_without_a_passing_test_or_without_errors_is_reported_not_judged() -> None:
    before = {"node-a": counters("rocep194s0/1", "hw_counters", tcpRetransSegs=1, cnpHandled=0)}
    after = {"node-a": counters("rocep194s0/1", "hw_counters", tcpRetransSegs=4, cnpHandled=7)}
    failed = counters_measurement(before, after, [rdma_latency(Status.FAIL)], PAIR)
    assert failed.status is None and failed.role == "reference"
    assert failed.summary == ("fabric counters: node-a:rocep194s0/1 tcpRetransSegs +3 "
                              "(no test passed to judge)")
    calm = {"node-a": counters("rocep194s0/1", "hw_counters", tcpRetransSegs=1, cnpHandled=7)}
    quiet = counters_measurement(before, calm, [rdma_latency()], PAIR)
    assert quiet.status is None and "no retransmit or sequence error grew" in quiet.summary
    assert "cnpHandled +7" in quiet.summary
    lost = counters_measurement(before, {"node-a": Sample(None, "counters not read: gone")},
                                [rdma_latency()], PAIR)
    assert lost.detail == {"counters": [], "notes": "counters not read: gone"}


def test_a_stream_closed_early_or_cancelled_reads_nothing_after(tmp_path: Path) -> None:
    host = CapturingHost(tmp_path, [cx_node(0, 0), cx_node(0, 0)])
    target = {"node-a": Target(("enp194s0f0np0",), ())}

    def run() -> Iterator[Measurement]:
        yield rdma_latency()

    assert [m.kind for m in sampled(run(), {"node-a": host}, target, PAIR, lambda: True)] == ["latency"]
    assert len(host.specs) == 1
    assert [m.kind for m in sampled(run(), {"node-a": object()}, target, PAIR)] == ["latency"]


def test_report_text_and_wizard_panel_show_the_deltas() -> None:
    before = {"node-b": counters("enp194s0np0", "ethtool -S", **{"link_xoff_tx.nic": 5})}
    after = {"node-b": counters("enp194s0np0", "ethtool -S", **{"link_xoff_tx.nic": 9})}
    m = counters_measurement(before, after, [rdma_latency()], PAIR)
    report = live_report.MeasurementReport("latency", "site", Thresholds(), results=[rdma_latency(), m])
    assert report.to_json()["counters"] == [
        {"host": "node-b", "device": "enp194s0np0", "counter": "link_xoff_tx.nic", "before": 5,
         "after": 9, "delta": 4, "kind": "pause"}]
    assert report.to_json()["status"] == "pass"  # pause at work is no error
    lines = result_lines(m)
    assert lines[0].startswith("  ref   node-a ⇄ node-b  FABRIC counters  ethtool -S, hw_counters:")
    assert "      node-b:enp194s0np0 link_xoff_tx.nic 5 -> 9 (+4, pause)" in lines
    view = panel_views([PAIR], [rdma_latency(), m])["counters"]
    assert view.title == "Fabric counters" and view.link == "node-a-node-b"
    assert view.counter_lines()[1] == "node-b:enp194s0np0 link_xoff_tx.nic 5 -> 9 (+4, pause)"


def test_demo_matrix_shows_recorded_counter_deltas_as_a_lossy_warning() -> None:
    result = invoke("test", "matrix", "--demo", "--seconds", "0.5", "--no-references", "--json")
    doc = result.json()
    (m,) = [r for r in doc["results"] if r["kind"] == "counters"]
    assert m["status"] == "warn" and m["source"] == "replayed recording"
    assert m["summary"].startswith(f"{LOSSY}: node-a:rocep194s0/1 ip4InDiscards +412 while RDMA")
    grown = {(c["host"], c["counter"]): c["delta"] for c in doc["counters"] if c["delta"]}
    assert grown == {("node-a", "ip4InDiscards"): 412, ("node-a", "link_xoff_rx.nic"): 1203,
                     ("node-b", "link_xoff_tx.nic"): 1203}
    text = invoke("test", "matrix", "--demo", "--seconds", "0.5", "--no-references").stdout
    assert "node-b:enp194s0np0 link_xoff_tx.nic 5120 -> 6323 (+1203, pause)" in text


def test_a_counter_that_went_backwards_is_a_reset_never_a_pass() -> None:
    """A NIC reset or driver reload mid-test: rx_discards_phy 1000 -> 7 is "growth unknown (at
    least 7 since the reset)" and a WARN naming it, never "no error grew" or "+-993"."""
    before = {"node0": counters("fab0", "ethtool -S", rx_discards_phy=1000, tx_pause=5)}
    after = {"node0": counters("fab0", "ethtool -S", rx_discards_phy=7, tx_pause=9)}
    judged = counters_measurement(before, after, [rdma_latency()], PAIR)
    assert judged.status is Status.WARN and judged.role == "verdict"
    assert "node0:fab0 rx_discards_phy reset during the test: growth unknown (at least 7 since " \
        "the reset)" in judged.summary
    assert "no retransmit or sequence error grew" not in judged.summary and "+-" not in judged.summary
    (row,) = [r for r in judged.detail["counters"] if r["counter"] == "rx_discards_phy"]
    assert row["reset"] is True and row["delta"] == 7
    unjudged = counters_measurement(before, after, [rdma_latency(Status.FAIL)], PAIR)
    assert unjudged.status is Status.WARN  # even with no passing test to judge
    lossy = {"node0": counters("fab0", "ethtool -S", rx_discards_phy=1005, tx_pause=5)}
    assert counters_measurement(before, lossy, [rdma_latency()], PAIR).status is Status.WARN


def test_ethtool_values_are_unsigned_64_bit_and_anything_else_is_dropped_with_a_note() -> None:
    from strixwizard.facts.counters import U64_MAX, fabric_counters, parse_ethtool_stats
    from strixwizard.probe import CmdResult

    text = (f"NIC statistics:\n     rx_packets: {U64_MAX}\n     rx_discards_phy: {'9' * 400}\n"
            "     tx_errors: -3\n     tx_packets: 12\n")
    parsed = parse_ethtool_stats(text)
    assert parsed == {"rx_packets": U64_MAX, "tx_packets": 12}
    assert parsed.dropped == ("rx_discards_phy", "tx_errors")

    class OneCommand:
        host = "node0"

        def read(self, path: str) -> str | None:
            return None

        def listdir(self, path: str) -> list[str]:
            return []

        def readlink(self, path: str) -> str | None:
            return None

        def run(self, argv: Sequence[str]) -> CmdResult:
            return CmdResult(tuple(argv), 0, text, "")

    found = fabric_counters(OneCommand(), ["fab0"], [])
    assert found.sets[0].values == {"rx_packets": U64_MAX, "tx_packets": 12}
    assert found.notes == ("fab0: dropped rx_discards_phy, tx_errors: not an unsigned 64-bit "
                           "value",)


def test_prometheus_numbers_never_overflow() -> None:
    from strixwizard.present.prometheus import _number, counter_deltas

    assert _number(10 ** 400) is None and _number(float("inf")) is None and _number(7) == 7.0
    rows = list(counter_deltas([{"host": "n", "device": "d", "counter": "c", "delta": 10 ** 400},
                                {"host": "n", "device": "d", "counter": "e", "delta": 3}]))
    assert rows == [("n", "d", "e", "", 3.0)]


def test_a_passing_soak_with_grown_crc_errors_is_a_warning_naming_the_link() -> None:
    """The soak found every byte right, yet the interface counted damaged frames (dropped below
    TCP and resent): WARN, not PASS, and not FAIL."""
    soak = Measurement("soak", "tcp", "strixwizard soak", PAIR, Status.PASS, "every byte checked")
    before = {"node-a": counters("thunderbolt0", "statistics", rx_crc_errors=2, rx_dropped=0)}
    after = {"node-a": counters("thunderbolt0", "statistics", rx_crc_errors=9, rx_dropped=4)}
    m = counters_measurement(before, after, [soak], PAIR)
    assert m.status is Status.WARN
    assert m.summary == (f"{CORRUPT}: node-a:thunderbolt0 rx_crc_errors +7 while TCP soak "
                         "node-a ⇄ node-b passed")
    clean = counters_measurement(before, before, [soak], PAIR)
    assert clean.status is None and clean.role == "reference"


REAL = Path(__file__).parent / "data" / "real"


def rxe_capture() -> dict[str, int]:
    """rxe0's hw_counters as the VM lab read them right after boot (a real capture, all 0):
    `grep -r . /sys/class/infiniband/rxe0/ports/1/hw_counters/`."""
    text = (REAL / "hw_counters_rxe_vmlab_grep_debian_6.1.txt").read_text()
    return {path.rsplit("/", 1)[1]: int(value)
            for path, _, value in (line.rpartition(":") for line in text.splitlines())}


def rxe_node(name: str, grown: Mapping[str, int]) -> FakeNode:
    """A soft-RoCE node whose rxe0 holds the real capture, plus `grown` (written for the test:
    the packets a latency run adds, since the capture is of an idle port)."""
    node = strix_halo_node(name)
    device = node.rdma_device("rxe0", "/sys/devices/virtual", parent_netdev="eth0")
    values = rxe_capture()
    node.hw_counters(device, 1, {k: v + grown.get(k, 0) for k, v in values.items()})
    return node


def test_rxe_packet_counters_read_around_a_run_say_what_crossed_over_rdma(tmp_path: Path) -> None:
    """The rxe capture's `sent_pkts`/`rcvd_pkts` are kept beside its error counters: the panel,
    the text report and `test --json` say how many packets the run sent and received over RDMA;
    packets are reported, never judged."""
    grown = {"sent_pkts": 2004, "rcvd_pkts": 2001, "rdma_sends": 1000}
    host = CapturingHost(tmp_path, [rxe_node("vm0", {}), rxe_node("vm0", grown)])
    target = Target((), (("rxe0", 1),))

    def run() -> Iterator[Measurement]:
        yield rdma_latency()

    out = list(sampled(run(), {"vm0": host}, {"vm0": target}, PAIR))
    assert host.specs[0]["files"] == ["/sys/class/infiniband/rxe0/ports/1/hw_counters/*",
                                      "/sys/class/infiniband/rxe0/ports/1/counters/*"]
    m = out[-1]
    assert m.kind == "counters" and m.status is None and m.role == "reference"
    rows = {r["counter"]: r for r in m.detail["counters"]}
    assert rows["sent_pkts"] == {"host": "vm0", "device": "rxe0/1", "counter": "sent_pkts",
                                 "before": 0, "after": 2004, "delta": 2004, "kind": "packets"}
    assert rows["rcvd_pkts"]["delta"] == 2001 and rows["rcvd_pkts"]["kind"] == "packets"
    assert {"rcvd_seq_err", "out_of_seq_request", "retry_exceeded_err"} <= set(rows)
    assert "rdma_sends" not in rows and "lifespan" not in rows  # work requests: not packets
    assert m.detail["rdma_packets"] == [
        {"host": "vm0", "device": "rxe0/1", "sent": 2004, "received": 2001}]
    assert m.summary == ("fabric counters: 9 read on 1 node(s) before and after, no retransmit "
                         "or sequence error grew; over RDMA: vm0:rxe0/1 sent +2004, received "
                         "+2001 packets")
    report = live_report.MeasurementReport("latency", "site", Thresholds(), results=out).to_json()
    assert report["rdma_packets"] == m.detail["rdma_packets"] and report["status"] == "pass"
    assert {(c["counter"], c["kind"]) for c in report["counters"]} >= {
        ("sent_pkts", "packets"), ("rcvd_pkts", "packets")}
    assert "      vm0:rxe0/1 sent_pkts 0 -> 2004 (+2004, packets)" in result_lines(m)
    lines = panel_views([PAIR], out)["counters"].counter_lines()
    assert lines[0] == m.summary
    assert lines[1:] == ["vm0:rxe0/1 rcvd_pkts 0 -> 2001 (+2001, packets)",
                         "vm0:rxe0/1 sent_pkts 0 -> 2004 (+2004, packets)",
                         "7 of 9 counters read did not change"]


def test_the_ib_port_packet_counters_of_mlx5_count_too_and_a_lossy_warning_keeps_them() -> None:
    """mlx5's IB port counters (prometheus/procfs's real mlx5_0 fixture) name theirs
    `port_xmit_packets`/`port_rcv_packets`; with a sequence error grown while the test passed,
    the WARN still says what crossed over RDMA (the growth is written for the test)."""
    text = (REAL / "counters_mlx5_ib_port_procfs_fixture_ttar.txt").read_text().splitlines()
    real = {line.rsplit("/", 1)[1]: int(text[i + 2]) for i, line in enumerate(text)
            if line.startswith("Path: ") and text[i + 1] == "Lines: 1"}
    grown = {**real, "port_xmit_packets": real["port_xmit_packets"] + 5000,
             "port_rcv_packets": real["port_rcv_packets"] + 4990, "symbol_error": 2}
    before = {"node-a": counters("mlx5_0/1", "counters", **real)}
    after = {"node-a": counters("mlx5_0/1", "counters", **grown)}
    m = counters_measurement(before, after, [rdma_latency()], PAIR)
    assert m.status is Status.WARN
    assert m.summary == (f"{LOSSY}: node-a:mlx5_0/1 symbol_error +2 while RDMA latency "
                         "node-a ⇄ node-b passed; over RDMA: node-a:mlx5_0/1 sent +5000, "
                         "received +4990 packets")
    assert m.detail["rdma_packets"] == [
        {"host": "node-a", "device": "mlx5_0/1", "sent": 5000, "received": 4990}]
    assert "port_xmit_data" not in {r["counter"] for r in m.detail["counters"]}  # bytes: not kept


def test_a_packet_counter_that_went_back_is_said_so_not_subtracted() -> None:
    before = {"vm0": counters("rxe0/1", "hw_counters", sent_pkts=900, rcvd_pkts=10, rcvd_seq_err=0)}
    after = {"vm0": counters("rxe0/1", "hw_counters", sent_pkts=40, rcvd_pkts=50, rcvd_seq_err=0)}
    m = counters_measurement(before, after, [rdma_latency()], PAIR)
    assert m.status is Status.WARN  # a counter reset: what it would show is unknown
    assert m.summary.endswith("; over RDMA: vm0:rxe0/1 sent reset during the test: growth unknown "
                              "(at least 40 since the reset), received +40 packets")
    assert m.detail["rdma_packets"] == [
        {"host": "vm0", "device": "rxe0/1", "sent": 40, "received": 40, "reset": True}]

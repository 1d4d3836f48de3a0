"""The demo tells one story from its recordings: RDMA beats TCP on the recorded E810 pair, every
figure beside a recording is the recording's (this machine's loopback is never judged beside
it), and a decode prediction offers only what the site's nodes can run, its "fastest" one of
its own rows. The CLI on the demo here; the wizard's Test step in tests/test_tui_walk.py and
below (Pilot)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from strixwizard.live.demo import RECORDINGS, tcp_baseline
from tests.support.cli import invoke
from tests.support.wizard import cells, make_app, notice_text, panel, settle, sync, wait_for_tests

SETUP_GUIDE = "https://github.com/kyuz0/amd-strix-halo-vllm-toolboxes/blob/main/rdma_cluster/setup_guide.md"


@pytest.fixture(autouse=True)
def state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(home))
    return home


def test_the_recorded_tcp_baseline_says_what_it_is_and_cites_its_source() -> None:
    base = tcp_baseline()
    assert (base["round_trip_us"], base["one_way_us"], base["statistic"]) == (68.0, 34.0, "average")
    assert base["source"] == SETUP_GUIDE and base["tool"] == "ping -c 10"
    # the same published table as the RDMA recording, and what it is not
    assert "Ethernet (RoCE NIC) 0.068 ms" in base["what"] and "RDMA (RoCE) 5.23 us" in base["what"]
    assert "ICMP" in base["what"] and "No published sockperf, qperf or netperf" in base["what"]
    assert "tcp_baseline" in (RECORDINGS / "README.md").read_text(encoding="utf-8")


def test_latency_on_the_demo_says_rdma_beats_tcp_with_the_recordings_figures() -> None:
    result = invoke("test", "latency", "--demo")
    assert result.rc == 0, result.stderr
    out = result.stdout
    assert "TCP latency  ping -c 10 [replayed recording]: TCP: average" in out
    assert "one-way 34.00 µs, within the 150 µs limit: half the 68 µs ping round trip" in out
    assert SETUP_GUIDE in out
    assert "RDMA latency  ib_write_lat [replayed recording]" in out
    assert ("node-a ⇄ node-b: RDMA 5.23 µs vs TCP 34.00 µs one-way (averages: one side has no "
            "median): RDMA is 6.5x faster than TCP (it takes 0.15x the time)") in out
    # nothing of this machine: no loopback, no live tool, no "0.6x faster"
    assert "loopback" not in out and "127.0.0.1" not in out and "sockperf" not in out
    assert not re.search(r"RDMA is 0\.\d+x faster", out)
    assert "node-a-node-b" not in out  # the pair is named one way: node-a ⇄ node-b


def test_latency_json_on_the_demo_has_only_recorded_figures() -> None:
    doc = invoke("test", "latency", "--demo", "--json").json()
    assert doc["status"] == "pass" and doc["demo"] is True
    assert {(r["transport"], r["source"]) for r in doc["results"]} == {
        ("tcp", "replayed recording"), ("rdma", "replayed recording")}
    (tcp,) = [r for r in doc["results"] if r["transport"] == "tcp"]
    assert tcp["role"] == "verdict" and tcp["figure"] == 34.0 and tcp["latency_us"]["avg"] == 34.0
    assert tcp["detail"]["round_trip_us"] == 68.0 and tcp["detail"]["source"] == SETUP_GUIDE
    assert "enp194s0np0" in tcp["path"] and "kernel IP stack" in tcp["path"]
    (pair,) = doc["like_for_like"]
    assert pair["ratio"] < 1 and pair["tcp"]["source"] == pair["rdma"]["source"] == "replayed recording"


def test_the_matrix_on_the_demo_grids_the_recorded_tcp_above_the_recorded_rdma() -> None:
    doc = invoke("test", "matrix", "--demo", "--json").json()
    assert doc["matrix"]["tcp_latency_us"]["node-a"]["node-b"] == 34.0
    assert doc["matrix"]["rdma_latency_us"]["node-a"]["node-b"] == 5.19
    assert all(r["source"] == "replayed recording" for r in doc["results"])
    text = invoke("test", "matrix", "--demo", "--no-history").stdout
    assert "the median (an average where none was printed or published), TCP / RDMA" in text
    assert "34.0 / 5.19" in text


def _decode_predictions(doc: dict[str, object]) -> tuple[list[dict[str, object]], dict[str, object]]:
    decode = doc["decode"]
    assert isinstance(decode, dict)
    advice = decode["advice"]
    return advice["predictions"], advice["recommendation"]


def test_decode_on_the_demo_offers_only_what_two_nodes_run_and_its_fastest_is_a_row() -> None:
    result = invoke("test", "decode", "--demo")
    assert result.rc == 0, result.stderr
    out = result.stdout
    assert "TP=4 left out: the site has 2 node(s), one rank per node" in out
    assert not re.search(r"^\s+\S+\s+\d+\s+4\s", out, re.M)  # no TP=4 row anywhere
    ways = out.split("every way to run it on this site (tok/s):")[1].split("advice:")[0]
    rows = [line.split() for line in ways.strip().splitlines()[1:]]
    assert {int(r[1]) for r in rows} == {1, 2}
    fastest = re.search(r"advice: fastest is (\S+) on (\d) node\(s\) over (\S+), ([\d.]+) tok/s", out)
    assert fastest is not None
    split, nodes, over, rate = fastest.groups()
    fitting = [r for r in rows if r[-1] == "yes"]
    assert [split, nodes, over, rate] in [r[:4] for r in fitting]
    assert float(rate) == max(float(r[3]) for r in fitting)
    # the TCP all-reduce is the recording's round trip with RCCL's socket cost, never loopback:
    # RDMA helps, as `advise` says for the same model
    assert "does RDMA help? yes" in out and "loopback" not in out
    assert "the recorded 68 µs round trip" in out


def test_decode_json_on_the_demo_keeps_every_prediction_within_the_sites_nodes() -> None:
    doc = invoke("test", "decode", "--demo", "--json").json()
    ways, recommendation = _decode_predictions(doc)
    assert max(int(str(w["nodes"])) for w in ways) == 2
    assert {p["tp"] for p in doc["decode"]["predictions"]} == {1, 2}
    best = max((w for w in ways if w["fits"]), key=lambda w: float(str(w["tok_s"])))
    assert (recommendation["split"], recommendation["nodes"], recommendation["tok_s"]) == (
        best["split"], best["nodes"], best["tok_s"])
    tcp = [p for p in doc["decode"]["collectives"] if p["transport"] == "tcp"]
    assert tcp and all(p["allreduce_us"] == 224.0 and p["source"] == "estimated" for p in tcp)


def test_a_tp_size_the_site_can_run_is_kept() -> None:
    doc = invoke("test", "decode", "--demo", "--json", "--tp", "1,2").json()
    assert {p["tp"] for p in doc["decode"]["predictions"]} == {1, 2}
    assert not any("left out" in n for n in doc["decode"]["notes"])


def test_the_html_chart_draws_the_recorded_tcp_above_the_recorded_rdma(tmp_path: Path) -> None:
    from strixwizard.charts import run_pictures

    doc = invoke("test", "latency", "--demo", "--json").json()
    html = "\n".join(run_pictures(json.loads(json.dumps(doc))))
    # each curve's average point (both recordings have one): a smaller y is drawn higher, slower
    averages = {transport: float(y) for y, transport in re.findall(
        r'<circle cx="[\d.]+" cy="([\d.]+)"[^>]*><title>(TCP|RDMA) [^<]*: average [\d.]+ µs</title>', html)}
    assert set(averages) == {"TCP", "RDMA"}, html[:2000]
    assert averages["TCP"] < averages["RDMA"]  # TCP drawn above RDMA: RDMA is the faster
    assert "loopback" not in html


def test_the_html_decode_chart_draws_the_same_ways_and_nothing_beyond_the_sites_nodes() -> None:
    from strixwizard.charts import run_pictures

    doc = invoke("test", "decode", "--demo", "--json").json()
    html = "\n".join(run_pictures(doc))
    groups = set(re.findall(r'class="tp-label"[^>]*>([^<]+)</text>', html))
    assert groups == {"1 node(s)", "2 node(s)"}  # no TP=4 on a 2-node site
    tips = re.findall(r"<title>([^<]+), (\d) node\(s\): ([\d.]+) tok/s", html)
    _, recommendation = _decode_predictions(doc)
    fastest = f"{recommendation['split']} {recommendation['interconnect']}"
    assert (fastest, "2", f"{recommendation['tok_s']:.1f}") in tips
    assert "TP = " not in html


@sync
async def test_the_wizards_test_step_on_the_demo_shows_the_recorded_pair(state_home: Path) -> None:
    from textual.widgets import DataTable, Static

    from strixwizard.tui.steps import key_of

    app = make_app(demo=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press(key_of("test"))
        await settle(app, pilot)
        await pilot.press("r")
        await pilot.pause()
        await wait_for_tests(app, pilot)
        status = " ".join(notice_text(app, "#test-status").split())
        assert "Not stored in the test history: nothing was measured" in status, status
        tcp = panel(app, "node-a-node-b:latency:tcp")
        assert tcp.border_subtitle == "replayed recording"
        assert "34.00 µs" in str(tcp.query_one(".verdict").render())
        title = str(app.screen.query_one("#title-node-a-node-b", Static).render())
        assert title == "link node-a ⇄ node-b"
        ratio = str(app.screen.query_one("#ratio-node-a-node-b", Static).render())
        assert "RDMA is 6.5x faster than TCP" in ratio and "loopback" not in ratio
        # "what this fabric buys you": ways the two nodes run, the fastest one of them, RDMA helps
        ways = cells(app.screen.query_one("#decode-ways", DataTable))
        assert ways and {int(row[1]) for row in ways} == {1, 2}
        note = str(app.screen.query_one(".decode-note", Static).render())
        fastest = re.search(r"fastest is (\S+) on (\d) node\(s\) over (\S+), ([\d.]+) tok/s", note)
        assert fastest is not None and list(fastest.groups()) in [row[:4] for row in ways], note
        assert "does RDMA help? yes" in note
        transports = [row[0] for row in cells(app.screen.query_one("#decode-tp", DataTable))]
        assert sorted(transports) == ["rdma", "tcp"]  # no "(loopback)" row
        body = " ".join(str(s.render()) for s in app.screen.query(Static))
        assert "loopback" not in body.replace("soak", "")  # the soak alone runs on this machine

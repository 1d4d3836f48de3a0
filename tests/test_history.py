"""`strixwizard history`: runs recorded through the real history API (as `strixwizard test`
records them) come back per link with their figures, a sparkline, and a regression against
the last good run; a missing or bad history file is one clear error and exit 2; the history
database and its folder are private, and a fresh install says how to fill it."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
from pathlib import Path

import pytest

from strixwizard.live.history import History
from strixwizard.live.trends import BARS, GAP, load_trends, sparkline
from strixwizard.model import Status
from tests.support.cli import invoke
from tests.support.history import PAIR, store_run


@pytest.fixture
def recorded_pair(tmp_path: Path) -> Path:
    """Two runs of site `lab`, the second slower (RDMA +30%, bandwidth -33%), TCP about the same."""
    path = tmp_path / "history.sqlite"
    store_run(path, 1, rdma=5.0, tcp=25.0, gbps=90.0)
    store_run(path, 2, rdma=6.5, tcp=26.0, gbps=60.0)
    return path


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_sparkline() -> None:
    assert sparkline([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]) == BARS
    assert sparkline([5.0, 6.5]) == "▁█"
    assert sparkline([25.0, 26.0]) == "▁▂"  # 4% is not a wall
    assert sparkline([3.0, None, 3.0]) == f"▁{GAP}▁" and sparkline([0.0, 0.0]) == "▄▄"
    assert sparkline([]) == "" and sparkline([None]) == GAP


def test_text_shows_the_trend_and_the_regression(recorded_pair: Path) -> None:
    before = recorded_pair.read_bytes()
    result = invoke("history", "--history", str(recorded_pair))
    assert result.rc == 1, result.stderr
    lines = result.stdout.splitlines()
    rdma = next(line for line in lines if "RDMA latency (ib_write_lat)" in line)
    assert "▁█" in rdma and "6.50 µs" in rdma and "REGRESSION +30%" in rdma
    assert "5.00 µs on 2026-03-01" in rdma
    tcp = next(line for line in lines if "TCP latency (strixwizard tcp ping-pong)" in line)
    assert "REGRESSION" not in tcp and "+4% against the last good run" in tcp
    bandwidth = next(line for line in lines if "RDMA bandwidth" in line)
    assert "█▁" in bandwidth and "REGRESSION -33%" in bandwidth
    assert any("runs: #1 2026-03-01T10:00 5.00 µs pass, #2 2026-03-02T10:00 6.50 µs pass" in line
               for line in lines)
    assert lines[-1] == "2 regression(s) against the last good run"
    assert recorded_pair.read_bytes() == before  # read-only


def test_json_carries_the_same(recorded_pair: Path) -> None:
    result = invoke("history", "--history", str(recorded_pair), "--json")
    doc = result.json()
    assert result.rc == 1 and doc["exit_code"] == 1 and doc["status"] == "fail" and doc["regressions"] == 2
    links = {(link["transport"], link["kind"], link["tool"]): link for link in doc["links"]}
    rdma = links[("rdma", "latency", "ib_write_lat")]
    assert [p["figure"] for p in rdma["points"]] == [5.0, 6.5] and rdma["sparkline"] == "▁█"
    assert rdma["regression"] and rdma["last_good_figure"] == 5.0 and rdma["change"] == pytest.approx(0.3)
    assert rdma["pair"] == list(PAIR) and rdma["unit"] == "µs"
    assert not links[("tcp", "latency", "strixwizard tcp ping-pong")]["regression"]
    reference = links[("tcp", "latency", "sockperf ping-pong")]
    assert reference["role"] == "reference" and reference["points"][0]["status"] is None


def test_last_good_run_skips_a_failed_one(tmp_path: Path) -> None:
    path = tmp_path / "history.sqlite"
    store_run(path, 1, rdma=5.0, tcp=25.0, gbps=90.0)
    store_run(path, 2, rdma=12.0, tcp=25.0, gbps=90.0, rdma_status=Status.FAIL)
    store_run(path, 3, rdma=5.2, tcp=25.0, gbps=90.0)
    (rdma,) = [t for t in load_trends(path) if t.transport == "rdma" and t.kind == "latency"]
    assert rdma.sparkline == "▁█▁" and not rdma.regression
    assert rdma.comparison.last_good_at == "2026-03-01T10:00:00+00:00"  # not the failed run 2
    assert invoke("history", "--history", str(path)).rc == 0


def test_site_filter_and_nothing_stored(tmp_path: Path, recorded_pair: Path) -> None:
    store_run(recorded_pair, 3, rdma=9.0, tcp=25.0, gbps=90.0, site="other")
    site = tmp_path / "site.yaml"
    site.write_text("site: lab\nnodes:\n  - name: node-a\n    host: local\n")
    doc = invoke("history", "--history", str(recorded_pair), "--site", str(site), "--json").json()
    assert {link["site"] for link in doc["links"]} == {"lab"} and doc["site"] == "lab"
    all_sites = invoke("history", "--history", str(recorded_pair))
    assert "site lab" in all_sites.stdout and "site other" in all_sites.stdout
    site.write_text("site: empty\nnodes:\n  - name: node-a\n    host: local\n")
    empty = invoke("history", "--history", str(recorded_pair), "--site", str(site))
    assert empty.rc == 2 and "no test run stored" in empty.stderr and "for site empty" in empty.stderr


def test_missing_or_bad_history_files_are_clear_errors(tmp_path: Path) -> None:
    missing = tmp_path / "nope.sqlite"
    result = invoke("history", "--history", str(missing))
    assert result.rc == 2 and f"no test history at {missing}" in result.stderr and not missing.exists()
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"this is not sqlite at all\n" * 100)
    result = invoke("history", "--history", str(garbage), "--json")
    assert result.rc == 2 and "not a strixwizard test history" in result.stderr
    assert result.json()["status"] == "error" and "Traceback" not in result.stderr
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE t (x)")
    result = invoke("history", "--history", str(other))
    assert result.rc == 2 and "not a strixwizard test history" in result.stderr
    bad_site = tmp_path / "bad.yaml"
    bad_site.write_text("site: [\n")
    assert invoke("history", "--history", str(other), "--site", str(bad_site)).rc == 2
    assert json.loads(invoke("history", "--history", str(missing), "--json").stdout)["exit_code"] == 2


def test_the_history_database_folder_is_private(tmp_path: Path) -> None:
    import stat

    from strixwizard.live.history import History

    History(tmp_path / "new" / "strixwizard" / "history.sqlite").close()
    for folder in (tmp_path / "new", tmp_path / "new" / "strixwizard"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder


def test_history_on_a_fresh_install_says_how_to_fill_it_and_the_demo_stores_its_runs(
        tmp_path: Path) -> None:
    env = {"XDG_STATE_HOME": str(tmp_path)}
    fresh = invoke("history", env=env)
    assert fresh.rc == 2
    assert "`strixwizard test soak --demo` twice, then `strixwizard history --demo`" in fresh.stderr
    empty = invoke("history", "--demo", env=env)
    assert empty.rc == 2 and "`strixwizard test soak --demo` stores one" in empty.stderr
    recorded = invoke("test", "latency", "--demo", env=env)  # replayed recordings: nothing stored
    assert recorded.rc == 0 and invoke("history", "--demo", env=env).rc == 2
    for _ in range(2):
        ran = invoke("test", "soak", "--demo", "--level", "quick", env=env)
        assert ran.rc == 0, ran.stdout + ran.stderr
    shown = invoke("history", "--demo", env=env)
    assert shown.rc in (0, 1), shown.stderr  # 1: loopback 10 % slower than the run before
    assert "strixwizard history: demo: 2 run(s) shown" in shown.stdout
    assert "node-a ⇄ node-b TCP soak" in shown.stdout
    state = tmp_path / "strixwizard"
    assert (state / "demo-history.sqlite").is_file()
    assert not (state / "history.sqlite").exists()  # the demo never joins a real site's history
    assert (state.stat().st_mode & 0o777) == 0o700


def test_history_database_is_private(tmp_path: Path) -> None:
    path = tmp_path / "state" / "strixwizard" / "history.sqlite"
    with History(path) as history:
        history.runs()
    assert mode(path) == 0o600 and mode(path.parent) == 0o700
    path.chmod(0o644)
    History(path).close()
    assert mode(path) == 0o600


def _twins(tmp_path: Path) -> dict[str, Path]:
    """What a careless `--history` may name, made by the test (never the machine's own): a twin
    of /dev/null (root only), a FIFO, a folder, a link to a file."""
    twins = {}
    if os.geteuid() == 0:
        twins["device"] = tmp_path / "null"
        os.mknod(twins["device"], stat.S_IFCHR | 0o666, os.makedev(1, 3))
    twins["fifo"] = tmp_path / "fifo"
    os.mkfifo(twins["fifo"], 0o644)
    twins["folder"] = tmp_path / "folder"
    twins["folder"].mkdir(mode=0o1777)
    os.chmod(twins["folder"], 0o1777)
    (tmp_path / "real.sqlite").write_bytes(b"")
    twins["link"] = tmp_path / "link"
    twins["link"].symlink_to(tmp_path / "real.sqlite")
    return twins


def test_a_history_that_is_not_a_regular_file_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    """`--history /dev/null` as root once chmodded the device to 0600; a FIFO blocked the run."""
    from strixwizard.live.history import HistoryError, record_run

    for kind, path in _twins(tmp_path).items():
        before = os.lstat(path)
        with pytest.raises(HistoryError, match="a test history is a regular file"):
            record_run("lab", "test latency", "2026-03-01T10:00:00+00:00", [], path)
        after = os.lstat(path)
        assert (after.st_mode, after.st_uid) == (before.st_mode, before.st_uid), kind
    assert os.stat(tmp_path / "real.sqlite").st_size == 0  # the link's target untouched

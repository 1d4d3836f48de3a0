"""Pilot tests of the Test step's soak on the demo: the demo nodes are snapshots, so the soak runs
for real on this machine's loopback (labelled so), through the same service as `test soak`.
s opens the dialog (pair, duration), the panel shows each pair's progress, then the verdict
and a row per direction; Esc stops the programs and leaves none running. A finished soak is
stored in the test history as `test soak` stores it (the demo's in the demo's own history),
and the Report and its saved files carry it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from textual.widgets import DataTable, RadioSet, Static

from strixwizard.live.soak import SoakProgress
from strixwizard.model import Status
from strixwizard.services.facade import Services
from strixwizard.tui.steps import key_of
from strixwizard.tui.widgets.notice import Notice
from strixwizard.tui.widgets.soak import SoakModal, SoakPanel, progress_line
from tests.support.wizard import SIZE, cells, live_state, make_app, settle, sync, wait_for_tests


@pytest.fixture(autouse=True)
def state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A state folder of its own: the soak's history and the saved reports land there."""
    home = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(home))
    return home


#: Words of the node program's source: found in the command line of a soak process (`-c SOURCE`).
SOAK_MARK = "Duplex soak: blocks that carry their position"


def soak_processes_of_this_test() -> list[int]:
    """Soak programs descending from this process (other runs on the machine are not ours)."""
    parents: dict[int, int] = {}
    marked: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().decode("utf-8", "replace")
        except OSError:
            continue
        parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
        if SOAK_MARK in cmdline:
            marked.append(int(entry.name))

    def ours(pid: int) -> bool:
        for _ in range(64):
            if pid == os.getpid():
                return True
            pid = parents.get(pid, 0)
            if pid <= 1:
                return False
        return False
    return [pid for pid in marked if ours(pid)]


def soak_panel_text(app: object) -> str:
    panel = app.screen.query_one(SoakPanel)  # type: ignore[attr-defined]
    return "\n".join(str(s.render()) for s in panel.query(Static))


@sync
async def test_soak_a_pair_from_the_test_step_shows_its_verdict_per_direction() -> None:
    app = make_app(Services(demo_seconds=0.3, soak_bytes=64 << 20), demo=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press(key_of("test"))
        await settle(app, pilot)
        assert "s soaks a link" in str(app.screen.query_one("#test-status", Notice).render())
        assert not app.screen.query_one(SoakPanel).display
        await pilot.press("s")
        await pilot.pause()
        modal = app.screen
        assert isinstance(modal, SoakModal)
        assert modal.query_one("#soak-pairs", RadioSet).pressed_index == 0
        assert modal.choice().pairs == [("node-a", "node-b")] and modal.choice().seconds == 30
        await pilot.press("s")  # start, with the defaults
        await pilot.pause()
        assert app.busy("tests")
        await wait_for_tests(app, pilot, 90)
        soak = live_state(app).soak
        assert soak is not None and soak.outcome == "done"
        verdict = next(m for m in soak.results if m.kind == "soak")
        assert verdict.status is Status.PASS and "loopback" in verdict.path
        text = soak_panel_text(app)
        assert "Soak PASS" in text
        rows = cells(app.screen.query_one(SoakPanel).query_one(DataTable))
        assert [r[0] for r in rows] == ["node-a -> node-b", "node-b -> node-a"]
        assert all(r[1] == "64" and r[3:6] == ["0", "0", "0"] and r[6] == "PASS" for r in rows)
        assert live_state(app).results == []  # the matrix's results are apart


@sync
async def test_the_soak_shows_progress_and_esc_stops_it_leaving_no_program() -> None:
    app = make_app(Services(demo_seconds=0.3), demo=True)  # bytes unbounded: the time ends it
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press(key_of("test"))
        await settle(app, pilot)
        await pilot.press("s")
        await pilot.pause()
        modal = app.screen
        assert isinstance(modal, SoakModal)
        await pilot.click("#soak-seconds-1")  # 10 s
        assert modal.choice().seconds == 10
        await pilot.click("#soak-start")
        for _ in range(200):  # progress about once a second: wait for the first, bounded
            await pilot.pause(0.05)
            soak = live_state(app).soak
            if soak is not None and soak.progress:
                break
        soak = live_state(app).soak
        assert soak is not None and soak.progress, "no progress within 10 s"
        await pilot.pause()
        assert "node-a ⇄ node-b:" in soak_panel_text(app) and "of 10 s" in soak_panel_text(app)
        assert "Soaking" in str(app.screen.query_one("#test-status", Notice).border_title)
        assert soak_processes_of_this_test()
        await pilot.press("escape")
        await wait_for_tests(app, pilot, 20)
        assert soak.outcome == "cancelled"
        assert "Soak cancelled" in soak_panel_text(app)
        assert soak_processes_of_this_test() == []


def test_the_progress_line_fills_towards_whichever_bound_ends_the_run_first() -> None:
    by_time = SoakProgress(("a", "b"), 15.0, 30.0, 1 << 40, (1 << 20, 2 << 20), 0)
    assert by_time.fraction == 0.5
    assert progress_line(by_time).startswith("█" * 12 + "░" * 12)
    assert "a ⇄ b: 15 of 30 s, a -> b 1 MiB, b -> a 2 MiB checked" in progress_line(by_time)
    by_bytes = SoakProgress(("a", "b"), 1.0, 30.0, 4 << 20, (4 << 20, 3 << 20), 2)
    assert by_bytes.fraction == 0.75 and "2 corrupted block(s) so far" in by_bytes.text


def test_the_verdict_line_names_what_decided_it() -> None:
    from strixwizard.live.results import Measurement
    from strixwizard.tui.widgets.soak import direction_rows, verdict_line

    def soak(status: Status, corrupted: int) -> Measurement:
        directions = [{"from": "a", "to": "b", "bytes": 1 << 20, "blocks": 16,
                       "corrupted": corrupted, "dropped": 0, "duplicated": 0, "faults": []}]
        return Measurement("soak", "tcp", "strixwizard soak", ("a", "b"), status,
                           f"bytes arrived wrong: {corrupted} corrupted" if corrupted else "ok",
                           figure=1.5, unit="Gb/s", detail={"directions": directions})

    assert verdict_line([soak(Status.PASS, 0)]) == ("Soak PASS: every block of 1 pair(s) arrived "
                                                    "right, both ways at once (a ⇄ b 1.50 Gb/s)")
    failed = verdict_line([soak(Status.FAIL, 3)])
    assert failed.startswith("Soak FAIL: bytes arrived wrong: 3 corrupted (a ⇄ b TCP soak")
    assert direction_rows([soak(Status.FAIL, 3)]) == [["a -> b", "1", "16", "3", "0", "0", "FAIL"]]
    grown = Measurement("counters", "fabric", "counters", ("a", "b"), Status.WARN,
                        "a:thunderbolt0 rx_crc_errors +7 while TCP soak")
    assert verdict_line([soak(Status.PASS, 0), grown]).startswith("Soak WARN")


@sync
async def test_the_wizard_soaks_every_pair_of_a_lab_site_over_ssh_and_leaves_nothing(
        tmp_path: Path, monkeypatch: object) -> None:
    """Three lab nodes reached over SSH: "every pair" soaks node0-node1, node0-node2 and
    node1-node2 in the matrix's rounds, each judged per direction; no soak program is left on
    any node."""
    from tests.support.lab import Lab, require_lab_tools
    from tests.support.wizard import discovered

    require_lab_tools()
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))  # type: ignore[attr-defined]
    with Lab(tmp_path / "lab", 3) as lab:
        site = lab.write_site_yaml(tmp_path / "site.yaml")
        from strixwizard.tui.app import WizardApp

        app = WizardApp(site_file=site, services=Services(soak_bytes=8 << 20))
        async with app.run_test(size=(120, 36)) as pilot:
            await pilot.press("n")
            await discovered(app, pilot)
            await pilot.press(key_of("test"))
            await settle(app, pilot)
            await pilot.press("s")
            await pilot.pause()
            assert isinstance(app.screen, SoakModal)
            await pilot.click("#soak-every-pair")
            await pilot.click("#soak-seconds-1")  # 10 s: the 8 MiB each way ends it sooner
            assert sorted(app.screen.choice().pairs) == [("node0", "node1"), ("node0", "node2"),
                                                         ("node1", "node2")]
            await pilot.press("s")
            await pilot.pause()
            await wait_for_tests(app, pilot, 120)
            soak = live_state(app).soak
            assert soak is not None and soak.outcome == "done"
            verdicts = [m for m in soak.results if m.kind == "soak"]
            assert sorted(tuple(sorted(m.pair)) for m in verdicts) == [
                ("node0", "node1"), ("node0", "node2"), ("node1", "node2")]
            assert all(m.status is Status.PASS for m in verdicts), [m.summary for m in verdicts]
            rows = cells(app.screen.query_one(SoakPanel).query_one(DataTable))
            assert len(rows) == 6 and all(r[1] == "8" and r[6] == "PASS" for r in rows), rows
            # stored as `test soak` stores it: the site's own history, a run of three pairs
            from strixwizard.live.history import History, default_history_path

            with History(default_history_path(), read_only=True) as history:
                assert [(r[2], r[3], r[4]) for r in history.runs()] == [
                    ("lab", "test soak", "pass")]
        # The soak programs this lab started (their argv names a lab address); the namespaces
        # share the machine's process table, where other runs may soak too.
        addresses = [a for h in lab.hosts for a in (h.mgmt_addr, h.fabric_addr) if a]
        listing = lab.hosts[0].run_in_node(["ps", "-ww", "-eo", "args"]).stdout.splitlines()
        left = [line[:80] for line in listing if SOAK_MARK in line
                and any(f" {a} " in line for a in addresses)]
        assert left == []


def test_the_cli_prints_a_pairs_progress_every_five_seconds_on_stderr(
        capsys: object) -> None:
    from strixwizard.cli.live_run import _progress

    say = _progress("soak")
    for second in range(1, 12):
        say(SoakProgress(("a", "b"), float(second), 30.0, 1 << 30, (second << 20, second << 20), 0))
    err = capsys.readouterr().err  # type: ignore[attr-defined]
    assert err.splitlines() == ["  soak a ⇄ b: 5 of 30 s, a -> b 5 MiB, b -> a 5 MiB checked",
                                "  soak a ⇄ b: 10 of 30 s, a -> b 10 MiB, b -> a 10 MiB checked"]


@sync
async def test_a_one_node_site_is_told_a_soak_needs_two_nodes(tmp_path: Path) -> None:
    from tests.support.wizard import next_to

    demo = Path(__file__).resolve().parent.parent / "strixwizard" / "demo"
    site = tmp_path / "site.yaml"
    site.write_text("site: one\nnodes:\n"
                    f"  - name: node-a\n    snapshot: {demo / 'snapshots' / 'node-a.tar.gz'}\n")
    app = make_app(site_file=site)
    async with app.run_test(size=SIZE) as pilot:
        await next_to(app, pilot, "discover")
        await pilot.press(key_of("test"))
        await settle(app, pilot)
        await pilot.press("s")
        await pilot.pause()
        assert not isinstance(app.screen, SoakModal)
        assert any("A soak needs two nodes" in n.message for n in app._notifications)


def history_of_the_demo(state_home: Path) -> dict[str, object]:
    """`strixwizard history --demo --json`, run as a user runs it, on this test's state folder."""
    done = subprocess.run([sys.executable, "-m", "strixwizard", "history", "--demo", "--json"],
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "XDG_STATE_HOME": str(state_home)})
    assert done.returncode == 0, done.stderr
    document: dict[str, object] = json.loads(done.stdout)
    return document


@sync
async def test_a_wizard_soak_is_stored_in_the_history_and_reported(state_home: Path) -> None:
    """After a soak on the demo's Test step: `history --demo --json` lists it (the demo's own
    history, as `test soak --demo` stores it); the Report shows its verdict, pair, directions
    and bytes checked; the saved JSON holds the `test soak --json` document, the Markdown and
    HTML a Soak section."""
    app = make_app(Services(demo_seconds=0.3, soak_bytes=8 << 20), demo=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press(key_of("test"))
        await settle(app, pilot)
        await pilot.press("s")
        await pilot.pause()
        assert isinstance(app.screen, SoakModal)
        await pilot.press("s")
        await pilot.pause()
        await wait_for_tests(app, pilot, 90)
        soak = live_state(app).soak
        assert soak is not None and soak.outcome == "done"
        assert soak.history is not None and "demo-history.sqlite" in soak.history
        assert "Stored in the test history" in soak_panel_text(app)

        history = history_of_the_demo(state_home)
        assert history["history"] == str(state_home / "strixwizard" / "demo-history.sqlite")
        links = history["links"]
        assert isinstance(links, list) and len(links) == 1
        assert links[0]["kind"] == "soak" and links[0]["pair"] == ["node-a", "node-b"]
        assert [p["status"] for p in links[0]["points"]] == ["pass"]
        assert not (state_home / "strixwizard" / "history.sqlite").exists()  # never the real one

        await pilot.press(key_of("report"))
        await settle(app, pilot)
        body = " ".join(str(app.screen.query_one("#report-body").render()).split())
        assert "Soak ✓ PASS 1 pair(s), 30 s each at most" in body
        assert "node-a ⇄ node-b TCP soak:" in body and "loopback on this machine" in body
        for there in ("node-a -> node-b", "node-b -> node-a"):
            assert f"{there}: 8 MiB checked ({8 << 20} bytes, 32 blocks), 0 corrupted" in body
        assert "stored in the test history" in body and "demo-history.sqlite" in body
        assert "node-a ⇄ node-b TCP soak (strixwizard soak)" in " ".join(
            str(app.screen.query_one("#report-history").render()).split())

        saved = app.session.saved
        document = json.loads(saved["json"].read_text())
        soaked = document["soak"]
        assert soaked["command"] == "test soak" and soaked["status"] == "pass"
        assert soaked["outcome"] == "done" and soaked["pairs"] == [["node-a", "node-b"]]
        assert soaked["seconds"] == 30 and soaked["history"]["run_id"] == 1
        (verdict,) = [r for r in soaked["results"] if r["kind"] == "soak"]
        assert [(d["from"], d["to"], d["bytes"], d["corrupted"], d["faults"])
                for d in verdict["detail"]["directions"]] == [
            ("node-a", "node-b", 8 << 20, 0, []), ("node-b", "node-a", 8 << 20, 0, [])]
        assert "live_tests" not in document  # the soak is its own section, the matrix not run
        markdown, page = saved["md"].read_text(), saved["html"].read_text()
        assert "## Soak" in markdown and "- status: **PASS** (done)" in markdown
        assert "<h2>Soak</h2>" in page and f"({8 << 20} bytes, 32 blocks)" in page


def test_a_failed_soak_reads_with_its_first_fault_located() -> None:
    """The document of a failing soak (a measurement synthesized here in the shape `tcp_soak`
    gives, its fault text as the node program words it): the verdict, each direction and the
    first fault located to its stream offset, in the Report's and the files' lines."""
    from strixwizard.live.results import Measurement
    from strixwizard.present.report import markdown_sections, soak_lines
    from strixwizard.site import Thresholds
    from strixwizard.tui.extras import soak_document

    fault = ("block 3 at stream offset 786432: digest mismatch, first bad byte at payload byte "
             "17 (stream offset 786457)")
    directions = [{"from": "a", "to": "b", "bytes": 1 << 20, "blocks": 4, "corrupted": 1,
                   "dropped": 0, "duplicated": 0, "faults": [fault]},
                  {"from": "b", "to": "a", "bytes": 1 << 20, "blocks": 4, "corrupted": 0,
                   "dropped": 0, "duplicated": 0, "faults": []}]
    failed = Measurement("soak", "tcp", "strixwizard soak", ("a", "b"), Status.FAIL,
                         "bytes arrived wrong", figure=1.5, unit="Gb/s", path="10.99.0.2",
                         detail={"directions": directions, "seconds": 1.0})
    document = soak_document("lab", Thresholds(), [("a", "b")], 10.0, [failed], "done", False,
                             None)
    assert document["status"] == "fail" and document["exit_code"] == 1
    assert soak_lines(document) == [
        ("fail", "a ⇄ b TCP soak: 1.50 Gb/s both ways over 10.99.0.2"),
        (None, "a -> b: 1 MiB checked (1048576 bytes, 4 blocks), 1 corrupted, 0 dropped, "
               "0 duplicated"),
        (None, f"first fault a -> b: {fault}"),
        (None, "b -> a: 1 MiB checked (1048576 bytes, 4 blocks), 0 corrupted, 0 dropped, "
               "0 duplicated")]
    assert "- status: **FAIL** (done), 1 pair(s), 10 s each at most" in markdown_sections(
        {"soak": document})
    cancelled = soak_document("lab", Thresholds(), [("a", "b")], 10.0, [], "cancelled", False, None)
    assert cancelled["status"] == "error" and "no verdict" in cancelled["error"]

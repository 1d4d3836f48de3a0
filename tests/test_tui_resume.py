"""Pilot tests: resuming the wizard keeps the work of the earlier session. All steps, quit,
reopen: the Test results, the soak and the Deploy are there, and the saved report files stay
as they were until something new runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from strixwizard.services.facade import Services
from strixwizard.tui.screens.deploy import DeployState
from strixwizard.tui.screens.measure import MeasurementState
from strixwizard.tui.steps import key_of
from strixwizard.tui.widgets.soak import SoakModal, SoakPanel
from tests.support.wizard import SIZE, make_app, notice_text, settle, sync, wait_for_tests


@pytest.fixture(autouse=True)
def state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(home))
    return home


def _files(app_saved: dict[str, Path]) -> dict[str, bytes]:
    return {fmt: path.read_bytes() for fmt, path in sorted(app_saved.items())}


@sync
async def test_resume_keeps_tests_and_deploy_and_the_report_files(state_home: Path) -> None:
    quick = Services(demo_seconds=0.3, soak_bytes=8 << 20)  # the soak ends at 8 MiB each way
    first = make_app(quick, demo=True)
    async with first.run_test(size=SIZE) as pilot:
        for key in ("2", "3", "4", "5"):  # every step, as a newcomer walks them
            await pilot.press(key)
            await settle(first, pilot)
        assert first.session.of(DeployState).preview is not None
        await pilot.press(key_of("test"))
        await settle(first, pilot)
        await pilot.press("r")
        await pilot.pause()
        await wait_for_tests(first, pilot)
        assert first.session.of(MeasurementState).outcome == "done"
        # the demo's TCP is the recording's, beside the recorded RDMA
        decode = first.screen.query_one("DecodePanel DataTable")
        transports = [str(decode.get_row_at(i)[0]) for i in range(decode.row_count)]  # type: ignore[attr-defined]
        assert sorted(transports) == ["rdma", "tcp"]
        await pilot.press("s")  # a soak too (on the demo: for real on this machine's loopback)
        await pilot.pause()
        assert isinstance(first.screen, SoakModal)
        await pilot.press("s")
        await pilot.pause()
        await wait_for_tests(first, pilot, 90)
        soak = first.session.of(MeasurementState).soak
        assert soak is not None and soak.outcome == "done"
        await pilot.press(key_of("report"))
        await settle(first, pilot)
        saved = dict(first.session.saved)
        before = _files(saved)
        body = " ".join(str(first.screen.query_one("#report-body").render()).split())
        assert "node-a ⇄ node-b TCP latency: 34.00 µs (replayed recording)" in body
        assert "does not compare" not in body
        page = before["html"].decode()
        assert "like for like, as recorded node-a ⇄ node-b: RDMA 5.23 µs vs TCP 34.00 µs" in page
        assert "do not compare" not in page and "does not compare" not in page
        document = json.loads(before["json"])
        assert document["live_tests"]["results"] and document["deploy"]["status"] == "plan-only"
        assert document["soak"]["status"] == "pass" and document["soak"]["pairs"] == [["node-a", "node-b"]]
        await pilot.press(key_of("links"))  # quit elsewhere: the next start resumes there
        await settle(first, pilot)
    results = len(first.session.of(MeasurementState).results)
    soaked = [m.to_json() for m in soak.results]

    again = make_app(quick, demo=True)
    async with again.run_test(size=SIZE) as pilot:
        await settle(again, pilot)
        assert again.screen.id == "step-links"
        await pilot.press(key_of("report"))  # straight to the Report, as the newcomer did
        await settle(again, pilot)
        await pilot.pause()
        body = str(again.screen.query_one("#report-body").render())
        assert "not run yet" not in body and "not planned yet" not in body
        assert "plan-only" in body and "RDMA latency" in body
        assert "node-a ⇄ node-b TCP soak" in body and "8 MiB checked" in body
        assert _files(saved) == before  # opening the Report rewrote nothing

        await pilot.press(key_of("test"))
        await settle(again, pilot)
        tests = again.session.of(MeasurementState)
        assert len(tests.results) == results and tests.outcome == "done"
        assert "earlier session" in notice_text(again, "#test-status")
        assert again.screen.query("MeasurementPanel")
        resumed = tests.soak  # the soak is back on the Test step, as it was
        assert resumed is not None and resumed.outcome == "done" and resumed.seconds == 30
        assert resumed.pairs == [("node-a", "node-b")]
        assert [m.to_json() for m in resumed.results] == soaked
        panel = again.screen.query_one(SoakPanel)
        assert panel.display
        assert "earlier session" in "\n".join(str(w.render()) for w in panel.query("Static"))
        await pilot.press(key_of("deploy"))  # planning the same deploy again is nothing new either
        await settle(again, pilot)
        await pilot.press(key_of("report"))
        await settle(again, pilot)
        assert _files(saved) == before

        await pilot.press(key_of("test"))  # a new run is something new: the report follows it
        await settle(again, pilot)
        await pilot.press("r")
        await pilot.pause()
        await wait_for_tests(again, pilot)
        assert again.session.of(MeasurementState).resumed_document is None
        await pilot.press(key_of("report"))
        await settle(again, pilot)
        rewritten = json.loads(again.session.saved["json"].read_text())
        # the report follows the new run (the demo's recordings replay the same figures)
        assert rewritten["live_tests"]["results"] == [
            m.to_json() for m in again.session.of(MeasurementState).results]
        assert rewritten["soak"] == document["soak"]  # the new test run kept the earlier soak


@sync
async def test_a_foreign_or_broken_saved_report_restores_nothing(state_home: Path) -> None:
    first = make_app(demo=True)
    async with first.run_test(size=SIZE) as pilot:
        await pilot.press(key_of("report"))
        await settle(first, pilot)
        report = first.session.saved["json"]
    report.write_text('{"site": "demo", "live_tests": {"results": [{"kind": 1}]}, "deploy": 3}')
    again = make_app(demo=True)
    async with again.run_test(size=SIZE) as pilot:
        await settle(again, pilot)
        assert again.session.of(MeasurementState).results == []
        assert again.session.of(DeployState).resumed is None


@sync
async def test_discover_reads_at_a_glance_as_doctor_does(state_home: Path) -> None:
    app = make_app(demo=True, resume=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press(key_of("discover"))
        await settle(app, pilot)
        text = notice_text(app, "#discover-status")
        assert "! platform  ! NICs  ✗ links  ✗ lossless  ✗ versions  ! counters" in text


def _saved_result(**changes: object) -> dict[str, object]:
    from strixwizard.live.results import LatencyStats, Measurement
    from strixwizard.model import Status

    stats = LatencyStats(4.0, 5.0, 5.1, 6.0, 7.0, 9.0)
    return {**Measurement("latency", "rdma", "ib_write_lat", ("node-a", "node-b"), Status.PASS,
                          "5.00 µs", figure=5.0, unit="µs", latency=stats).to_json(), **changes}


@sync
async def test_a_saved_report_with_a_figure_that_is_no_number_is_skipped_with_a_note(
        state_home: Path) -> None:
    first = make_app(demo=True)
    async with first.run_test(size=SIZE) as pilot:
        await pilot.press(key_of("report"))
        await settle(first, pilot)
        report = first.session.saved["json"]
    document = json.loads(report.read_text())
    document["live_tests"] = {"outcome": "done", "results": [
        _saved_result(), _saved_result(figure="fast", tool="ib_send_lat")]}
    document["soak"] = {"pairs": [["node-a", "node-b"]], "seconds": 1.0, "outcome": "done",
                        "results": [_saved_result(kind="soak", pair=["node-a"])]}
    report.write_text(json.dumps(document))
    again = make_app(demo=True)
    async with again.run_test(size=SIZE) as pilot:
        await settle(again, pilot)
        state = again.session.of(MeasurementState)
        assert [m.tool for m in state.results] == ["ib_write_lat"]  # the good one is kept
        assert state.soak is None
        notes = " ".join(str(n.message) for n in again._notifications)
        assert "skipped" in notes and "figure" in notes and "pair" in notes
        await pilot.press(key_of("report"))  # the Report step saves: no ValueError
        await settle(again, pilot)
        saved = json.loads(again.session.saved["json"].read_text())
        assert [r["tool"] for r in saved["live_tests"]["results"]] == ["ib_write_lat"]

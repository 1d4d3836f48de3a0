"""The wizard's Report step on the demo: it says what the fabric counters found (never "no
figure"), and its decode chart follows the model picked on the Test step."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Select, Static

from strixwizard.services.facade import Services
from strixwizard.tui.steps import key_of
from tests.support.wizard import after_the_tests, make_app, settle, sync


@pytest.fixture(autouse=True)
def state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(home))
    return home


@sync
async def test_the_report_says_what_the_counters_found_not_no_figure() -> None:
    app = make_app(demo=True, services=Services(demo_seconds=0.3))
    async with app.run_test(size=(120, 40)) as pilot:
        await after_the_tests(app, pilot)
        await pilot.press(key_of("report"))
        await settle(app, pilot)
        body = str(app.screen.query_one("#report-body", Static).render())
        assert "no figure" not in body and "FABRIC" not in body
        assert "fabric counters: the fabric is lossy" in body


@sync
async def test_the_reports_decode_chart_follows_the_model_picked_on_the_test_step() -> None:
    app = make_app(demo=True, services=Services(demo_seconds=0.3))
    async with app.run_test(size=(80, 24)) as pilot:
        await after_the_tests(app, pilot)
        app.screen.query_one("#decode-model", Select).value = "Llama-3.1-8B"
        await settle(app, pilot)
        await pilot.press(key_of("report"))
        await settle(app, pilot)
        saved = app.session.saved["json"].read_text()
        assert '"name": "Llama-3.1-8B"' in saved and "Llama-3.1-70B" not in saved

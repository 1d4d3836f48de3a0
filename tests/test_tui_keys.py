"""The wizard's keys on the demo at 80x24: the footer offers Next where there is a next step and
Back where there is one before, and `?` opens the help with the keys, the steps, the verdicts
and the files the wizard keeps."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Static

from strixwizard.tui.app import WizardApp
from strixwizard.tui.steps import key_of
from tests.support.wizard import make_app, settle, sync


@pytest.fixture(autouse=True)
def state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(home))
    return home


def footer_keys(app: WizardApp) -> set[str]:
    """The actions the footer offers on the current screen."""
    return {binding.action for (_, binding, enabled, _) in app.active_bindings.values()
            if binding.show and enabled}


@sync
async def test_the_last_step_offers_no_next_and_the_first_no_back() -> None:
    app = make_app(demo=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(key_of("site"))
        await settle(app, pilot)
        assert "next_step" in footer_keys(app) and "prev_step" not in footer_keys(app)
        await pilot.press(key_of("report"))
        await settle(app, pilot)
        assert "next_step" not in footer_keys(app) and "prev_step" in footer_keys(app)
        await pilot.press("n")  # still a no-op, not an error
        await settle(app, pilot)
        assert app.session.state.step == "report"


@sync
async def test_question_mark_opens_help_with_keys_steps_verdicts_and_files() -> None:
    from strixwizard.tui.steps import STEPS
    from strixwizard.tui.widgets.help import HelpScreen

    app = make_app(demo=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(key_of("fix"))
        await settle(app, pilot)
        assert "help" in footer_keys(app)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        text = str(app.screen.query_one("#help-text", Static).render())
        for step in STEPS:
            assert f"{step.number} {step.title}" in text
        for said in ("Apply fixes: the planned changes", "only the failing rows", "PASS", "WARN", "FAIL",
                     "ERROR", "SKIP", "demo-state.json", "journal", "dry-runs", "/etc/strixwizard"):
            assert said in text, said
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, HelpScreen) and app.session.state.step == "fix"

"""A few stable screens of the demo, pinned as SVG snapshots (pytest-textual-snapshot).

Update after an intended change with `pytest tests/test_tui_snapshots.py --snapshot-update`,
and look at the report before committing. The demo's data feeds these screens: a change
to the demo snapshots changes them too.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable

from strixwizard.tui.app import WizardApp
from strixwizard.tui.steps import key_of

SnapCompare = Callable[..., bool]


@pytest.fixture(autouse=True)
def state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A home of its own: paths on screen read `~/.local/state/...` in every run."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)


def go_to(step: str, theme: str | None = None) -> Callable[[Pilot[Any]], Any]:
    async def run_before(pilot: Pilot[Any]) -> None:
        if theme:
            pilot.app.theme = theme
        await pilot.press(key_of(step))
        await pilot.app.workers.wait_for_complete()
        # Let the results reach the tables and the tables settle their column widths. A
        # DataTable sizes its columns on an Idle event, which a loaded machine can delay past
        # any fixed pause: wait (bounded, 10 s) until the tables' rows have stayed the same,
        # with no resize pending, for several checks in a row.
        last: object = None
        stable = 0
        for _ in range(200):
            await pilot.pause(0.05)
            tables = list(pilot.app.screen.query(DataTable))
            state = [(t.row_count, t._require_update_dimensions) for t in tables]
            settled = not any(pending for _, pending in state)
            stable = stable + 1 if settled and state == last else 0
            last = state
            if stable >= 4:
                break
        pilot.app.clear_notifications()
        await pilot.pause()

    return run_before


def test_discover_screen(snap_compare: SnapCompare) -> None:
    assert snap_compare(WizardApp(demo=True), terminal_size=(80, 24), run_before=go_to("discover"))


def test_links_screen(snap_compare: SnapCompare) -> None:
    assert snap_compare(WizardApp(demo=True), terminal_size=(80, 24), run_before=go_to("links"))


def test_links_screen_light_and_wide(snap_compare: SnapCompare) -> None:
    assert snap_compare(WizardApp(demo=True), terminal_size=(120, 36),
                        run_before=go_to("links", theme="textual-light"))


def test_deploy_screen(snap_compare: SnapCompare) -> None:
    assert snap_compare(WizardApp(demo=True), terminal_size=(80, 24), run_before=go_to("deploy"))


def test_test_screen_before_a_run(snap_compare: SnapCompare) -> None:
    assert snap_compare(WizardApp(demo=True), terminal_size=(80, 24), run_before=go_to("test"))


def test_site_screen(snap_compare: SnapCompare) -> None:
    assert snap_compare(WizardApp(demo=True), terminal_size=(80, 24), run_before=go_to("site"))


def test_fix_screen(snap_compare: SnapCompare) -> None:
    assert snap_compare(WizardApp(demo=True), terminal_size=(80, 24), run_before=go_to("fix"))


def test_report_screen_before_a_test_run(snap_compare: SnapCompare) -> None:
    assert snap_compare(WizardApp(demo=True), terminal_size=(80, 24), run_before=go_to("report"))


def test_test_screen_soak_dialog(snap_compare: SnapCompare) -> None:
    """s on the Test step: the soak's choice of pair and duration (its defaults selected)."""
    arrive = go_to("test")

    async def run_before(pilot: Pilot[Any]) -> None:
        await arrive(pilot)
        await pilot.press("s")
        await pilot.pause()
        await pilot.pause()

    assert snap_compare(WizardApp(demo=True), terminal_size=(80, 24), run_before=run_before)

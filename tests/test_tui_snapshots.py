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

from strixwizard.tui.app import WizardApp

SnapCompare = Callable[..., bool]


@pytest.fixture(autouse=True)
def state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))


def go_to(step: str, theme: str | None = None) -> Callable[[Pilot[Any]], Any]:
    async def run_before(pilot: Pilot[Any]) -> None:
        if theme:
            pilot.app.theme = theme
        await pilot.press(step)
        await pilot.app.workers.wait_for_complete()
        # Let the results reach the tables and the tables settle their column widths; on a
        # loaded machine one pause is not enough (the picture then shows a half-laid table).
        for _ in range(10):
            await pilot.pause(0.05)
        pilot.app.clear_notifications()
        await pilot.pause()

    return run_before


def test_discover_screen(snap_compare: SnapCompare) -> None:
    assert snap_compare(WizardApp(demo=True), terminal_size=(80, 24), run_before=go_to("2"))


def test_links_screen(snap_compare: SnapCompare) -> None:
    assert snap_compare(WizardApp(demo=True), terminal_size=(80, 24), run_before=go_to("3"))


def test_links_screen_light_and_wide(snap_compare: SnapCompare) -> None:
    assert snap_compare(WizardApp(demo=True), terminal_size=(120, 36),
                        run_before=go_to("3", theme="textual-light"))


def test_deploy_screen(snap_compare: SnapCompare) -> None:
    assert snap_compare(WizardApp(demo=True), terminal_size=(80, 24), run_before=go_to("5"))

"""The wizard's Discover step on the demo: at 80 columns its tables fit and the selected row's
rest is shown beside them; every check is listed in folded sections, and `f` keeps only the
failing ones."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import DataTable, Static
from textual.widgets._collapsible import CollapsibleTitle

from strixwizard.tui.screens.discover import NODE_COLUMNS
from strixwizard.tui.steps import key_of
from tests.support.wizard import cells, make_app, notice_text, settle, step_sections, sync


@pytest.fixture(autouse=True)
def state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(home))
    return home


@sync
async def test_discover_lists_every_check_in_folded_sections_and_f_filters_them() -> None:
    app = make_app(demo=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(key_of("discover"))
        await settle(app, pilot)
        sections = step_sections(app, ".check-section")
        assert [s.key for s in sections] == ["discover node node-a", "discover node node-b",
                                             "discover links", "discover site demo"]
        assert all(s.collapsed for s in sections)  # folded until opened: the tables stay on screen
        assert "✗ 2 FAIL" in str(sections[1].query_one(CollapsibleTitle).render())
        sections[1].collapsed = False
        await settle(app, pilot)
        lines = str(sections[1].query_one(".check-lines", Static).render())
        assert "✓ PASS" in lines and "✗ FAIL" in lines
        await pilot.press("f")
        await settle(app, pilot)
        sections = step_sections(app, ".check-section")
        assert [s.key for s in sections] == ["discover node node-b", "discover links"]  # failing only
        assert not sections[0].collapsed  # opened before: still open
        lines = str(sections[0].query_one(".check-lines", Static).render())
        assert "✗ FAIL" in lines and "PASS" not in lines and "WARN" not in lines
        assert "FAIL and ERROR rows only" in notice_text(app, "#discover-status")


@sync
async def test_discover_at_80_columns_fits_and_shows_the_rest_for_the_selected_row() -> None:
    app = make_app(demo=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(key_of("discover"))
        await settle(app, pilot)
        for table_id in ("nodes", "ports"):
            table = app.screen.query_one(f"#{table_id}", DataTable)
            assert table.virtual_size.width <= table.size.width, table_id  # no sideways scrolling
            details = str(app.screen.query_one(f"#{table_id}-details", Static).render())
            assert details and app.screen.query_one(f"#{table_id}-details").display
        nodes = app.screen.query_one("#nodes", DataTable)
        assert len(nodes.columns) < len(NODE_COLUMNS)
        assert "kernel 6.18.5-200.fc43.x86_64" in str(app.screen.query_one("#nodes-details", Static).render())
        nodes.focus()
        await pilot.press("down")
        await pilot.pause()
        assert str(app.screen.query_one("#nodes-details", Static).render()).startswith("node-b")
        assert "1 links" not in notice_text(app, "#discover-status")
    wide = make_app(demo=True)
    async with wide.run_test(size=(200, 40)) as pilot:
        await pilot.press(key_of("discover"))
        await settle(wide, pilot)
        nodes = wide.screen.query_one("#nodes", DataTable)
        assert len(nodes.columns) == len(NODE_COLUMNS)
        assert any("Ryzen AI Max+ 395" in row for row in cells(nodes))
        assert not wide.screen.query_one("#nodes-details").display

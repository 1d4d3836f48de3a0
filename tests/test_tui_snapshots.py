"""A few stable screens of the demo, pinned as SVG snapshots (pytest-textual-snapshot).

Update after an intended change with `pytest tests/test_tui_snapshots.py --snapshot-update`,
and look at the report before committing. The demo's data feeds these screens: a change
to the demo snapshots changes them too.
"""

from __future__ import annotations

import difflib
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from strixwizard.tui.app import WizardApp
from strixwizard.tui.steps import key_of
from strixwizard.tui.widgets.soak import SoakModal
from tests.support.wizard import still, svg_lines

SnapCompare = Callable[..., bool]
STORED = Path(__file__).parent / "__snapshots__" / Path(__file__).stem


@pytest.fixture(autouse=True)
def state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A home of its own: paths on screen read `~/.local/state/...` in every run."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)


@pytest.fixture
def snap_compare(snap_compare: SnapCompare, request: pytest.FixtureRequest) -> SnapCompare:
    """pytest-textual-snapshot's compare, whose failure also prints the two screens' text
    line by line (the HTML report stays on the machine that ran the tests)."""

    def compare(app: WizardApp, **kwargs: Any) -> bool:
        if snap_compare(app, **kwargs) or request.config.getoption("--snapshot-update"):
            return True
        from pytest_textual_snapshot import node_to_report_path

        actual = pickle.loads(node_to_report_path(request.node).read_bytes())[2]
        stored = STORED / f"{request.node.name}.svg"
        before = svg_lines(stored.read_text(encoding="utf-8")) if stored.exists() else []
        diff = "\n".join(difflib.unified_diff(before, svg_lines(actual), "stored", "now", lineterm=""))
        raise AssertionError(f"{request.node.name}: the screen differs from {stored.name}:\n"
                             + (diff or "(the same text: colours or styles differ)"))

    return compare


def go_to(step: str, theme: str | None = None) -> Callable[[Pilot[Any]], Any]:
    async def run_before(pilot: Pilot[Any]) -> None:
        if theme:
            pilot.app.theme = theme
        await pilot.press(key_of(step))
        await still(pilot, step)

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
        await still(pilot, "test", on_top=SoakModal)

    assert snap_compare(WizardApp(demo=True), terminal_size=(80, 24), run_before=run_before)

"""The wizard's text at 80 columns: a wrapped line hangs under its own start (the hanging
indent of strixwizard/tui/widgets/hanging.py), in the Links, Fix, Deploy and Report steps'
panels, a notice's list items and the report's lines."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.content import Content
from textual.geometry import Region
from textual.widget import Widget
from textual.widgets import Static

from strixwizard.tui.steps import key_of
from strixwizard.tui.widgets.hanging import hang_lines
from strixwizard.tui.widgets.notice import Notice
from tests.support.wizard import (
    make_app,
    settle,
    sync,
)


@pytest.fixture(autouse=True)
def state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(home))
    return home


def screen_lines(widget: Widget) -> list[str]:
    """What the widget shows, line by line, without its border and padding."""
    region = widget.content_region
    width, height = widget.size.width, widget.size.height
    strips = widget.render_lines(Region(0, 0, width, height))
    left = region.x - widget.region.x
    return [strip.text[left:left + region.width].rstrip() for strip in strips][
        region.y - widget.region.y:region.y - widget.region.y + region.height]


def unhung(widget: Widget) -> list[str]:
    """Screen lines that continue a wrapped line yet start at the left edge, level with the
    lines that begin an item."""
    starts = [line.strip(" \u00a0") for line in str(widget.render()).split("\n")]
    wrong = []
    for line in screen_lines(widget):
        text = line.strip(" \u00a0")
        if text and line[:1] not in (" ", "\u00a0") and not any(s.startswith(text) for s in starts):
            wrong.append(line)
    return wrong


def test_hang_lines_keep_each_line_under_its_own_start() -> None:
    content = Content("title\n\u00a0\u00a0\u00a0\u00a0one two three four five six seven")
    assert [line.plain for line in hang_lines(content, 22)] == [
        "title", "\u00a0\u00a0\u00a0\u00a0one two three four", "      five six seven"]
    assert [line.plain for line in hang_lines(Content("a b"), 10)] == ["a b"]
    # a link card's second end ("⇄ node-b …") wraps as its first ("  node-a …") does
    ends = Content("\u00a0\u00a0node-a eth0 10.0.0.1\n⇄\u00a0node-b eth0 10.0.0.2")
    assert [line.plain for line in hang_lines(ends, 18)] == [
        "\u00a0\u00a0node-a eth0", "    10.0.0.1", "⇄\u00a0node-b eth0", "    10.0.0.2"]


@sync
async def test_wrapped_lines_keep_their_indent_in_links_fix_deploy_and_report() -> None:
    app = make_app(demo=True)
    async with app.run_test(size=(80, 24)) as pilot:
        for step, selector in (("links", ".link-card"), ("fix", ".fix-group"),
                               ("deploy", ".deploy-box"), ("report", "#report-body")):
            await pilot.press(key_of(step))
            await settle(app, pilot)
            widgets = [w for w in app.screen.query(selector) if w.display and isinstance(w, Static)]
            assert widgets, step
            wrapped = 0
            for widget in widgets:
                shown = screen_lines(widget)
                wrapped += len(shown) - len(str(widget.render()).split("\n"))
                assert not unhung(widget), (step, unhung(widget))
            assert wrapped > 0, f"{step}: nothing wrapped at 80 columns, the test shows nothing"
        # a notice's list items ("! doctor FAILs …" on Deploy) wrap under their text, not their mark
        await pilot.press(key_of("deploy"))
        await settle(app, pilot)
        notice = app.screen.query_one("#deploy-status", Notice)
        short = [line for line in str(notice.render()).split("\n") if line.startswith("! ")]
        assert short and all(len(line) <= 76 for line in short), short  # one row each at 80 columns
        await pilot.press("i")  # each warning in full
        await settle(app, pilot)
        sources = str(notice.render()).split("\n")
        items = [line for line in sources if line.startswith("! ")]
        assert items and any(len(line) > 76 for line in items)  # some item wraps at 80 columns
        for line in unhung(notice):
            assert not any(line.strip() in item for item in items), line


@sync
async def test_report_lines_wrap_under_their_start_at_80_columns() -> None:
    app = make_app(demo=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(key_of("report"))
        await settle(app, pilot)
        body = app.screen.query_one("#report-body")
        lines = ["".join(s.text for s in body.render_line(y)).rstrip() for y in range(body.size.height)]
        at = next(i for i, line in enumerate(lines) if line.startswith("  node-a: Ryzen AI Max+ 395"))
        assert lines[at + 1].startswith("    ") and lines[at + 1].strip() == "125.4 GiB", lines[at:at + 2]
        problem = next(i for i, line in enumerate(lines) if "node node-b: dcb.pause_and_pfc" in line)
        assert lines[problem + 1].startswith(" " * 10) and lines[problem + 1][10] != " "


def clipped_widgets(body: Widget) -> list[str]:
    """Widgets under the step's scrolling body that a container of theirs cuts off: a child
    whose rows reach past its parent's, which no scrolling can bring into view."""
    cut = []
    for widget in body.query("*"):
        if not widget.display or widget.region.height == 0:
            continue
        parent = widget.parent
        if not isinstance(parent, Widget) or parent is body or parent.region.height == 0:
            continue
        if widget.region.y < parent.region.y or widget.region.bottom > parent.region.bottom:
            cut.append(f"{widget!r} rows {widget.region.y}-{widget.region.bottom} in {parent!r} "
                       f"rows {parent.region.y}-{parent.region.bottom}")
    return cut


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
@sync
async def test_every_row_of_every_step_can_be_scrolled_into_view(size: tuple[int, int]) -> None:
    """On the demo, each step with every fold open: no container cuts off what it holds, and
    the step's body scrolls to its last row. (The Discover step's checks once got only the rows
    left in the window, 1 at 80x24, with no way to scroll to the rest.)"""
    from textual.containers import VerticalScroll

    from strixwizard.tui.steps import STEPS
    from strixwizard.tui.widgets.sections import Section

    app = make_app(demo=True)
    async with app.run_test(size=size) as pilot:
        for step in STEPS:
            await pilot.press(key_of(step.id))
            await settle(app, pilot)
            for section in app.screen.query(Section):
                section.collapsed = False
            await settle(app, pilot)
            await pilot.wait_for_scheduled_animations()  # a step may still be scrolling
            body = app.screen.query_one("#body", VerticalScroll)
            assert clipped_widgets(body) == [], (step.id, size)
            shown = [w for w in body.children if w.display and w.region.height]
            if shown:
                last = max(shown, key=lambda w: w.virtual_region.bottom)
                assert body.virtual_size.height >= last.virtual_region.bottom, (step.id, size)
                body.scroll_end(animate=False)
                await settle(app, pilot)
                await pilot.wait_for_scheduled_animations()
                assert last.region.bottom <= body.region.bottom, (step.id, size, repr(last))

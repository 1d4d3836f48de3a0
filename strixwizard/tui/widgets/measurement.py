"""One live-test figure: a big PASS/FAIL, the figure, its threshold and tool, measured or
replayed, and a sparkline that grows as results arrive."""

from __future__ import annotations

import re

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Sparkline, Static

from strixwizard.model import Status
from strixwizard.tui.panels import PanelView
from strixwizard.tui.text import lines as lines_of
from strixwizard.tui.text import outside
from strixwizard.tui.widgets.status import badge

_CLASS = {Status.PASS: "pass", Status.FAIL: "fail", Status.ERROR: "fail", Status.WARN: "warn",
          Status.SKIP: "skip"}


def panel_id(key: str) -> str:
    return "panel-" + re.sub(r"[^A-Za-z0-9_-]", "_", key)


class MeasurementPanel(Vertical):

    DEFAULT_CSS = """
    MeasurementPanel { border: round $primary; padding: 0 1; height: auto; width: 1fr; margin: 0 0 1 0; }
    MeasurementPanel.pass { border: round $success; }
    MeasurementPanel.fail { border: round $error; }
    MeasurementPanel.warn { border: round $warning; }
    MeasurementPanel .verdict { text-style: bold; }
    MeasurementPanel Sparkline { height: 2; margin-top: 1; }
    MeasurementPanel .spark-note { color: $text-muted; }
    """

    def __init__(self, view: PanelView, points: list[float], running: bool) -> None:
        super().__init__(id=panel_id(view.key))
        self.view = view
        self.points = points
        self.running = running

    def compose(self) -> ComposeResult:
        yield Static(classes="verdict")
        yield Static(classes="details")
        yield Sparkline([], summary_function=max)

    def on_mount(self) -> None:
        self._draw()

    def show(self, view: PanelView, points: list[float], running: bool) -> None:
        self.view, self.points, self.running = view, points, running
        if self.is_mounted:
            self._draw()

    def _draw(self) -> None:
        view = self.view
        self.border_title = outside(view.title)
        self.border_subtitle = outside(view.source)
        for name in set(_CLASS.values()):
            self.set_class(view.status is not None and _CLASS[view.status] == name, name)
        verdict, details = self.query_one(".verdict", Static), self.query_one(".details", Static)
        m = view.verdict
        counters = view.counter_lines()
        if counters:  # fabric counters: judged (WARN) or only reported, with their deltas
            mark = (badge(view.status, 4).stylize("reverse") if view.status is not None
                    else outside("read", "$text-muted"))
            verdict.update(Content.assemble(mark, "  ", outside(view.source, "bold")))
            details.update(lines_of(counters))
        elif m is None or view.status is None:
            verdict.update(outside("running…" if self.running else "not measured", "$text-muted"))
            details.update("")
        else:
            verdict.update(Content.assemble(badge(view.status, 4).stylize("reverse"), "  ",
                                            outside(view.figure, "bold")))
            lines = [f"{m.threshold or 'no threshold'} · {m.tool}"]
            if view.references:
                lines.append(f"also: {view.reference_text()}")
            if m.status in (Status.ERROR, Status.SKIP, Status.FAIL):
                lines.append(m.summary)
            details.update(lines_of(lines))
        spark = self.query_one(Sparkline)
        spark.data = list(self.points)
        spark.display = bool(self.points)

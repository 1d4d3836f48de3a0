"""The Report step's history: the same sparklines and regressions as `strixwizard history`,
from runs recorded through the real history API; the demo says where its runs are stored,
and shows its own history (the soaks it measured on loopback)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from textual.app import App, ComposeResult

from strixwizard.live.trends import load_trends
from strixwizard.tui.widgets.history import HistorySparklines
from tests.support.history import store_run


class _Host(App[None]):
    def compose(self) -> ComposeResult:
        yield HistorySparklines(id="history")


def _shown(site: str, demo: bool, path: Path) -> str:
    async def run() -> str:
        app = _Host()
        async with app.run_test(size=(160, 30)) as pilot:
            widget = app.query_one(HistorySparklines)
            widget.show(site, demo, path)
            await pilot.pause()
            return str(widget.render())

    return asyncio.run(run())


def test_history_widget_shows_sparklines_and_the_regression(tmp_path: Path) -> None:
    path = tmp_path / "history.sqlite"
    store_run(path, 1, rdma=5.0, tcp=25.0, gbps=90.0)
    store_run(path, 2, rdma=6.5, tcp=26.0, gbps=60.0)
    text = _shown("lab", False, path)
    rdma = next(t for t in load_trends(path, "lab") if t.transport == "rdma" and t.kind == "latency")
    line = next(line for line in text.splitlines() if "RDMA latency (ib_write_lat)" in line)
    assert rdma.sparkline in line and "6.50 µs" in line
    assert "regression +30% against the last good run" in line
    tcp = next(line for line in text.splitlines() if "TCP latency (strixwizard tcp ping-pong)" in line)
    assert "regression" not in tcp


def test_history_widget_without_runs(tmp_path: Path) -> None:
    assert "the demo's runs are stored in the demo's own history" in _shown("demo", True,
                                                                          tmp_path / "none.sqlite")
    assert "no test run stored yet" in _shown("lab", False, tmp_path / "none.sqlite")
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(b"junk" * 500)
    assert "not a strixwizard test history" in _shown("lab", False, bad)


def test_history_widget_says_what_it_skipped(tmp_path: Path) -> None:
    from tests.support.hostile.histories import HISTORIES

    path = tmp_path / "history.sqlite"
    HISTORIES["figure-infinite"](path)
    text = " ".join(_shown("lab", False, path).split())
    assert "skipped a stored measurement of run #2" in text and "inf" in text
    assert "RDMA latency (ib_write_lat)" in text  # the rest is still shown

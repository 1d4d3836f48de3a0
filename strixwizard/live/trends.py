"""The test history made visible: per link and measurement, the figures of past runs, a
sparkline, and the latest run beside the last good one (`History.compare_one`, the same
comparison `strixwizard test` prints after a run).

A series is one site, pair, kind, transport and tool. Its figure is the judged one: the
median one-way latency in µs, or the bandwidth in Gb/s. The sparkline's bars follow the
figure (for latency a taller bar is slower, for bandwidth faster). Pure apart from
reading the history file, which is opened read-only.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from strixwizard.live.history import Comparison, History, HistoryError, StoredResult, read_back
from strixwizard.live.results import Measurement
from strixwizard.model import pair_text

BARS = "▁▂▃▄▅▆▇█"
GAP = "·"  # a run that stored no figure for this series
DEFAULT_POINTS = 20
MIN_SPAN = 0.25


def sparkline(values: Sequence[float | None]) -> str:
    """One bar per value, from the smallest up; None is a gap. The scale spans at least a
    quarter of the largest value, so a few percent of noise stays a low bar."""
    present = [v for v in values if v is not None]
    if not present:
        return GAP * len(values)
    low, high = min(present), max(present)
    span = max(high - low, abs(high) * MIN_SPAN)
    out = []
    for value in values:
        if value is None:
            out.append(GAP)
        elif span <= 0:
            out.append(BARS[len(BARS) // 2 - 1])
        else:
            out.append(BARS[min(len(BARS) - 1, int((value - low) / span * len(BARS)))])
    return "".join(out)


@dataclass(frozen=True)
class Point:
    run_id: int
    started_at: str
    status: str | None  # the result's verdict; None for a reference
    figure: float | None

    def to_json(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "started_at": self.started_at, "status": self.status,
                "figure": self.figure}


@dataclass(frozen=True)
class Trend:
    site: str
    pair: tuple[str, str]
    kind: str
    transport: str
    tool: str
    role: str
    unit: str
    points: list[Point]
    comparison: Comparison

    @property
    def label(self) -> str:
        return f"{pair_text(*self.pair)} {self.transport.upper()} {self.kind} ({self.tool})"

    @property
    def sparkline(self) -> str:
        return sparkline([p.figure for p in self.points])

    @property
    def regression(self) -> bool:
        """The latest run is at least 10% worse than the last good run before it."""
        return self.comparison.worse

    @property
    def counts(self) -> bool:
        """A judged measurement (not a reference): its regression sets the exit status."""
        return self.role == "verdict"

    def to_json(self) -> dict[str, Any]:
        c = self.comparison
        return {"site": self.site, "pair": list(self.pair), "kind": self.kind, "transport": self.transport,
                "tool": self.tool, "role": self.role, "unit": self.unit,
                "points": [p.to_json() for p in self.points], "sparkline": self.sparkline,
                "latest": self.points[-1].figure if self.points else None,
                "last_good_figure": c.last_good_figure, "last_good_at": c.last_good_at,
                "change": c.change, "regression": self.regression, "summary": c.summary}


def _trend(history: History, rows: list[tuple[StoredResult, Measurement]], limit: int) -> Trend:
    latest, m = rows[-1]
    comparison = history.compare_one(latest.site, m, before_run=latest.run_id)
    points = [Point(r.run_id, r.started_at, r.status, r.figure) for r, _ in rows[-limit:]]
    return Trend(latest.site, m.pair, latest.kind, latest.transport, latest.tool, m.role, latest.unit,
                 points, comparison)


def load_trends(path: Path, site: str | None = None, limit: int = DEFAULT_POINTS) -> list[Trend]:
    """`read_trends` without the notes."""
    return read_trends(path, site, limit)[0]


def read_trends(path: Path, site: str | None = None, limit: int = DEFAULT_POINTS
                ) -> tuple[list[Trend], list[str]]:
    """Every series of the history file (of one site), latest `limit` runs each, and a note
    for each stored measurement skipped because it breaks the read-back rule.
    Raises HistoryError when the file is missing or is not a strixwizard history."""
    if not path.is_file():
        raise HistoryError(f"no test history at {path} (`strixwizard test` on a real site writes it)")
    try:
        history = History(path, read_only=True)
    except sqlite3.Error as error:
        raise HistoryError(f"{path}: not a strixwizard test history ({error})") from None
    try:
        readable = read_back(history.stored(site))
        series: dict[tuple[str, str, str, str, str], list[tuple[StoredResult, Measurement]]] = {}
        for row, m in readable.rows:
            series.setdefault(row.series_key, []).append((row, m))
        return [_trend(history, rows, limit) for rows in series.values()], readable.skipped
    except (sqlite3.Error, ValueError, KeyError, TypeError) as error:
        raise HistoryError(f"{path}: cannot read the test history ({error})") from None
    finally:
        history.close()


def _figure(value: float | None, unit: str) -> str:
    return f"{value:.2f} {unit}" if value is not None else "no figure"


def text_lines(trends: Sequence[Trend]) -> list[str]:
    """Per series: the sparkline, the latest figure, and the verdict against the last good run."""
    lines = []
    width = max((len(t.label) for t in trends), default=0)
    for t in trends:
        latest = t.points[-1].figure if t.points else None
        c = t.comparison
        if t.regression:
            verdict = (f"REGRESSION {c.change:+.0%} against the last good run "
                       f"({_figure(c.last_good_figure, t.unit)} on {c.last_good_at})")
        elif c.compared and c.change is not None:
            verdict = f"{c.change:+.0%} against the last good run ({_figure(c.last_good_figure, t.unit)})"
        else:
            verdict = "no earlier good run to compare with"
        role = "" if t.counts else " [reference]"
        lines.append(f"{t.label.ljust(width)}  {t.sparkline:<{DEFAULT_POINTS}}  "
                     f"{_figure(latest, t.unit):>12}  {verdict}{role}")
        runs = ", ".join(f"#{p.run_id} {p.started_at[:16]} {_figure(p.figure, t.unit)}"
                         f"{' ' + p.status if p.status else ''}" for p in t.points[-5:])
        lines.append(f"{'':{width}}  runs: {runs}")
    return lines

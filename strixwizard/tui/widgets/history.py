"""The test history of the site on the Report step: a sparkline per link, as `strixwizard
history` prints it, with the regressions against the last good run marked. On the demo, the
demo's own history (`history --demo`): its Test step runs and soaks."""

from __future__ import annotations

from pathlib import Path

from textual.content import Content
from textual.widgets import Static

from strixwizard.live.history import HistoryError, default_history_path, demo_history_path
from strixwizard.live.trends import read_trends
from strixwizard.model import Status
from strixwizard.tui.text import outside
from strixwizard.tui.widgets.status import styled

NB = "\u00a0\u00a0"


class HistorySparklines(Static):
    DEFAULT_CSS = """
    HistorySparklines { height: auto; margin-bottom: 1; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self._shown: tuple[object, ...] | None = None

    def show(self, site: str, demo: bool, path: Path | None = None) -> None:
        """Read the history (read-only) when the site or the file changed since last shown."""
        where = path or (demo_history_path() if demo else default_history_path())
        try:
            stamp = where.stat().st_mtime_ns if where.is_file() else None
        except OSError:
            stamp = None
        key = (site, demo, str(where), stamp)
        if key == self._shown:
            return
        self._shown = key
        self.update(Content("\n").join(self._lines(site, demo, where, stamp is not None)))

    @staticmethod
    def _lines(site: str, demo: bool, where: Path, exists: bool) -> list[Content]:
        lines = [outside("History", "bold $text-accent")]
        if demo:
            lines.append(outside(f"{NB}the demo's runs are stored in the demo's own history, "
                                 "never in a real site's"))
            if not exists:
                return lines
        elif not exists:
            return [*lines, outside(f"{NB}no test run stored yet: each run of the Test step is")]
        try:
            trends, skipped = read_trends(where, site)
        except HistoryError as error:
            return [*lines, styled(f"{NB}{error}", Status.ERROR)]
        lines += [styled(f"{NB}{note}", Status.WARN) for note in skipped[:3]]
        if len(skipped) > 3:
            lines.append(styled(f"{NB}(and {len(skipped) - 3} more skipped)", Status.WARN))
        if not trends:
            return lines if demo else [*lines, outside(f"{NB}no test run of site {site} stored yet")]
        width = max(len(t.label) for t in trends)
        for t in trends:
            latest = t.points[-1].figure if t.points else None
            figure = f"{latest:.2f} {t.unit}" if latest is not None else "no figure"
            change = t.comparison.change
            verdict = (styled(f"  regression {change:+.0%} against the last good run", Status.FAIL)
                       if t.regression and change is not None else Content(""))
            lines.append(Content.assemble(NB, outside(t.label.ljust(width)), "  ",
                                          outside(t.sparkline, "bold"),
                                          outside(f"  {figure}"), verdict))
        return lines

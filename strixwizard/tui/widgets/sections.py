"""Foldable sections (one per node, link or check group) and the FAIL filter they share.

Discover and Fix show one `Section` per node (and per link, and the site); Enter or a click
on its title folds it, and the fold is remembered for the session by the section's title.
`f` shows only the FAIL and ERROR rows on both steps (`Session.failing_only`).
"""

from __future__ import annotations

from collections.abc import Iterable

from textual.content import Content
from textual.widget import Widget
from textual.widgets import Collapsible

from strixwizard.model import CheckResult, Status
from strixwizard.tui.text import outside
from strixwizard.tui.widgets.status import styled

FAILING = (Status.FAIL, Status.ERROR)
FILTER_NOTE = "Showing FAIL and ERROR rows only: f shows every row again."


def failing(results: Iterable[CheckResult], only: bool) -> tuple[CheckResult, ...]:
    """`results`, or only the failing ones when the filter is on."""
    return tuple(r for r in results if not only or r.status in FAILING)


def counted_title(title: str, results: Iterable[CheckResult]) -> Content:
    """"node node-a  ✗ 2 FAIL  ! 3 WARN  ✓ 25 PASS": the section's name and its verdicts."""
    counts: dict[Status, int] = {}
    for result in results:
        counts[result.status] = counts.get(result.status, 0) + 1
    parts: list[Content] = [outside(title, "bold")]
    marks = {Status.FAIL: "✗", Status.ERROR: "✗", Status.WARN: "!", Status.PASS: "✓", Status.SKIP: "-"}
    for status in (Status.FAIL, Status.ERROR, Status.WARN, Status.PASS, Status.SKIP):
        if counts.get(status):
            parts.append(styled(f"  {marks[status]} {counts[status]} {status.value.upper()}", status))
    return Content.assemble(*parts)


class Section(Collapsible):
    """A titled, foldable group; `key` names it for the remembered fold."""

    DEFAULT_CSS = """
    Section { border: round $primary; padding: 0; margin: 0 0 1 0; height: auto;
              background: $background; }
    Section > Contents { padding: 0 1; height: auto; }
    """

    def __init__(self, *children: Widget, key: str, title: Content, folds: dict[str, bool],
                 folded: bool = False, classes: str = "") -> None:
        super().__init__(*children, title=title,  # type: ignore[arg-type]  # Content: no markup
                         collapsed=folds.get(key, folded), classes=f"section-fold {classes}".strip())
        self.key = key
        self.folds = folds

    def _on_collapsible_expanded(self, event: Collapsible.Expanded) -> None:
        if event.collapsible is self:  # remembered for the session
            self.folds[self.key] = False

    def _on_collapsible_collapsed(self, event: Collapsible.Collapsed) -> None:
        if event.collapsible is self:
            self.folds[self.key] = True

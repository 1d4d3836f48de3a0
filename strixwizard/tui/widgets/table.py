"""A DataTable whose cells are drawn again when its columns widen.

Textual's DataTable measures new rows in its Idle handler and widens its
columns there. Rendered cells are cached under a key that holds the row,
the column and an update counter, but not the column's width; when the
screen is painted between `add_row` and that Idle handler (a busy machine,
a slow terminal), the cells drawn at the label's width stay in the cache and
the table keeps showing "Ryz", "gfx", "7.2." after the columns have grown.
Dropping the render caches whenever a width changed fixes it at that point.
"""

from __future__ import annotations

from typing import Any

from textual import events
from textual.containers import ScrollableContainer
from textual.geometry import Region
from textual.widgets import DataTable


class SizedTable(DataTable[Any]):
    """Also grows with its rows (no scrollbar of its own inside the step's scrolling body): the
    body scrolls, and follows the cursor row."""

    def _scroll_cursor_into_view(self, animate: bool = False) -> None:
        super()._scroll_cursor_into_view(animate)
        body = self.parent
        if self.cursor_type != "row" or not self.row_count or not isinstance(body, ScrollableContainer):
            return
        _, y, _, height = self._get_row_region(self.cursor_row)
        top = self.virtual_region.y + y - int(self.scroll_y)  # y counts the header already
        body.scroll_to_region(Region(0, top, 1, height), animate=animate, force=True)

    async def _on_idle(self, event: events.Idle) -> None:
        widths = [column.content_width for column in self.ordered_columns]
        await super()._on_idle(event)
        if widths != [column.content_width for column in self.ordered_columns]:
            self._clear_caches()
            self.refresh()

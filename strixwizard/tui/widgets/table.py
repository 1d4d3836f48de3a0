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
from textual.widgets import DataTable


class SizedTable(DataTable[Any]):
    async def _on_idle(self, event: events.Idle) -> None:
        widths = [column.content_width for column in self.ordered_columns]
        await super()._on_idle(event)
        if widths != [column.content_width for column in self.ordered_columns]:
            self._clear_caches()
            self.refresh()

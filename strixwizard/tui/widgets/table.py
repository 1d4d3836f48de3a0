"""Tables of outside text, and a DataTable whose cells are drawn again when its columns widen.

`TextTable` is the only DataTable the wizard makes: Textual parses a `str` cell, column label or
row label as console markup (`Text.from_markup`), so every `str` given to it becomes a `Text` made
by `strixwizard.tui.text.outside_text` first: a node's `[@click=…]` is shown, never run.

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
from textual.widgets.data_table import ColumnKey, RowKey

from strixwizard.tui.text import outside_text


def _cell(value: object) -> object:
    return outside_text(value) if isinstance(value, str) else value


class TextTable(DataTable[Any]):
    """A DataTable whose `str` cells and labels are outside text, never markup."""

    def add_column(self, label: Any, *, width: int | None = None, key: str | None = None,
                   default: Any = None) -> ColumnKey:
        return super().add_column(_cell(label), width=width, key=key, default=default)  # type: ignore[arg-type]

    def add_row(self, *cells: Any, height: int | None = 1, key: str | None = None,
                label: Any = None) -> RowKey:
        return super().add_row(*[_cell(cell) for cell in cells], height=height, key=key,
                               label=_cell(label))  # type: ignore[arg-type]

    def update_cell(self, row_key: RowKey | str, column_key: ColumnKey | str, value: Any, *,
                    update_width: bool = False) -> None:
        super().update_cell(row_key, column_key, _cell(value), update_width=update_width)


class SizedTable(TextTable):
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


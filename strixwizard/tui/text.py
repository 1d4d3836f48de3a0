"""Outside text for the wizard: what a node, a snapshot, a bundle or a site file says, as data.

Textual reads a `str` handed to `DataTable.add_row`, `Static`, `Label`, `notify` or a border title
as console markup: `[/]` from a firmware version crashes the screen, and
`[@click=app.screenshot('owned.conf','DIR')]x[/]` makes a cell a button that writes a file the node
chose. `outside` is the one function that turns such text into `Content` (never parsed as markup,
every non-printable character spelled out as `\\x1b`); screens build what they show from it and
from their own literals. `TextTable` (widgets/table.py) does it for every cell, and the app's
`notify` shows messages without markup.
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.text import Text
from textual.content import Content

from strixwizard.present.terminal import visible


def outside(value: object, style: str = "") -> Content:
    """`value` (a node's, a file's, an error's words) as Content shown exactly as it is."""
    text = visible(value)
    return Content.styled(text, style) if style else Content(text)


def paragraph(value: object) -> Content:
    """Like `outside`, keeping line breaks: a message the tool wrote around outside words."""
    return Content(visible(value, keep="\n"))


def outside_text(value: object) -> Text:
    """`value` as a Rich `Text` (what a DataTable cell holds), never markup."""
    return Text(visible(value), end="")


def lines(parts: Iterable[Content | str]) -> Content:
    """Lines of Content one under the other; a `str` among them is outside text."""
    return Content("\n").join(part if isinstance(part, Content) else outside(part) for part in parts)

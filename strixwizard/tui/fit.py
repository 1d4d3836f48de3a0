"""Which table columns fit a width, and short forms of long cells. Pure, no Textual.

A table never scrolls sideways: at 80 columns it shows the columns that matter most
and the selected row's every field in a details line below it (see the Discover step).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

#: DataTable's cell padding: one column on each side of a cell
CELL_PADDING = 2


@dataclass(frozen=True)
class Column:
    label: str
    keep: int  # the higher, the longer it stays when the width is short; 0 never drops


def cell_width(label: str, cells: Sequence[str]) -> int:
    return max([len(label), *(len(c) for c in cells)]) + CELL_PADDING


def fitting(columns: Sequence[Column], rows: Sequence[Sequence[str]], width: int) -> list[int]:
    """The indices (in table order) of the columns to show within `width`: columns are left
    out lowest `keep` first (the rightmost of equals first) until the rest fit."""
    widths = [cell_width(c.label, [row[i] for row in rows]) for i, c in enumerate(columns)]
    shown = list(range(len(columns)))
    order = sorted((i for i, c in enumerate(columns) if c.keep > 0),
                   key=lambda i: (columns[i].keep, -i))
    for index in order:
        if sum(widths[i] for i in shown) <= width:
            break
        shown.remove(index)
    return shown


_ARCH = re.compile(r"\.(x86_64|aarch64|amd64)$")


def short_kernel(release: str) -> str:
    """`6.18.5-200.fc43.x86_64` → `6.18.5-200.fc43` (the architecture is the same everywhere)."""
    return _ARCH.sub("", release)


def short_sku(sku: str) -> str:
    """`AMD Ryzen AI Max+ 395` / `Ryzen AI Max+ 395` → `AI Max+ 395`."""
    return re.sub(r"^(AMD\s+)?Ryzen\s+", "", sku)


def short_state(state: str, limit: int = 16) -> str:
    """A node's state cell: its mark and first words, the whole text goes to the details."""
    if len(state) <= limit:
        return state
    lowered = state.lower()
    mark = state[:2] if state[:1] in "✓✗…·" else ""
    for words, short in (("host key", "host key?"), ("cannot connect", "unreachable"),
                         ("timed out", "timed out"), ("authentication", "login refused")):
        if words in lowered:
            return f"{mark}{short}"
    return state[:limit - 1] + "…"


def details(labels: Sequence[str], cells: Sequence[str]) -> str:
    """Every field of one row as `label value · label value`, for the line under a table."""
    return " · ".join(f"{label} {cell}" for label, cell in zip(labels, cells, strict=True) if cell)


def hang(text: str, width: int, first: int, rest: int) -> list[str]:
    """`text` wrapped at word boundaries within `width`: the first line for a place `first`
    columns in (after a badge or an indent), the others for `rest` columns in; the caller puts
    each line at its place, so a wrapped line stays under its start."""
    import textwrap

    lines = textwrap.wrap(text, max(10, width - first), break_long_words=False, break_on_hyphens=False)
    if not lines:
        return [text]
    return [lines[0], *textwrap.wrap(" ".join(lines[1:]), max(10, width - rest), break_long_words=False,
                                     break_on_hyphens=False)]

"""Verdict words in the theme's colours (readable in light and dark themes)."""

from __future__ import annotations

from textual.content import Content

from strixwizard.model import Status
from strixwizard.tui.text import outside

_STYLE = {
    Status.PASS: "bold $success",
    Status.WARN: "bold $warning",
    Status.FAIL: "bold $error",
    Status.ERROR: "bold $error",
    Status.SKIP: "dim",
}
INDENT = "\u00a0" * 4  # non-breaking: wrapping keeps the indent

_MARK = {Status.PASS: "✓", Status.WARN: "!", Status.FAIL: "✗", Status.ERROR: "✗", Status.SKIP: "-"}


def badge(status: Status, width: int = 5) -> Content:
    return outside(f"{_MARK[status]} {status.value.upper().ljust(width)}", _STYLE[status])


def styled(text: str, status: Status) -> Content:
    """`text` (outside words too: shown as they are, never markup) in the colour of `status`."""
    return outside(text, _STYLE[status])

"""An honest empty state or problem: what is (not) there, and what to do next."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static

from strixwizard.tui.text import outside, paragraph
from strixwizard.tui.widgets.hanging import Hanging


class Notice(Static):
    """A boxed paragraph; `kind` is one of info, warning, error, success (a CSS class)."""

    DEFAULT_CSS = """
    Notice { border: round $primary; padding: 0 1; height: auto; margin: 0 0 1 0; }
    Notice.warning { border: round $warning; }
    Notice.error { border: round $error; }
    Notice.success { border: round $success; }
    """

    def __init__(self, text: str = "", kind: str = "info", title: str | None = None,
                 id: str | None = None) -> None:
        super().__init__(Hanging(paragraph(text), marked_only=True), id=id, classes=kind, markup=False)
        if title:
            self.border_title = outside(title)

    def say(self, text: str | Content, kind: str = "info", title: str | None = None) -> None:
        for name in ("info", "warning", "error", "success"):
            self.set_class(name == kind, name)
        self.border_title = None if title is None else outside(title)
        # a list item ("! …") wraps under its text, not under its mark
        self.update(Hanging(text if isinstance(text, Content) else paragraph(text), marked_only=True))

"""Ask for the path of a site file to open."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static


class OpenSiteModal(ModalScreen[Path | None]):
    DEFAULT_CSS = """
    OpenSiteModal { align: center middle; }
    OpenSiteModal > Vertical {
        width: 72; max-width: 95%; height: auto; border: thick $primary; background: $surface;
        padding: 1 2;
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, default: str) -> None:
        super().__init__()
        self.default = default

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("[b]Open a site file[/b]  (Enter opens, Escape cancels)")
            yield Input(self.default, placeholder="path to site.yaml", id="open-path")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        self.dismiss(Path(text).expanduser() if text else None)

    def action_cancel(self) -> None:
        self.dismiss(None)

"""A yes/no question in a modal (after posting's ConfirmationModal)."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from strixwizard.tui.text import outside, paragraph


class ConfirmationModal(ModalScreen[bool]):
    """Dismisses with True (y, or the yes button) or False (n, Escape, or the no button)."""

    DEFAULT_CSS = """
    ConfirmationModal { align: center middle; }
    ConfirmationModal > Vertical {
        width: 72; max-width: 95%; height: auto; max-height: 90%;
        border: thick $warning; background: $surface; padding: 1 2;
    }
    ConfirmationModal #question { margin-bottom: 1; }
    ConfirmationModal Horizontal { height: auto; align-horizontal: right; }
    ConfirmationModal Button { margin-left: 2; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Yes"),
        Binding("n,escape", "answer(False)", "No"),
    ]

    def __init__(self, title: str, question: str, yes: str = "Yes (y)", no: str = "No (n)") -> None:
        super().__init__()
        self.title_text = title
        self.question = question
        self.yes = yes
        self.no = no

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(outside(self.title_text, "bold"), id="title")
            yield Static(paragraph(self.question), id="question")
            with Horizontal():
                yield Button(self.no, id="no")
                yield Button(self.yes, id="yes", variant="warning")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)

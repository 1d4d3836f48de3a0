"""`?`: the wizard's keys, its steps, what each verdict means and where its files go.

Built from the same lists the wizard runs on (`STEPS`, the screens' bindings, the session's
paths), so it cannot drift from what the keys do.
"""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from strixwizard.model import Status
from strixwizard.tui.steps import STEPS
from strixwizard.tui.text import outside
from strixwizard.tui.widgets.hanging import Hanging
from strixwizard.tui.widgets.status import badge

#: What each verdict means, wherever the wizard shows one.
VERDICTS = {
    Status.PASS: "measured or read, and within what the check wants",
    Status.WARN: "works, but costs speed or safety (a slot, a setting, a counter that grew)",
    Status.FAIL: "breaks the cluster or its RDMA path: fix it before deploying",
    Status.ERROR: "could not be judged: the node, the tool or the file did not answer",
    Status.SKIP: "does not apply here (no such NIC, stack or port), or was not asked for",
}
SECTION = "bold $text-accent"


def help_content(keys: list[tuple[str, str]], step_keys: list[tuple[str, str]],
                 files: list[tuple[str, str]]) -> Content:
    """The help text: `keys` everywhere, `step_keys` on this step, and where `files` go."""
    lines: list[Content] = [outside("Keys, on every step", SECTION)]
    lines += [outside(f"  {key:<9} {what}") for key, what in keys]
    if step_keys:
        lines.append(outside("Keys on this step", SECTION))
        lines += [outside(f"  {key:<9} {what}") for key, what in step_keys]
    lines.append(outside("The steps", SECTION))
    lines += [outside(f"  {step.number} {step.title:<9} {step.purpose}") for step in STEPS]
    lines.append(outside("Verdicts", SECTION))
    lines += [Content.assemble("  ", badge(status), outside(f" {meaning}")) for status, meaning in
              VERDICTS.items()]
    lines.append(outside("Where files go", SECTION))
    lines += [outside(f"  {what}: {path}") for what, path in files]
    return Content("\n").join(lines)


class HelpScreen(ModalScreen[None]):
    """Closes with ?, Escape or q."""

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 100; max-width: 100%; height: auto; max-height: 100%;
        border: thick $primary; background: $surface; padding: 0 1;
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("question_mark,escape,q", "close", "Close help"),
    ]

    def __init__(self, content: Content) -> None:
        super().__init__()
        self.content = content

    def compose(self) -> ComposeResult:
        with VerticalScroll() as box:
            box.border_title = "Help  (?, Escape or q closes)"
            yield Static(Hanging(self.content, hang=10), id="help-text")

    def action_close(self) -> None:
        self.dismiss(None)

"""Every new SSH host key of a site in one dialog: each node's key with its fingerprint and a
checkbox of its own; "Trust the checked keys" adds exactly those to known_hosts."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, Checkbox, Static

from strixwizard.tui.hostkeys import UnknownHostKey
from strixwizard.tui.text import outside
from strixwizard.tui.widgets.confirm import ConfirmationModal

COMPARE = ("Compare each with the node's own key (on the node: ssh-keygen -lf "
           "/etc/ssh/ssh_host_ed25519_key.pub). Space unchecks a key you do not trust.")


def key_line(key: UnknownHostKey) -> str:
    return f"{key.node} ({key.host}): {key.key_type} {key.fingerprint}"


class HostKeysModal(ConfirmationModal):
    """Dismisses with True (trust the checked keys: `chosen`) or False (trust none)."""

    DEFAULT_CSS = """
    HostKeysModal #keys { height: auto; max-height: 12; margin-bottom: 1; }
    HostKeysModal Checkbox { width: 100%; border: none; padding: 0; }
    """

    def __init__(self, keys: list[UnknownHostKey], known_hosts: str) -> None:
        count = "a host key" if len(keys) == 1 else f"{len(keys)} host keys"
        intro = f"These nodes offered {count} not in {known_hosts}:"
        question = "\n".join([intro, "", *(f"    {key_line(k)}" for k in keys), "", COMPARE])
        super().__init__("Unknown SSH host keys" if len(keys) > 1 else "Unknown SSH host key", question,
                         yes="Trust the checked keys (y)" if len(keys) > 1 else "Trust it (y)",
                         no="Trust none (n)" if len(keys) > 1 else "Do not trust (n)")
        self.intro = intro
        self.keys = keys
        self.picked: list[UnknownHostKey] = []  # the keys checked when the dialog closed

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(outside(self.title_text, "bold"), id="title")
            yield Static(outside(self.intro))
            with VerticalScroll(id="keys"):
                for index, key in enumerate(self.keys):
                    yield Checkbox(outside(key_line(key)), value=True, id=f"key-{index}")
            yield Static(COMPARE, id="question", markup=False)
            with Horizontal():
                yield Button(self.no, id="no")
                yield Button(self.yes, id="yes", variant="warning")

    def checked(self) -> list[UnknownHostKey]:
        """The keys still checked."""
        return [key for index, key in enumerate(self.keys)
                if self.query_one(f"#key-{index}", Checkbox).value]

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.picked = self.checked() if event.button.id == "yes" else []
        super().on_button_pressed(event)

    def action_answer(self, answer: bool) -> None:
        self.picked = self.checked() if answer else []
        super().action_answer(answer)

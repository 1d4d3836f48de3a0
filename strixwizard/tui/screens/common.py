"""What several steps share: the empty state of a step that needs a discovery first, and
the state of a fix or deploy run."""

from __future__ import annotations

from dataclasses import dataclass, field

from textual.content import Content

from strixwizard.tui.screens.discover import DiscoverState
from strixwizard.tui.steps import BY_ID, refer
from strixwizard.tui.widgets.notice import Notice
from strixwizard.tui.wizard import Wizard
from strixwizard.tui.workspace import StepState


def needs_discovery(wizard: Wizard, notice: Notice) -> bool:
    """Say why there is nothing to show yet; True when the step cannot render."""
    state = wizard.session.of(DiscoverState)
    if state.discovery is not None:
        return False
    if wizard.busy("discover"):
        notice.say(f"The nodes are being probed ({refer('discover')}); this step fills in when "
                   "they are done.", "info", title="Waiting for discovery")
    elif state.error:
        reason, next_step = state.error
        notice.say(f"{reason}\n\nNext: {next_step} (on {refer('discover')}).", "error",
                   title="No discovery")
    else:
        notice.say(f"Nothing discovered yet: press {BY_ID['discover'].key} to discover the nodes "
                   "first.", "info", title="No discovery")
    notice.display = True
    return True


@dataclass
class RunState(StepState):
    """A fix or deploy run (apply or rollback) as its step shows it: the lines it says while
    it runs, then how it ended (`run_error`, the step's own result, or `rolled_back`)."""

    log: list[str] = field(default_factory=list)
    run_error: str | None = None
    rolled_back: str | None = None  # the last rollback, in words
    asking: bool = False  # the run's question is open: nothing runs until it is answered

    def begin(self) -> None:
        """A run starts; what the last one did stays shown until this one ends (a "no" to
        the question leaves it as it was)."""
        self.log, self.run_error = [], None


def show_run(notice: Notice, state: RunState, running: bool, *, running_title: str, note: str,
             failed_title: str, result: tuple[str | Content, str, str] | None) -> None:
    """A run's notice: its last lines while it runs (with `note`), then its error, its
    `result` (text, kind, title) or its rollback; hidden before the first run."""
    notice.display = True
    if running and state.asking:
        notice.say("Answer the question to go on (y or n): nothing has been changed yet.", "info",
                   title="Waiting for your answer")
    elif running:
        log = "\n".join(state.log[-8:]) or "starting…"
        notice.say(f"{log}\n{note}", "info", title=running_title)
    elif state.run_error:
        notice.say(state.run_error, "error", title=failed_title)
    elif result is not None:
        text, kind, title = result
        notice.say(text, kind, title=title)
    elif state.rolled_back:
        notice.say(state.rolled_back, "info", title="Rolled back")
    else:
        notice.display = False

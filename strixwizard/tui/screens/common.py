"""Shared empty states for steps that need a discovery first."""

from __future__ import annotations

from strixwizard.tui.screens.discover import DiscoverState
from strixwizard.tui.steps import BY_ID, refer
from strixwizard.tui.widgets.notice import Notice
from strixwizard.tui.wizard import Wizard


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

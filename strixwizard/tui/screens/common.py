"""Shared empty states for steps that need a discovery first."""

from __future__ import annotations

from strixwizard.tui.session import Session
from strixwizard.tui.widgets.notice import Notice


def needs_discovery(session: Session, notice: Notice) -> bool:
    """Say why there is nothing to show yet; True when the step cannot render."""
    if session.discovery is not None:
        return False
    if session.discovering:
        notice.say("The nodes are being probed (step 2, Discover); this step fills in when "
                   "they are done.", "info", title="Waiting for discovery")
    elif session.discovery_error:
        reason, next_step = session.discovery_error
        notice.say(f"{reason}\n\nNext: {next_step} (on step 2, Discover).", "error",
                   title="No discovery")
    else:
        notice.say("Nothing discovered yet: press 2 to discover the nodes first.", "info",
                   title="No discovery")
    notice.display = True
    return True

"""What a step screen may ask of the app: the session, and whether a job runs.

Screens depend on this protocol, never on `tui/app.py`; they ask for work by posting
messages (`tui/messages.py`) that the app handles.
"""

from __future__ import annotations

from typing import Protocol

from strixwizard.tui.workspace import Session


class Wizard(Protocol):
    session: Session

    def busy(self, group: str) -> bool:
        """A worker of this group ("discover", "ssh", "fix", "deploy-plan", "deploy", "tests")
        is pending or running."""
        ...

    def cancelling(self, group: str) -> bool:
        """The job of this group was asked to stop and is stopping."""
        ...

"""What a step screen may ask of the app: the session, and whether a job runs.

Screens depend on this protocol, never on `tui/app.py`; they ask for work by posting
messages (`tui/messages.py`) that the app handles.
"""

from __future__ import annotations

from typing import Literal, Protocol

from strixwizard.tui.workspace import Session

#: The app's worker groups, one per kind of job (`tui/app.py` runs every worker in one).
WorkerGroup = Literal["discover", "ssh", "fix", "deploy-plan", "deploy", "tests"]
#: The groups of the runs that change nodes (apply, rollback): `JobSaid`, `JobDone`.
RunGroup = Literal["fix", "deploy"]
#: What such a run does.
RunAction = Literal["apply", "rollback"]


class Wizard(Protocol):
    session: Session

    def busy(self, group: WorkerGroup) -> bool:
        """A worker of this group is pending or running."""
        ...

    def cancelling(self, group: WorkerGroup) -> bool:
        """The job of this group was asked to stop and is stopping."""
        ...

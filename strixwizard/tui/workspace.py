"""What the wizard knows right now: the site, saved files, and each step's own state.

Screens read it; only the app changes it (then bumps `version`, and each screen
re-renders when it is next shown). Whether a job runs is not kept here: the app's
workers know it (`Wizard.busy`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from strixwizard.present.report import source_line
from strixwizard.services.discover import SiteSource
from strixwizard.site import Site
from strixwizard.tui.saved import WizardState, output_dir
from strixwizard.tui.steps import later_steps

KEEP = {"keep": True}  # field metadata: kept when the step is reset (e.g. sparkline history)
#: field metadata: kept when an earlier step has a new result, cleared for a new site
#: (the Test step keeps its earlier results when the nodes are discovered again)
KEEP_FOR_SITE = {"keep_for_site": True}


@dataclass
class NodeStatus:
    event: str  # "waiting", "start", "done", "failed"
    text: str


@dataclass
class StepState:
    """A step's own state. `reset()` puts every field back to its default (fields marked
    with `KEEP` metadata stay); a new result of an earlier step resets the later ones."""

    def reset(self, new_site: bool = False) -> None:
        for f in dataclasses.fields(self):
            if f.metadata.get("keep") or (f.metadata.get("keep_for_site") and not new_site):
                continue
            if f.default_factory is not dataclasses.MISSING:
                setattr(self, f.name, f.default_factory())
            elif f.default is not dataclasses.MISSING:
                setattr(self, f.name, f.default)


S = TypeVar("S", bound=StepState)


@dataclass
class Session:
    source: SiteSource | None = None
    site: Site | None = None
    site_error: str | None = None
    #: what the saved report held that breaks the read-back rule, left out on resuming (said once)
    restore_notes: list[str] = field(default_factory=list)
    state: WizardState = field(default_factory=WizardState)
    state_file: Path | None = None
    saved: dict[str, Path] = field(default_factory=dict)
    states: dict[str, StepState] = field(default_factory=dict)  # step id -> its state
    version: int = 0
    failing_only: bool = False  # Discover and Fix show only FAIL and ERROR rows (key f)
    folds: dict[str, bool] = field(default_factory=dict)  # section key -> folded, as the user left it

    def changed(self) -> None:
        self.version += 1

    def of(self, kind: type[S]) -> S:
        """The state of the step whose state is of this type."""
        for state in self.states.values():
            if isinstance(state, kind):
                return state
        raise KeyError(kind.__name__)

    def forget_after(self, step_id: str) -> None:
        """A new result of this step: the states of every later step no longer apply."""
        for step in later_steps(step_id):
            state = self.states.get(step.id)
            if state is not None:
                state.reset()

    def forget_all(self) -> None:
        """A new site: no step's state applies."""
        for state in self.states.values():
            state.reset(new_site=True)

    @property
    def is_demo(self) -> bool:
        return self.source is not None and self.source.demo

    @property
    def out_dir(self) -> Path:
        source = self.source or SiteSource()
        return output_dir(source.site_file, source.demo)

    def describe_source(self) -> str:
        if self.source is None:
            return "no site yet"
        return source_line(self.source.demo, self.source.site_file)

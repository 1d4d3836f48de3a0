"""Where the wizard stopped, saved next to the site file so re-opening resumes there.

- a site file `DIR/site.yaml`: `DIR/.strixwizard-state.json`;
- the demo (its site file is inside the package): `$XDG_STATE_HOME/strixwizard/demo-state.json`
  (`~/.local/state/strixwizard/` by default), which also holds the demo's saved reports.

A missing, unreadable or foreign state file means "start at the first step"; it is
never an error. Writing is best effort (a read-only folder must not stop the wizard).

The state and the reports name the site's hosts, so they are private: files 0600, written
atomically (a temporary file renamed over the old one, never a half-written file), and every
folder strixwizard creates for them 0700. A folder that already exists (the one holding the
site file) keeps its mode; strixwizard's own folder under `$XDG_STATE_HOME` is made 0700.
"""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass, field
from pathlib import Path

from strixwizard.files import private_dir, state_dir
from strixwizard.fixing.journal import write_durably
from strixwizard.readback import ReadBackError, loads
from strixwizard.tui.steps import BY_ID

FORMAT = "strixwizard-wizard-state/1"
#: The progress file holds a step, the steps visited and the reports' paths: a few hundred bytes.
MAX_STATE_BYTES = 1 << 20
STATE_FILE_NAME = ".strixwizard-state.json"


def user_state_dir() -> Path:
    return state_dir()


def private_folder(path: Path) -> Path:
    """`path` made ready for private files: missing folders (and parents) created 0700;
    strixwizard's own state folder (and one inside it) must already be private and the
    user's when it exists (`FolderRefused`, an OSError naming the cure: never changed); any
    other existing folder (a site file's, one the user exports reports to) is left as its
    owner set it."""
    own = user_state_dir()
    if path == own or own in path.parents:
        cure = "or point XDG_STATE_HOME elsewhere"
        private_dir(own, cure)
        return private_dir(path, cure)
    return private_dir(path, judge=False)


def write_private(path: Path, text: str) -> None:
    """`text` to `path`, 0600 and atomically, its folder prepared by `private_folder`."""
    private_folder(path.parent)
    write_durably(path, text, mode=0o600)



def state_path(site_file: Path | None, demo: bool) -> Path:
    if demo or site_file is None:
        return user_state_dir() / ("demo-state.json" if demo else "wizard-state.json")
    return site_file.resolve().parent / STATE_FILE_NAME


def output_dir(site_file: Path | None, demo: bool) -> Path:
    """Where reports are written: beside the site file, or the user's state folder."""
    if demo or site_file is None:
        return user_state_dir() / ("demo" if demo else "reports")
    return site_file.resolve().parent


@dataclass
class WizardState:
    step: str = "site"
    site_file: str | None = None
    visited: list[str] = field(default_factory=list)
    saved_reports: dict[str, str] = field(default_factory=dict)  # format -> path
    saved_at: str | None = None
    #: what the saved reports say (`extras.content_fingerprint`): opening the Report rewrites
    #: them only when something new was found, tested or deployed
    report_fingerprint: str | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "format": FORMAT,
            "step": self.step,
            "site_file": self.site_file,
            "visited": self.visited,
            "saved_reports": self.saved_reports,
            "saved_at": self.saved_at,
            "report_fingerprint": self.report_fingerprint,
        }


def load_state(path: Path) -> WizardState:
    """The saved progress; a file that breaks the read-back rule (`strixwizard/readback.py`:
    too big, nested too deep, not JSON) is a fresh start, as a missing one is, and stays on
    disk until the next save replaces it."""
    try:
        with path.open("rb") as handle:
            data = loads(handle.read(MAX_STATE_BYTES + 1), str(path), max_bytes=MAX_STATE_BYTES)
    except (OSError, ReadBackError):
        return WizardState()
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return WizardState()
    step = data.get("step")
    visited = data.get("visited")
    reports = data.get("saved_reports")
    site_file = data.get("site_file")
    return WizardState(
        step=step if isinstance(step, str) and step in BY_ID else "site",
        site_file=site_file if isinstance(site_file, str) else None,
        visited=[v for v in visited if isinstance(v, str) and v in BY_ID]
        if isinstance(visited, list) else [],
        saved_reports={str(k): str(v) for k, v in reports.items()} if isinstance(reports, dict) else {},
        saved_at=data.get("saved_at") if isinstance(data.get("saved_at"), str) else None,
        report_fingerprint=fingerprint if isinstance(fingerprint := data.get("report_fingerprint"), str)
        else None,
    )


def save_state(path: Path, state: WizardState) -> str | None:
    """Write the state; returns why it could not be written, or None."""
    state.saved_at = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    try:
        write_private(path, json.dumps(state.to_json(), indent=2, allow_nan=False) + "\n")
    except OSError as error:
        return f"cannot save the wizard's progress to {path}: {error.strerror or error}"
    return None


PREFERENCES_FILE = "wizard-preferences.json"
THEMES = ("textual-dark", "textual-light")


def load_theme(default: str = THEMES[0]) -> str:
    """The theme the user chose last (`$XDG_STATE_HOME/strixwizard/wizard-preferences.json`)."""
    try:
        with (user_state_dir() / PREFERENCES_FILE).open("rb") as handle:
            data = loads(handle.read(MAX_STATE_BYTES + 1), PREFERENCES_FILE, max_bytes=MAX_STATE_BYTES)
    except (OSError, ReadBackError):
        return default
    theme = data.get("theme") if isinstance(data, dict) else None
    return theme if theme in THEMES else default


def save_theme(theme: str) -> str | None:
    """Remember the theme (0600, like every file of the wizard); returns why it could not be."""
    try:
        write_private(user_state_dir() / PREFERENCES_FILE,
                      json.dumps({"theme": theme}, allow_nan=False) + "\n")
    except OSError as error:
        return f"cannot remember the theme in {user_state_dir()}: {error.strerror or error}"
    return None

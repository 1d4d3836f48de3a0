"""The real CLI as a user runs it, in a separate process, and the doctor JSON schema."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_PATH = ROOT / "strixwizard" / "schema" / "doctor.schema.json"

#: The head's state folder (journals, dry runs, the demo's test history) for CLI runs whose test
#: names none: one per test session, never this machine's own ~/.local/state.
_STATE = tempfile.TemporaryDirectory(prefix="strixwizard-test-state-")
#: The same for what runs inside the test process (the wizard under Pilot saves its resume file
#: and stores its test runs there); a test that needs its own folder sets its own.
os.environ["XDG_STATE_HOME"] = _STATE.name


class CliResult:
    def __init__(self, done: subprocess.CompletedProcess[str]) -> None:
        self.rc = done.returncode
        self.stdout = done.stdout
        self.stderr = done.stderr

    def json(self) -> Any:
        return json.loads(self.stdout)


def run_cli(*args: str, env: dict[str, str] | None = None, timeout: float = 60) -> CliResult:
    """Run `python -m strixwizard ARGS` as a user would, in a separate process."""
    full_env = dict(os.environ)
    full_env.pop("NO_COLOR", None)
    full_env.setdefault("XDG_STATE_HOME", _STATE.name)
    full_env.update(env or {})
    done = subprocess.run(
        [sys.executable, "-m", "strixwizard", *args],
        capture_output=True, text=True, timeout=timeout, env=full_env, check=False,
        stdin=subprocess.DEVNULL,
    )
    return CliResult(done)


def validate_report(document: Any, schema: dict[str, Any]) -> None:
    import jsonschema

    jsonschema.validate(document, schema, format_checker=jsonschema.FormatChecker())

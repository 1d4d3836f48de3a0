"""Shared fixtures: the real CLI as a subprocess, snapshots built from fake nodes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from strixwizard.demo.builder import FakeNode

ROOT = Path(__file__).resolve().parent.parent
SCHEMA_PATH = ROOT / "strixwizard" / "schema" / "doctor.schema.json"


class CliResult:
    def __init__(self, done: subprocess.CompletedProcess[str]) -> None:
        self.rc = done.returncode
        self.stdout = done.stdout
        self.stderr = done.stderr

    def json(self) -> Any:
        return json.loads(self.stdout)


#: The head's state folder (journals, dry runs, the demo's test history) for CLI runs whose test
#: names none: one per test session, never this machine's own ~/.local/state.
_STATE = tempfile.TemporaryDirectory(prefix="strixwizard-test-state-")
#: The same for what runs inside the test process (the wizard under Pilot saves its resume file
#: and stores its test runs there); a test that needs its own folder sets its own.
os.environ["XDG_STATE_HOME"] = _STATE.name


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


@pytest.fixture
def cli() -> Callable[..., CliResult]:
    return run_cli


@pytest.fixture
def snapshot_of(tmp_path: Path) -> Callable[[FakeNode], Path]:
    """Capture a fake node into a snapshot directory under tmp_path."""
    counter = iter(range(1000))

    def make(node: FakeNode, as_tar: bool = False) -> Path:
        out = tmp_path / f"{node.hostname}-{next(counter)}{'.tar.gz' if as_tar else ''}"
        if not as_tar:
            out.mkdir()
        return node.capture(out, as_tar=as_tar)

    return make


@pytest.fixture(scope="session")
def report_schema() -> dict[str, Any]:
    return json.loads(SCHEMA_PATH.read_text())


def validate_report(document: Any, schema: dict[str, Any]) -> None:
    import jsonschema

    jsonschema.validate(document, schema, format_checker=jsonschema.FormatChecker())


#: The modules that start the root-only lab: a test module that uses them is marked `lab`.
LAB_MODULES = frozenset({"tests.lab", "tests.vmlab"})


def _uses_the_lab(module: ModuleType) -> bool:
    return any(
        (value.__name__ if isinstance(value, ModuleType) else getattr(value, "__module__", None))
        in LAB_MODULES
        for value in vars(module).values()
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test of a module that imports the lab `lab` (`-m "not lab"`: the unit tests)."""
    for item in items:
        module = getattr(item, "module", None)
        if module is not None and _uses_the_lab(module):
            item.add_marker(pytest.mark.lab)

"""The CLI as tests run it: `run_cli` in a separate process, as a user runs it (start-up cost,
imports, signals, exit codes, the terminal filter); `invoke` in this process, where the
process is not what is tested (each start-up costs a second or more on these machines).
Both return a `CliResult`. And the doctor JSON schema."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
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


@contextlib.contextmanager
def _environment(env: dict[str, str] | None) -> Iterator[None]:
    """os.environ as `run_cli` gives a child (no NO_COLOR, the session's state folder, `env`),
    restored after."""
    saved = dict(os.environ)
    os.environ.pop("NO_COLOR", None)
    os.environ.setdefault("XDG_STATE_HOME", _STATE.name)
    os.environ.update(env or {})
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _capture() -> io.TextIOWrapper:
    """A text stream like a pipe's: UTF-8 over bytes (``.buffer`` there), not a terminal."""
    return io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict", write_through=True)


def invoke(*args: str, env: dict[str, str] | None = None) -> CliResult:
    """`strixwizard ARGS` in this process: `main(ARGS)` with stdin empty, stdout and stderr
    captured as a pipe would, and the environment `run_cli` would give; usage errors
    (argparse's SystemExit) become their exit code, as in a process."""
    from strixwizard.cli.main import main

    out, err = _capture(), _capture()
    with _environment(env), open(os.devnull, encoding="utf-8") as stdin, \
            contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        saved_stdin, sys.stdin = sys.stdin, stdin
        try:
            code = main(list(args))
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
            if isinstance(exit_.code, str):
                print(exit_.code, file=sys.stderr)
        finally:
            sys.stdin = saved_stdin
    texts = [stream.buffer.getvalue().decode("utf-8") for stream in (out, err)]  # type: ignore[attr-defined]
    return CliResult(subprocess.CompletedProcess(["strixwizard", *args], code, *texts))


def validate_report(document: Any, schema: dict[str, Any]) -> None:
    import jsonschema

    jsonschema.validate(document, schema, format_checker=jsonschema.FormatChecker())

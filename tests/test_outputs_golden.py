"""What the commands print for the demo and for every scenario, held byte for byte against
files in tests/data/golden/: a change of layout (moved renderers, stack packages, one
discovered value) must not change a user's output. A deliberate change regenerates them:

    STRIXWIZARD_REGEN_GOLDEN=1 python -m pytest tests/test_outputs_golden.py

and the diff of tests/data/golden/ is then reviewed like code.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import CliResult
from tests.support.scenarios import SCENARIOS, capture

GOLDEN = Path(__file__).parent / "data" / "golden"
ROOT = Path(__file__).resolve().parents[1]
REGENERATE = os.environ.get("STRIXWIZARD_REGEN_GOLDEN") == "1"

#: Commands on the demo whose output is the same on every machine (no clock, no live measure).
DEMO_COMMANDS: dict[str, tuple[str, ...]] = {
    "doctor.json": ("doctor", "--demo", "--json"),
    "doctor.txt": ("doctor", "--demo"),
    "doctor-verbose.txt": ("doctor", "--demo", "-v"),
    "fix.json": ("fix", "--demo", "--json"),
    "fix.txt": ("fix", "--demo"),
    "deploy-ray.json": ("deploy", "--demo", "--json"),
    "deploy-ray.txt": ("deploy", "--demo"),
    "deploy-llama.json": ("deploy", "--demo", "--stack", "llama-rpc", "--json"),
    "deploy-llama.txt": ("deploy", "--demo", "--stack", "llama-rpc"),
}

#: Text wraps at the terminal's width: the same on every machine.
WIDTH = {"COLUMNS": "100", "LINES": "40"}

_VOLATILE = re.compile(r'"generated_at": "[^"]*"')


def _stable(text: str, tmp: Path | None = None) -> str:
    """The output without what differs between runs and clones: the time it was made, the
    test's folder, the checkout's own folder (the demo's snapshots are inside it)."""
    text = _VOLATILE.sub('"generated_at": "-"', text).replace(str(ROOT), "<CHECKOUT>")
    return text.replace(str(tmp), "<SNAPSHOTS>") if tmp is not None else text


def _held(name: str, text: str) -> None:
    path = GOLDEN / name
    if REGENERATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    assert path.exists(), f"no golden file {path}: run with STRIXWIZARD_REGEN_GOLDEN=1"
    expected = path.read_text(encoding="utf-8")
    assert text == expected, f"{name} differs from {path} (regenerate on purpose only)"


def _output(result: CliResult) -> str:
    return f"exit {result.rc}\n--- stdout\n{result.stdout}--- stderr\n{result.stderr}"


@pytest.mark.parametrize("name", sorted(DEMO_COMMANDS))
def test_demo_output_is_unchanged(name: str, cli: Any) -> None:
    _held(f"demo/{name}", _stable(_output(cli(*DEMO_COMMANDS[name], env=WIDTH))))


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_scenario_doctor_json_is_unchanged(scenario: str, tmp_path: Path, cli: Any) -> None:
    captured = capture(tmp_path, SCENARIOS[scenario]())
    result = cli("doctor", "--json", "--snapshot", *(str(tmp_path / name) for name in captured),
                 env=WIDTH)
    document = json.loads(result.stdout)
    assert document["summary"], "the doctor judged nothing"
    _held(f"scenarios/{scenario}.json", _stable(_output(result), tmp_path))

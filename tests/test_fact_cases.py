"""Every declared tool output and file against a table of real texts (pyinfra-style cases).

tests/data/fact_cases/<output name>.json holds, per declared output (facts/outputs.py),
a list of cases: `input` (the text as the tool prints it or the file holds it), and
either `parsed` (the parsed value, as plain JSON: dataclasses as objects, tuples as
lists, tuple keys joined with "/") or `"error": true` (the parser must refuse it).
`source` says where the text comes from. Outputs with a renderer must also write
their own parsed value back unchanged.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from strixwizard.facts import declared, output
from strixwizard.facts.outputs import Output
from tests.support.fact_cases import CASES_DIR


def plain(value: Any) -> Any:
    """A parsed value as JSON would hold it."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {"/".join(map(str, k)) if isinstance(k, tuple) else str(k): plain(v)
                for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [plain(v) for v in value]
    return value


def _load(path: Path) -> list[dict[str, Any]]:
    cases = json.loads(path.read_text())
    assert isinstance(cases, list) and cases, f"{path.name}: a non-empty list of cases"
    return cases


def _all_cases() -> list[Any]:
    params = []
    for path in sorted(CASES_DIR.glob("*.json")):
        for index, case in enumerate(_load(path)):
            params.append(pytest.param(path.stem, case, id=f"{path.stem}[{index}]"))
    return params


@pytest.mark.parametrize(("name", "case"), _all_cases())
def test_output_parses_as_recorded(name: str, case: dict[str, Any]) -> None:
    out: Output[Any] = output(name)
    if case.get("error"):
        with pytest.raises(ValueError):
            out.parse(case["input"])
        return
    value = out.parse(case["input"])
    assert plain(value) == case["parsed"], case.get("source")
    if out.render is not None:
        assert out.parse(out.render(case["input"], value)) == value


def test_every_declared_output_has_cases_and_every_case_file_an_output() -> None:
    names = {o.name for o in declared()}
    files = {p.stem for p in CASES_DIR.glob("*.json")}
    assert names - files == set(), "declared outputs without cases"
    assert files - names == set(), "case files for outputs nobody declares"
    for path in sorted(CASES_DIR.glob("*.json")):
        assert any("parsed" in c for c in _load(path)), f"{path.name}: no case that parses"
        assert all("source" in c and "input" in c for c in _load(path)), path.name

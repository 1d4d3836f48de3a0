"""Structural rules every check and fix must follow (in the spirit of sos's conformance tests),
and no jargon a user cannot look up in the text the product shows."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from pathlib import Path

import pytest

import checks
import fixes
from strixwizard.checking.declare import Check
from strixwizard.fixing.context import Fix

ROOT = Path(__file__).resolve().parent.parent
TESTS = Path(__file__).resolve().parent

#: Modules that observe or plan and so must do no I/O of their own.
PURE_DIRS = [ROOT / "checks", ROOT / "fixes", ROOT / "strixwizard" / "facts"]
FORBIDDEN_IMPORTS = {"os", "subprocess", "socket", "io", "pathlib", "shutil", "tempfile",
                     "paramiko", "pyroute2", "pyverbs", "urllib", "http", "requests"}
FORBIDDEN_CALLS = {"open", "exec", "eval", "__import__", "input", "print"}


def _check_objects_in_modules() -> dict[str, Check]:
    found: dict[str, Check] = {}
    for info in pkgutil.iter_modules(checks.__path__):
        module = importlib.import_module(f"checks.{info.name}")
        for name, value in vars(module).items():
            if isinstance(value, Check):
                found[f"checks.{info.name}.{name}"] = value
    return found


def test_every_declared_check_is_registered() -> None:
    declared = _check_objects_in_modules()
    assert declared, "no checks found"
    missing = [name for name, check in declared.items() if check not in checks.ALL]
    assert not missing, f"declared but not in checks.ALL: {missing}"


def test_check_ids_are_unique_and_well_formed() -> None:
    ids = [c.id for c in checks.ALL]
    assert len(ids) == len(set(ids)), "duplicate check ids"
    for check_id in ids:
        assert re.fullmatch(r"[a-z0-9_]+(\.[a-z0-9_]+)+", check_id), check_id


@pytest.mark.parametrize("check", checks.ALL, ids=lambda c: c.id)
def test_check_is_documented(check: Check) -> None:
    assert check.title.strip(), "title"
    assert check.why.strip(), "why"
    assert check.doc, f"{check.id}: the check function needs a docstring"


@pytest.mark.parametrize("check", checks.ALL, ids=lambda c: c.id)
def test_check_names_a_registered_fix(check: Check) -> None:
    if check.fix is not None:
        assert check.fix in fixes.BY_ID, f"{check.id} names unknown fix {check.fix}"


def test_fix_ids_are_unique() -> None:
    ids = [f.id for f in fixes.ALL]
    assert len(ids) == len(set(ids))


def test_every_declared_fix_is_registered() -> None:
    declared = {}
    for info in pkgutil.iter_modules(fixes.__path__):
        module = importlib.import_module(f"fixes.{info.name}")
        declared.update({f"fixes.{info.name}.{name}": value for name, value in vars(module).items()
                         if isinstance(value, Fix)})
    assert declared, "no fixes found"
    missing = [name for name, fix in declared.items() if fix not in fixes.FIXES]
    assert not missing, f"declared but not in fixes.FIXES: {missing}"


def _test_sources() -> str:
    skip = {"test_conformance.py"}
    return "\n".join(p.read_text() for p in TESTS.glob("test_*.py") if p.name not in skip)


@pytest.mark.parametrize("check", checks.ALL, ids=lambda c: c.id)
def test_check_has_a_test(check: Check) -> None:
    assert f'"{check.id}"' in _test_sources(), f"no test mentions {check.id!r}"


def _pure_sources() -> list[Path]:
    return [p for d in PURE_DIRS for p in sorted(d.rglob("*.py"))]


@pytest.mark.parametrize("path", _pure_sources(), ids=lambda p: str(p.relative_to(ROOT)))
def test_pure_modules_do_no_io(path: Path) -> None:
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                assert alias.name.split(".")[0] not in FORBIDDEN_IMPORTS, (
                    f"{path.name}:{node.lineno} imports {alias.name}"
                )
        elif isinstance(node, ast.ImportFrom) and node.module:
            assert node.module.split(".")[0] not in FORBIDDEN_IMPORTS, (
                f"{path.name}:{node.lineno} imports from {node.module}"
            )
            assert not node.module.startswith("strixwizard.probe.") or node.module in (
                "strixwizard.probe",
            ), f"{path.name}:{node.lineno} reaches a concrete probe ({node.module})"
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            assert node.func.id not in FORBIDDEN_CALLS, (
                f"{path.name}:{node.lineno} calls {node.func.id}()"
            )


def test_user_facing_text_has_no_jargon_a_user_cannot_look_up() -> None:
    root = Path(__file__).resolve().parent.parent
    sources = [p for d in ("checks", "fixes", "strixwizard") for p in (root / d).rglob("*.py")]
    for path in sources:
        text = path.read_text(encoding="utf-8")
        for jargon in ("kyuz0 measured", "init is {", "'s init is", "kyuz0's gfx1151-rccl"):
            assert jargon not in text, f"{path}: {jargon}"

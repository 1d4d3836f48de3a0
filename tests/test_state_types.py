"""States are declared once: the op names of the node's step runner, the wizard's worker
groups, the schema version and the exit-code rule. mypy checks every use against the
`Literal` types; these tests keep the places mypy cannot see (string comparisons in the
handlers, Textual's `group=` strings, constants) in step with the declarations."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import get_args

import pytest

from strixwizard.model import SCHEMA_VERSION, exit_code
from strixwizard.onnode import ops
from strixwizard.tui.wizard import RunGroup, WorkerGroup

#: what a newer Python changes (dataclasses): run on 3.12 and up too
pytestmark = pytest.mark.interpreter

ROOT = Path(__file__).resolve().parent.parent / "strixwizard"
OPS = set(get_args(ops.Op))


def _tree(relative: str) -> ast.Module:
    return ast.parse((ROOT / relative).read_text())


def _compared_ops(tree: ast.AST) -> set[str]:
    """Every string compared with a name `op` or with `request.get("op")`."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and len(node.comparators) == 1:
            left, right = node.left, node.comparators[0]
            about_op = (isinstance(left, ast.Name) and left.id == "op") or "'op'" in ast.unparse(left)
            if about_op and isinstance(right, ast.Constant) and isinstance(right.value, str):
                names.add(right.value)
    return names


def test_the_node_answers_every_declared_op_and_nothing_else() -> None:
    assert _compared_ops(_tree("onnode/ops.py")) == OPS
    assert ops.handle({"op": "teleport"}) == {"ok": False, "error": "unknown op 'teleport'"}


def test_the_head_side_handlers_name_only_declared_ops() -> None:
    replayed = _compared_ops(_tree("node/replay.py"))
    local = _compared_ops(_tree("node/local.py"))
    assert replayed and replayed <= OPS
    assert local == {"mtu_get", "mtu_set"}


def test_every_request_is_built_by_ops_request() -> None:
    """A dict literal with an "op" key anywhere else would escape mypy's check of the name."""
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        if path == ROOT / "onnode" / "ops.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Dict) and any(
                    isinstance(k, ast.Constant) and k.value == "op" for k in node.keys):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert found == []
    assert ops.request("read", path="/etc/hostname") == {"op": "read", "path": "/etc/hostname"}


def test_every_worker_runs_in_a_declared_group() -> None:
    groups = set()
    for node in ast.walk(_tree("tui/app.py")):
        if isinstance(node, ast.keyword) and node.arg == "group" and isinstance(node.value, ast.Constant):
            groups.add(node.value.value)
    assert groups and groups <= set(get_args(WorkerGroup))
    assert set(get_args(RunGroup)) <= set(get_args(WorkerGroup))


def test_one_schema_version_and_one_exit_rule() -> None:
    defined = []
    for path in sorted(ROOT.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.target] if isinstance(node, ast.AnnAssign) else []
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name) and (name.id == "SCHEMA_VERSION"
                                                       or name.id.startswith("EXIT_")):
                        defined.append(f"{path.relative_to(ROOT)}:{name.id}")
    assert defined == ["model.py:SCHEMA_VERSION", "model.py:EXIT_OK", "model.py:EXIT_FAIL",
                       "model.py:EXIT_NO_VERDICT"]
    assert SCHEMA_VERSION == 1
    assert [exit_code(True), exit_code(False), exit_code(None)] == [0, 1, 2]

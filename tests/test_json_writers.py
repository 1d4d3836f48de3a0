"""Every JSON the project writes is JSON: each `json.dump`/`json.dumps` call in strixwizard/
(the package's own modules and the scripts it sends to nodes as source text) passes
`allow_nan=False`, so a NaN or an infinity is an error where it is written, never `NaN` or
`Infinity` in a file, a `--json` document or a node's answer.

Why a walk over every call rather than one writer everyone must use: the scripts that run on
the nodes (strixwizard/onnode, the deploy stacks' probes) are sent as source and cannot import
the package, so no single writer can reach them; a walk finds a new call wherever it is added."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "strixwizard"


def _trees() -> Iterator[tuple[str, ast.AST]]:
    """Each module, and each string constant in it that is itself a Python script using json."""
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        where = str(path.relative_to(PACKAGE.parent))
        yield where, tree
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and "json." in node.value:
                try:
                    script = ast.parse(node.value)
                except SyntaxError:
                    continue  # prose that mentions json, not a script
                yield f"{where}:{node.lineno} (a script in a string)", script


def _writer(node: ast.AST) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("dump", "dumps") and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "json")


def _refuses_nan(call: ast.Call) -> bool:
    return any(k.arg == "allow_nan" and isinstance(k.value, ast.Constant) and k.value.value is False
               for k in call.keywords)


def test_every_json_writer_refuses_nan_and_infinity() -> None:
    found, missing = 0, []
    for where, tree in _trees():
        for node in ast.walk(tree):
            if _writer(node):
                assert isinstance(node, ast.Call)
                found += 1
                if not _refuses_nan(node):
                    missing.append(f"{where}:{node.lineno}: {ast.unparse(node)[:80]}")
    assert found > 40, "the walk found too few writers: is it looking in the right place?"
    assert not missing, "json.dump(s) without allow_nan=False:\n" + "\n".join(missing)


def test_no_writer_hides_behind_another_name() -> None:
    """`from json import dumps` or `import json as j` would slip past the walk above."""
    hidden = []
    for where, tree in _trees():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "json" \
                    and any(alias.name in ("dump", "dumps", "JSONEncoder") for alias in node.names):
                hidden.append(f"{where}:{node.lineno}")
            if isinstance(node, ast.Import) and any(a.name == "json" and a.asname for a in node.names):
                hidden.append(f"{where}:{node.lineno}")
    assert not hidden, hidden

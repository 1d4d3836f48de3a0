"""Paths strixwizard keeps its files in are spelled once (strixwizard/places.py for a node's,
strixwizard/files.py `state_dir` for this machine's) and imported everywhere else."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

from strixwizard import files, places
from strixwizard.fixing.journal import default_journal_dir
from strixwizard.live.history import default_history_path
from strixwizard.onnode import collector, ops
from strixwizard.tui.saved import user_state_dir

ROOT = Path(__file__).resolve().parent.parent


@cache
def _constants(where: Path) -> dict[str, set[str]]:
    """Each product module's string constants (docstrings left out)."""
    found = {}
    for package in ("strixwizard", "checks", "fixes"):
        for path in sorted((where / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                          if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef)
                          and node.body and isinstance(node.body[0], ast.Expr)}
            found[str(path.relative_to(where))] = {
                n.value for n in ast.walk(tree)
                if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings}
    return found


def _spelled(literal: str, where: Path = ROOT) -> list[str]:
    """Modules of the product holding `literal` as a string constant."""
    return [module for module, constants in _constants(where).items() if literal in constants]


@pytest.mark.parametrize(("literal", "home"), [
    (places.NODE_STATE_DIR, "strixwizard/places.py"),
    ("XDG_STATE_HOME", "strixwizard/files.py"),
    ("/sys/kernel/config/rdma_cm", "strixwizard/facts/rdma.py"),
    ("/etc/systemd/network", "strixwizard/facts/persistence.py"),
    ("/etc/modprobe.d", "strixwizard/facts/persistence.py"),
])
def test_a_place_is_spelled_once(literal: str, home: str) -> None:
    assert _spelled(literal) == [home]
    assert _spelled(places.NODE_JOURNAL_DIR) == []  # places.py builds it from NODE_STATE_DIR


def test_the_rule_sees_a_second_spelling(tmp_path: Path) -> None:
    for name in ("strixwizard/a.py", "fixes/b.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        text = f'"""{places.NODE_JOURNAL_DIR}"""\nJOURNAL = "{places.NODE_JOURNAL_DIR}"\n'
        (tmp_path / name).write_text(text)
    assert _spelled(places.NODE_JOURNAL_DIR, tmp_path) == ["strixwizard/a.py", "fixes/b.py"]


def test_this_machine_s_folders_are_inside_the_one_state_dir(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert files.state_dir() == tmp_path / "strixwizard" == user_state_dir()
    assert default_journal_dir().parent == default_history_path().parent == files.state_dir()


def test_the_node_programs_add_the_same_admin_tool_folders() -> None:
    """Each node program is sent to the node on its own, so each keeps its own copy."""
    assert collector.SBIN_DIRS == ops.SBIN_DIRS

"""The test suite's own layout: a test module is named for the subject it tests, never for the
review round that asked for it, and no module under tests/ imports a test module (what tests
share lives in tests/support/). Imports are read from the syntax tree (top level and inside
functions, absolute and relative); each rule is also run once on a small tree that breaks it, so
a rule that stopped seeing anything would fail here rather than pass forever."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
#: Words that name a review round, not a subject: a test about hostile site files is filed with
#: the site file's tests, not under "hostile".
ROUND_WORDS = ("newcomer", "round_two", "round_three", "safety", "hostile", "faults")


def module_name(path: Path, root: Path) -> str:
    """The dotted name of a module under `root` (a directory named `tests`, a package)."""
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, root: Path) -> set[str]:
    """Every module the file at `path` imports, by its absolute name; `from PACKAGE import NAME`
    counts as PACKAGE and as PACKAGE.NAME (NAME may be a module)."""
    own = module_name(path, root)
    package = own if path.name == "__init__.py" else own.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                module = ".".join([*base, module] if module else base)
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)
    return names


def is_test_module(name: str) -> bool:
    """Whether the dotted `name` is a test module under tests/ (or a name inside one)."""
    parts = name.split(".")
    return parts[0] == "tests" and any(part.startswith("test_") for part in parts[1:])


def imports_of_test_modules(root: Path) -> dict[str, set[str]]:
    """Each module under `root` that imports test modules -> those test modules."""
    found: dict[str, set[str]] = {}
    for path in sorted(root.rglob("*.py")):
        modules = {".".join(name.split(".")[:2]) for name in imported_modules(path, root)
                   if is_test_module(name)}
        if modules:
            found[str(path.relative_to(root))] = modules
    return found


def round_named(root: Path) -> list[str]:
    """The test modules under `root` whose name holds a review round's word."""
    return sorted(str(path.relative_to(root)) for path in root.rglob("test_*.py")
                  if any(word in path.stem for word in ROUND_WORDS))


def test_no_module_under_tests_imports_a_test_module() -> None:
    assert imports_of_test_modules(TESTS) == {}


def test_no_test_module_is_named_after_a_review_round() -> None:
    assert round_named(TESTS) == []


def test_the_rules_see_a_tree_that_breaks_them(tmp_path: Path) -> None:
    root = tmp_path / "tests"
    (root / "support" / "deep").mkdir(parents=True)
    files = {
        "__init__.py": "",
        "test_walk.py": "def helper() -> None: ...\n",
        "test_absolute.py": "from tests.test_walk import helper\n",
        "test_dotted.py": "import tests.test_walk as walk\n",
        "test_package.py": "def test_x() -> None:\n    from tests import test_walk\n",
        "test_relative.py": "from .test_walk import helper\n",
        "test_newcomer_text.py": "from tests.support.deep import ok\n",
        "test_site_hostile.py": "",
        "support/__init__.py": "",
        "support/deep/__init__.py": "from ...test_walk import helper\nok = 1\n",
        "support/fine.py": "from tests.support.deep import ok\nfrom . import deep\n",
    }
    for name, text in files.items():
        (root / name).write_text(text)
    walk = {"tests.test_walk"}
    assert imports_of_test_modules(root) == {
        "support/deep/__init__.py": walk, "test_absolute.py": walk, "test_dotted.py": walk,
        "test_package.py": walk, "test_relative.py": walk}
    assert round_named(root) == ["test_newcomer_text.py", "test_site_hostile.py"]

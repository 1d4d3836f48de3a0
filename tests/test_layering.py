"""The architecture as tests: layers, loops and purity, read from the source (tests/support/layering.py).

Each rule is also run once on a small tree with a deliberate violation, so a rule that
stopped seeing anything would fail here rather than pass forever.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from tests.support import layering
from tests.support.layering import (
    ROOT,
    Edge,
    cycles,
    edges,
    front_imports_from_engines,
    identity_caches,
    kind_name_comparisons,
    module_files,
    present_imports_of_textual,
    stack_knowledge,
    up_imports,
    wizard_imports_of_the_cli,
)

#: The imports that run back up the layers, each with why it stays. At most four.
ALLOWED_UP = {
    # `strixwizard` with no command opens the wizard: the one front door that starts the other.
    ("strixwizard.cli.main", "strixwizard.tui.app"),
}

#: What the pure modules (they observe or plan: checks/, fixes/, strixwizard/facts/) may import
#: from the standard library: nothing that reads, writes, starts or connects.
PURE_STDLIB = {
    "__future__", "abc", "bisect", "collections", "collections.abc", "copy", "dataclasses",
    "datetime", "decimal", "enum", "fnmatch", "fractions", "functools", "heapq", "ipaddress",
    "itertools", "json", "math", "operator", "posixpath", "re", "shlex", "statistics", "string",
    "textwrap", "types", "typing", "unicodedata",
}
#: ... and from the project: types and data, never a session, a probe implementation or the
#: programs that change a node. `site`, `known_bad` and `checking.declare` read the tool's own
#: files (the site file's types, the shipped known-bad list, the check catalog) — never a node.
PURE_PROJECT = {
    "strixwizard.checking.declare", "strixwizard.errors", "strixwizard.fixing.context",
    "strixwizard.fixing.model", "strixwizard.fixing.readers", "strixwizard.known_bad",
    "strixwizard.model", "strixwizard.node.command", "strixwizard.places", "strixwizard.probe",
    "strixwizard.nmcli", "strixwizard.site",
    "strixwizard.topology", "strixwizard.units", "strixwizard.vendors", "strixwizard",
}
PURE_PREFIXES = ("checks", "fixes", "strixwizard.facts", "strixwizard.vendors")
#: Builtins that reach files, code or modules by name.
FORBIDDEN_NAMES = {"open", "exec", "eval", "compile", "__import__", "input", "print", "globals",
                   "vars", "breakpoint", "__builtins__", "__loader__", "__spec__"}


def _is_pure(module: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in PURE_PREFIXES)


def test_no_import_loop_in_the_product() -> None:
    assert cycles() == [], "modules that import each other (deferred imports included)"


def test_only_the_allowed_imports_run_back_up_the_layers() -> None:
    found = {(e.source, e.target) for e in up_imports()}
    assert len(ALLOWED_UP) <= 4
    assert found <= ALLOWED_UP, "\n".join(str(e) for e in up_imports()
                                          if (e.source, e.target) not in ALLOWED_UP)


def test_engines_never_import_the_front_ends() -> None:
    assert front_imports_from_engines() == []


def test_the_wizard_imports_nothing_from_the_command_line() -> None:
    assert wizard_imports_of_the_cli() == [], "the wizard reaches into cli/ (move what it needs down)"


def test_the_presentation_layer_never_imports_textual() -> None:
    assert present_imports_of_textual() == []


def test_every_module_has_a_layer() -> None:
    assert [m for m in module_files() if layering.layer_name(m) == "unplaced"] == []


def test_no_generic_measurement_module_compares_a_kind_name() -> None:
    """The runner, the services, the command line and the wizard's Test step ask a kind's
    declaration (strixwizard/live/kinds/); an `if kind == "soak"` would be a kind known by name."""
    assert layering.kind_names() >= {"latency", "bandwidth", "rccl", "matrix", "decode", "soak"}
    assert kind_name_comparisons() == []


def test_no_module_level_cache_keyed_on_object_identity() -> None:
    """A discovery's topology is built once and handed down, never looked up by identity."""
    assert identity_caches() == []


def _stdlib_imports(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.append((node.lineno, node.module))
    return [(line, name) for line, name in found if not name.startswith(("strixwizard", "checks", "fixes"))]


def purity_violations(root: Path = ROOT) -> list[str]:
    """Everything a pure module reaches that could do I/O: a standard-library module outside
    the allow-list (importlib and os included), a project module outside the allow-list (a
    session, a probe implementation, the fix ops), or a builtin that opens or evaluates."""
    modules = module_files(root)
    problems = []
    for module, path in modules.items():
        if not _is_pure(module):
            continue
        problems += [f"{module}:{line} imports {name}" for line, name in _stdlib_imports(path)
                     if name not in PURE_STDLIB]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Name) and node.id in FORBIDDEN_NAMES:
                problems.append(f"{module}:{node.lineno} uses {node.id}")
    graph: dict[str, set[str]] = {}
    for edge in edges(root):
        graph.setdefault(edge.source, set()).add(edge.target)
    for module in [m for m in modules if _is_pure(m)]:
        for target in sorted(graph.get(module, ())):
            if not _is_pure(target) and target not in PURE_PROJECT:
                problems.append(f"{module} imports {target}")
    return problems


def test_checks_facts_and_plans_reach_no_io() -> None:
    assert purity_violations() == []


def transport_payload_imports(root: Path = ROOT) -> list[Edge]:
    """The node seam's transports importing the facts (the same layer): a session is handed
    the collection spec by its caller and carries whatever it is given."""
    return [e for e in edges(root) if e.source.startswith("strixwizard.node")
            and (e.target == "strixwizard.facts" or e.target.startswith("strixwizard.facts."))]


def test_the_node_sessions_do_not_know_their_payload() -> None:
    assert transport_payload_imports() == []


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    for package in ("strixwizard", "checks", "fixes"):
        (tmp_path / package).mkdir(exist_ok=True)
        (tmp_path / package / "__init__.py").touch()
    return tmp_path


@pytest.fixture
def violating_tree(tmp_path: Path) -> Path:
    return _tree(tmp_path, {
        "strixwizard/cli/__init__.py": "",
        "strixwizard/cli/fix.py": "",
        "strixwizard/fixing/__init__.py": "",
        # an engine reaching a front end, inside a function
        "strixwizard/fixing/engine.py": "def f():\n    from strixwizard.cli import fix\n",
        # a loop closed only when a function runs
        "strixwizard/node/__init__.py": "",
        "strixwizard/node/a.py": "from strixwizard.node import b\n",
        "strixwizard/node/b.py": "def g():\n    import strixwizard.node.a\n",
        # a check that loads subprocess by name, and one that calls the fix ops
        "checks/sneaky.py": "import importlib\nrun = importlib.import_module('subprocess').run\n",
        "checks/direct.py": "from strixwizard.onnode import ops\n",
        "strixwizard/onnode/__init__.py": "",
        "strixwizard/onnode/ops.py": "",
        # and a builtin that opens a file
        "strixwizard/facts/__init__.py": "",
        "strixwizard/facts/spec.py": "SPEC = {}\n",
        # a transport that fetches its own payload
        "strixwizard/node/ssh.py": "def script():\n    from strixwizard.facts.spec import SPEC\n",
        "strixwizard/facts/bad.py": "def read():\n    return open('/proc/cpuinfo').read()\n",
        # the wizard borrowing from the command line, and a renderer loading Textual
        "strixwizard/tui/__init__.py": "",
        "strixwizard/tui/screen.py": "from strixwizard.cli.fix import plan_text\n",
        "strixwizard/present/__init__.py": "",
        "strixwizard/present/page.py": "def f():\n    from textual.content import Content\n",
        # a kind declared in its module, and a generic module that knows it by name
        "strixwizard/live/__init__.py": "",
        "strixwizard/live/kinds/__init__.py": "",
        "strixwizard/live/kinds/toy.py": "KIND = MeasurementKind(name='toy', help='a toy')\n",
        "strixwizard/live/runner.py": "def run(kind):\n    if kind in ('x', 'toy'):\n        return 1\n",
        "strixwizard/services/__init__.py": "",
        "strixwizard/services/measure.py": "def f(args):\n    return args.kind != 'toy'\n",
        # a memo keyed on id(), and a list of recent results matched with `is`
        "strixwizard/memo.py": "_SEEN: dict[int, str] = {}\n\ndef f(x):\n"
                               "    return _SEEN.setdefault(id(x), str(x))\n",
        "strixwizard/recent.py": "RECENT = []\n\ndef g(x):\n    for seen, out in RECENT:\n"
                                 "        if seen is x:\n            return out\n"
                                 "    RECENT.insert(0, (x, 1))\n    return 1\n",
        # not caches: a constant table compared by identity, state keyed by value
        "strixwizard/table.py": "NAMES = {int: 'whole'}\n\ndef h(kind):\n"
                                "    return NAMES.get(kind) if kind is not float else 'n'\n",
        "strixwizard/state.py": "HELD = {}\n\ndef k(path, fd):\n    if HELD.get(path) is None:\n"
                                "        HELD[path] = fd\n",
    })


def test_the_rules_see_a_deliberate_violation(violating_tree: Path) -> None:
    up = up_imports(violating_tree)
    assert Edge("strixwizard.fixing.engine", "strixwizard.cli.fix", 2, True) in up
    assert front_imports_from_engines(violating_tree)
    assert cycles(violating_tree) == [["strixwizard.node.a", "strixwizard.node.b"]]
    problems = purity_violations(violating_tree)
    assert "checks.sneaky:1 imports importlib" in problems
    assert "checks.direct imports strixwizard.onnode.ops" in problems
    assert "strixwizard.facts.bad:2 uses open" in problems
    assert wizard_imports_of_the_cli(violating_tree) == [
        Edge("strixwizard.tui.screen", "strixwizard.cli.fix", 1, False)]
    assert present_imports_of_textual(violating_tree) == [
        "strixwizard.present.page:2 imports textual.content"]
    assert transport_payload_imports(violating_tree) == [
        Edge("strixwizard.node.ssh", "strixwizard.facts.spec", 2, True)]
    assert kind_name_comparisons(violating_tree) == [
        "strixwizard.live.runner:2 compares with toy", "strixwizard.services.measure:2 compares with toy"]
    assert identity_caches(violating_tree) == [
        "strixwizard.memo:1 _SEEN (used by identity in f, line 4)",
        "strixwizard.recent:1 RECENT (used by identity in g, line 5)",
    ]


def _stack_names() -> set[str]:
    from strixwizard.deploy.plan import STACKS

    return set(STACKS)


def test_the_deploy_engine_and_its_front_doors_know_no_stack() -> None:
    """The generic deploy modules, `cli/deploy.py`, `services/deploy.py` and the wizard's
    Deploy screen import no stack's package and name no stack: each stack declares itself."""
    assert stack_knowledge(_stack_names()) == []


def test_the_stack_rule_sees_a_deliberate_violation(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "strixwizard/deploy/__init__.py": "",
        "strixwizard/deploy/stacks/__init__.py": "",
        "strixwizard/deploy/stacks/hello/__init__.py": "NAME = 'hello'\n",
        # the engine comparing a stack's name, and importing its package inside a function
        "strixwizard/deploy/engine.py": "def f(plan):\n    from strixwizard.deploy.stacks import hello\n"
                                        "    return plan.stack == 'hello'\n",
        # the wizard's screen, for type checking only
        "strixwizard/tui/__init__.py": "",
        "strixwizard/tui/screens/__init__.py": "",
        "strixwizard/tui/screens/deploy.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                             "    from strixwizard.deploy.stacks.hello import NAME\n",
    })
    assert stack_knowledge({"hello"}, root) == [
        "strixwizard.deploy.engine:2 imports strixwizard.deploy.stacks.hello",
        "strixwizard.deploy.engine:3 names the stack 'hello'",
        "strixwizard.tui.screens.deploy:3 imports strixwizard.deploy.stacks.hello",
        "strixwizard.tui.screens.deploy:3 imports strixwizard.deploy.stacks.hello.NAME",
    ]


def test_the_layers_named_in_the_design_are_the_ones_tested() -> None:
    design = (ROOT / "docs" / "contributing" / "architecture.md").read_text(encoding="utf-8")
    assert "python scripts/layers.py" in design


@pytest.mark.interpreter
@pytest.mark.parametrize("package", ["strixwizard", "checks", "fixes"])
def test_every_module_of_the_package_imports(package: str) -> None:
    """Each module imports on this interpreter (scripts/test_pythons.sh: on 3.12 and up too):
    a syntax or standard-library change shows here before any test of what the module does."""
    import importlib
    import pkgutil

    root = importlib.import_module(package)
    names = [info.name for info in pkgutil.walk_packages(root.__path__, f"{package}.")
             if not info.name.endswith(".__main__")]  # that one runs the CLI
    assert len(names) > 3
    failed = {}
    for name in names:
        try:
            importlib.import_module(name)
        except Exception as error:  # every failure named, not the first alone
            failed[name] = f"{type(error).__name__}: {error}"
    assert not failed, failed

"""The product's import graph, read from the source (every `import`, top level and deferred
inside functions; `if TYPE_CHECKING:` blocks left out, they never run), and the layer rules
it is held to. `scripts/layers.py` prints the same figures for a person.

Layers, top down (DESIGN.md "Where the layout is going"): a module may import its own layer
and any layer below it; an import of a higher layer "runs back up".
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("strixwizard", "checks", "fixes")

#: Top down. Each layer is the module prefixes it holds.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("entry", ("strixwizard.__main__",)),
    ("tui", ("strixwizard.tui",)),
    ("cli", ("strixwizard.cli",)),
    ("services", ("strixwizard.services",)),
    ("deploy", ("strixwizard.deploy",)),
    ("present", ("strixwizard.present",)),
    ("fixes", ("fixes",)),
    ("fixing", ("strixwizard.fixing",)),
    ("checks", ("checks",)),
    ("checking", ("strixwizard.checking",)),
    ("measure", ("strixwizard.live", "strixwizard.decode", "strixwizard.demo", "strixwizard.charts",
                 "strixwizard.svg")),
    ("discovery", ("strixwizard.discovery",)),
    ("topology", ("strixwizard.topology",)),
    ("seam", ("strixwizard.node", "strixwizard.facts")),
    ("probe", ("strixwizard.probe",)),
    ("site", ("strixwizard.site", "strixwizard.inventory")),
    ("base", ("strixwizard.model", "strixwizard.vendors", "strixwizard.onnode", "strixwizard.errors",
              "strixwizard.known_bad", "strixwizard.files", "strixwizard")),
)

#: The layers the engines live in: none of them may import `cli`, `services` or `tui`.
FRONT = ("entry", "tui", "cli", "services")


@dataclass(frozen=True, order=True)
class Edge:
    source: str
    target: str
    line: int
    deferred: bool  # inside a function: runs when called, not when imported

    def __str__(self) -> str:
        return f"{self.source} -> {self.target} (line {self.line}{', deferred' if self.deferred else ''})"


def module_files(root: Path = ROOT) -> dict[str, Path]:
    modules: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            modules[name] = path
    return modules


def layer_of(module: str) -> int:
    """The index of a module's layer (0 is the top); the longest matching prefix wins."""
    best, best_len = len(LAYERS), -1
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best_len:
                best, best_len = index, len(prefix)
    return best


def layer_name(module: str) -> str:
    index = layer_of(module)
    return LAYERS[index][0] if index < len(LAYERS) else "unplaced"


def _type_checking_blocks(tree: ast.Module) -> set[int]:
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                skipped.update(id(n) for n in ast.walk(child))
    return skipped


def _targets(module: str, is_package: bool, node: ast.Import | ast.ImportFrom,
             modules: dict[str, Path]) -> Iterator[str]:
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        if node.level:
            package = module.split(".") if is_package else module.split(".")[:-1]
            package = package[: len(package) - node.level + 1]
            base = ".".join([*package, *([node.module] if node.module else [])])
        else:
            base = node.module or ""
        names = [f"{base}.{alias.name}" for alias in node.names] + [base]
    for name in names:
        # `from a.b import c`: the module a.b.c if it is one, else a.b itself
        while name and name not in modules:
            name = name.rpartition(".")[0]
        if name and name != module:
            yield name


@cache
def edges(root: Path = ROOT) -> tuple[Edge, ...]:
    modules = module_files(root)
    found: set[Edge] = set()
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        skipped = _type_checking_blocks(tree)
        in_function: set[int] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                in_function.update(id(n) for n in ast.walk(node) if n is not node)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom) and id(node) not in skipped:
                for target in set(_targets(module, path.name == "__init__.py", node, modules)):
                    found.add(Edge(module, target, node.lineno, id(node) in in_function))
    return tuple(sorted(found))


def up_imports(root: Path = ROOT) -> list[Edge]:
    """Imports of a higher layer than the importer's own."""
    return [e for e in edges(root) if layer_of(e.target) < layer_of(e.source)]


def front_imports_from_engines(root: Path = ROOT) -> list[Edge]:
    """Engine modules importing `cli`, `services` or `tui`."""
    front = {LAYERS.index(next(layer for layer in LAYERS if layer[0] == name)) for name in FRONT}
    return [e for e in edges(root) if layer_of(e.source) not in front and layer_of(e.target) in front]


def wizard_imports_of_the_cli(root: Path = ROOT) -> list[Edge]:
    """The wizard importing the command line. Both front doors stand on the same layers below
    them (present, services); what one needs of the other moves down, never across."""
    return [e for e in edges(root) if layer_name(e.source) == "tui" and layer_name(e.target) == "cli"]


#: Packages the presentation layer never imports: it renders text, for a terminal or a file,
#: and `doctor` (which renders through it) must never load Textual.
NOT_IN_PRESENT = ("textual",)


def present_imports_of_textual(root: Path = ROOT) -> list[str]:
    """Every import of Textual in `strixwizard.present` (deferred and `TYPE_CHECKING` ones too)."""
    found = []
    for module, path in module_files(root).items():
        if layer_name(module) != "present":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            found += [f"{module}:{node.lineno} imports {name}" for name in names
                      if any(name == bad or name.startswith(bad + ".") for bad in NOT_IN_PRESENT)]
    return found


def cycles(root: Path = ROOT) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan), deferred imports included:
    a loop that closes only when a function runs is still a loop a reader must untie."""
    graph: dict[str, set[str]] = {}
    for edge in edges(root):
        graph.setdefault(edge.source, set()).add(edge.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    counter = [0]

    def visit(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(groups)


#: The generic measurement modules: they run, serve, offer and show any kind and know none by
#: name (each kind is declared in strixwizard/live/kinds/).
GENERIC_MEASUREMENT = ("strixwizard.live.runner", "strixwizard.services.measure", "strixwizard.cli.live",
                       "strixwizard.cli.live_run", "strixwizard.tui.screens.measure",
                       "strixwizard.present.measure")


def kind_names(root: Path = ROOT) -> set[str]:
    """The names the kind modules declare (`name="..."` of their `MeasurementKind`), read from
    their syntax trees."""
    names: set[str] = set()
    for path in sorted((root / "strixwizard" / "live" / "kinds").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Call) and ast.unparse(node.func).endswith("MeasurementKind"):
                names.update(k.value.value for k in node.keywords if k.arg == "name"
                             and isinstance(k.value, ast.Constant) and isinstance(k.value.value, str))
    return names


def _strings(node: ast.expr) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [s for e in node.elts for s in _strings(e)]
    return []


def kind_name_comparisons(root: Path = ROOT) -> list[str]:
    """Every comparison (`==`, `!=`, `in`, `not in`, …) in a generic measurement module with a
    kind's name as a literal on either side: the string chains a declaration replaces."""
    names = kind_names(root)
    modules = module_files(root)
    found = []
    for module in GENERIC_MEASUREMENT:
        path = modules.get(module)
        if path is None:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Compare):
                named = {s for side in (node.left, *node.comparators) for s in _strings(side)} & names
                if named:
                    found.append(f"{module}:{node.lineno} compares with {', '.join(sorted(named))}")
    return found


#: The deploy stacks' home: each package under it is one stack (strixwizard/deploy/stacks/NAME/).
STACKS_PACKAGE = "strixwizard.deploy.stacks"
#: Modules that must know no stack: the generic deploy engine (every `strixwizard.deploy`
#: module outside a stack's package) and the deploy front doors.
STACK_BLIND = ("strixwizard.cli.deploy", "strixwizard.services.deploy", "strixwizard.tui.screens.deploy")


def stack_blind(module: str) -> bool:
    if module in STACK_BLIND:
        return True
    in_deploy = module == "strixwizard.deploy" or module.startswith("strixwizard.deploy.")
    return in_deploy and not module.startswith(STACKS_PACKAGE + ".")


def _imported(module: str, is_package: bool, tree: ast.Module) -> Iterator[tuple[int, str]]:
    """Every module an import statement names, TYPE_CHECKING and function bodies included."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                package = module.split(".") if is_package else module.split(".")[:-1]
                package = package[: len(package) - node.level + 1]
                base = ".".join([*package, *([node.module] if node.module else [])])
            else:
                base = node.module or ""
            yield node.lineno, base
            yield from ((node.lineno, f"{base}.{alias.name}") for alias in node.names)


def stack_knowledge(names: set[str], root: Path = ROOT) -> list[str]:
    """Where a module that must know no stack imports a stack's package or holds a string
    literal equal to a stack's name (`names`)."""
    problems = []
    for module, path in module_files(root).items():
        if not stack_blind(module):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for line, target in _imported(module, path.name == "__init__.py", tree):
            if target.startswith(STACKS_PACKAGE + "."):
                problems.append(f"{module}:{line} imports {target}")
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names:
                problems.append(f"{module}:{node.lineno} names the stack {node.value!r}")
    return sorted(set(problems))


#: Calls that make a mutable container (a cache, a registry being filled, a memo).
MUTABLE_FACTORIES = frozenset({"list", "dict", "set", "OrderedDict", "defaultdict",
                               "WeakKeyDictionary", "WeakValueDictionary", "WeakSet"})
_SINGLETONS = (None, True, False, Ellipsis)


def _mutable(value: ast.expr | None) -> bool:
    if isinstance(value, ast.List | ast.Dict | ast.Set | ast.ListComp | ast.DictComp | ast.SetComp):
        return True
    if isinstance(value, ast.Call):
        name = value.func.attr if isinstance(value.func, ast.Attribute) else \
            value.func.id if isinstance(value.func, ast.Name) else ""
        return name in MUTABLE_FACTORIES
    return False


def _identity_uses(function: ast.AST) -> list[int]:
    """Lines where a function keys or matches by object identity: a call of `id(...)`, or an
    `is`/`is not` between two values neither of which is None, True, False or `...`."""
    lines = []
    for node in ast.walk(function):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "id":
            lines.append(node.lineno)
        elif isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            for op, left, right in zip(node.ops, operands[:-1], operands[1:], strict=True):
                if isinstance(op, ast.Is | ast.IsNot) and not any(
                        isinstance(side, ast.Constant) and side.value in _SINGLETONS
                        for side in (left, right)):
                    lines.append(node.lineno)
    return lines


#: Methods that change a list, dict or set in place.
MUTATORS = frozenset({"append", "insert", "extend", "setdefault", "update", "pop", "popitem",
                      "add", "clear", "remove", "discard"})


def _mutated(function: ast.AST, names: set[str]) -> set[str]:
    """Which of `names` a function changes in place: `NAME[k] = v`, `del NAME[k]`,
    `NAME[k] += v`, or a call of one of MUTATORS on it."""
    changed = set()
    for node in ast.walk(function):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign | ast.Delete):
            targets = list(node.targets)
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in MUTATORS:
            targets = [node.func.value]
        for target in targets:
            if isinstance(target, ast.Subscript):
                target = target.value
            if isinstance(target, ast.Name) and target.id in names:
                changed.add(target.id)
    return changed


def identity_caches(root: Path = ROOT) -> list[str]:
    """Module-level mutable state keyed on object identity: a cache the rule forbids.

    The rule, per module: a name bound at the top level (`NAME = ...` or `NAME: T = ...`) to a
    mutable container (a list, dict or set display or comprehension, or a call of one of
    MUTABLE_FACTORIES) that a function of the module changes in place (`_mutated`: state kept
    between calls, not a constant table) is flagged when a function that reads or changes it
    also keys or matches by identity (`_identity_uses`: `id(...)`, or `is`/`is not` between
    two values neither of which is None, True, False or `...`). Such a cache outlives the
    values it answers for, answers for an object that merely reuses an address, and hides
    which call built what: the value is built once and handed down instead
    (`discovery.Discovery.topology` for the fabric)."""
    found = []
    for module, path in module_files(root).items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        containers: dict[str, int] = {}
        for statement in tree.body:
            if isinstance(statement, ast.Assign) and _mutable(statement.value):
                targets = [t.id for t in statement.targets if isinstance(t, ast.Name)]
            elif isinstance(statement, ast.AnnAssign) and _mutable(statement.value) \
                    and isinstance(statement.target, ast.Name):
                targets = [statement.target.id]
            else:
                continue
            containers.update({name: statement.lineno for name in targets})
        functions = [f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)]
        state = set().union(*(_mutated(f, set(containers)) for f in functions)) if functions else set()
        for function in functions:
            used = {n.id for n in ast.walk(function) if isinstance(n, ast.Name)} & state
            identity = _identity_uses(function)
            for name in sorted(used) if identity else ():
                found.append(f"{module}:{containers[name]} {name} (used by identity in "
                             f"{function.name}, line {identity[0]})")
    return sorted(set(found))

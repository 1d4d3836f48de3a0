"""Import cycles among the product's modules, read from the source (nothing is imported).

Every `import` and `from ... import` statement counts: at module level and inside functions
(a deferred import still closes a loop); with `--with-type-checking`, also those under
`if TYPE_CHECKING:` (never run, read by mypy only). A cycle is a strongly connected group
of two or more modules; `from a import b` where `a.b` is a module is an edge to `a.b`.

    python scripts/import_cycles.py                       # strixwizard, checks, fixes
    python scripts/import_cycles.py strixwizard/deploy --with-type-checking
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = ("strixwizard", "checks", "fixes")


def modules(root: Path, packages: Iterable[str]) -> dict[str, Path]:
    found = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _type_checking_nodes(tree: ast.Module) -> set[int]:
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            inside.update(id(n) for n in ast.walk(node))
    return inside


def graph(root: Path, packages: Sequence[str], type_checking: bool = False) -> dict[str, set[str]]:
    known = modules(root, packages)
    prefixes = tuple(p.replace("/", ".") for p in packages)

    def resolve(name: str) -> str | None:
        if not any(name == p or name.startswith(p + ".") for p in prefixes):
            return None
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    edges: dict[str, set[str]] = {name: set() for name in known}
    for name, path in known.items():
        tree = ast.parse(path.read_text(), str(path))
        skip = set() if type_checking else _type_checking_nodes(tree)
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
            else:
                continue
            for target in targets:
                if (found := resolve(target)) is not None and found != name:
                    edges[name].add(found)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of two or more modules (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(edges[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
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

    sys.setrecursionlimit(max(10000, sys.getrecursionlimit()))
    for node in sorted(edges):
        if node not in index:
            visit(node)
    return sorted(groups)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("packages", nargs="*", default=list(PRODUCT),
                        help="package directories under the checkout (default: the product)")
    parser.add_argument("--with-type-checking", action="store_true",
                        help="count imports under `if TYPE_CHECKING:` too")
    args = parser.parse_args(argv)
    edges = graph(ROOT, args.packages, args.with_type_checking)
    found = cycles(edges)
    print(f"{len(edges)} modules, {len(found)} cycle(s), {sum(map(len, found))} modules in cycles")
    for group in found:
        print("  " + " <-> ".join(group))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())

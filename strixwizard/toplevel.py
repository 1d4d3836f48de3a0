"""The owner's top-level packages `checks` and `fixes`, and the check that the ones Python
imports are strixwizard's own.

The wheel installs three top-level packages: `strixwizard`, `checks` and `fixes`. The two
generic names are the owner's layout (a check or a fix is a file in a folder of that name at
the top of the repository), and they keep it when installed: giving them other names in the
wheel means remapping folders with setuptools' `package-dir`, which editable installs follow
unreliably (pypa/setuptools#4248), so a checkout and an install could import different code.
The cost is that another project, or a folder named `checks` on the import path (the current
folder under `python -m`), may shadow them. That is detected instead of risked: importing
`strixwizard` finds where `checks` and `fixes` come from without running them and, when one is
not the folder beside strixwizard's own, stops with exit status 2 naming both paths, before
any check judges a node with another project's code. strixwizard installed on its own (pipx,
`uv tool install`, a virtualenv) never meets the case.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

#: The top-level packages strixwizard ships beside itself.
OWN = ("checks", "fixes")


def _location(name: str) -> Path | None:
    """Where the package `name` is (or would be) imported from, without importing it."""
    module = sys.modules.get(name)
    if module is not None:
        origin = getattr(module, "__file__", None)
        locations = list(getattr(module, "__path__", None) or [])
    else:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            return None
        if spec is None:
            return None
        origin = spec.origin if spec.has_location else None
        locations = list(spec.submodule_search_locations or [])
    if origin and Path(origin).name == "__init__.py":
        return Path(origin).parent
    if origin:
        return Path(origin)  # a module, not a package: not ours either way
    return Path(locations[0]) if locations else None


def foreign_packages(home: Path | None = None) -> list[tuple[str, Path | None, Path]]:
    """(name, where it is found, where strixwizard's own is) for each of `OWN` that Python
    would not import from beside strixwizard."""
    home = home or Path(__file__).resolve().parent.parent
    found = []
    for name in OWN:
        expected = home / name
        where = _location(name)
        if where is None or where.resolve() != expected.resolve():
            found.append((name, where, expected))
    return found


def require_own_packages() -> None:
    """Exit with status 2, naming both paths, when `checks` or `fixes` is another project's."""
    for name, where, expected in foreign_packages():
        shown = "nowhere" if where is None else str(where)
        sys.stderr.write(
            f"strixwizard: the `{name}` package Python imports is {shown}, not strixwizard's own "
            f"{expected}: another project installs a top-level `{name}` too, or a folder of that "
            "name is on the import path. strixwizard stops rather than run another project's "
            "code; install it on its own (pipx install, uv tool install, or its own virtualenv) "
            "or run it from another folder.\n")
        raise SystemExit(2)

"""The check engine and the fix engine are handed their registries (`checks.ALL`,
`fixes.FIXES`/`BY_ID`) by the services; they never import `checks/` or `fixes/` themselves,
so a test or another front end can run them over a registry of its own."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "strixwizard"


def _imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_the_engines_import_no_registry() -> None:
    found = {f"{path.relative_to(ROOT)}: {name}"
             for package in ("checking", "fixing") for path in sorted((ROOT / package).glob("*.py"))
             for name in _imported(path) if name.split(".")[0] in ("checks", "fixes")}
    assert found == set()


def test_a_registry_of_ones_own_plans_only_its_fixes(tmp_path: Path) -> None:
    import fixes
    from strixwizard.discovery import Discovery
    from strixwizard.fixing.planning import plan_site
    from strixwizard.services.nodes import RunRequest, resolve_run

    found = Discovery.of(*resolve_run(RunRequest(demo=True)))
    only_mtu = tuple(f for f in fixes.FIXES if f.id == "net.mtu")
    plan = plan_site(found, fixes=only_mtu)
    assert [(p.fix, p.node) for p in plan.plans if p.steps] == [("net.mtu", "node-b")]
    assert len({p.fix for p in plan_site(found, fixes=fixes.FIXES).plans if p.steps}) > 1
    assert plan_site(found, fixes=()).plans == []

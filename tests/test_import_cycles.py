"""No import loop in the product, at module level or deferred inside a function, measured by
`scripts/import_cycles.py` (the source is read, nothing imported)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from import_cycles import PRODUCT, cycles, graph  # noqa: E402


def test_no_module_imports_itself_back_at_run_time() -> None:
    assert cycles(graph(ROOT, PRODUCT)) == []


def test_the_measure_sees_a_deferred_import_loop(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from pkg.b import f\n")
    (package / "b.py").write_text("def f():\n    from pkg import a\n    return a\n")
    (package / "c.py").write_text("from typing import TYPE_CHECKING\n"
                                  "if TYPE_CHECKING:\n    from pkg import a\n")
    assert cycles(graph(tmp_path, ["pkg"])) == [["pkg.a", "pkg.b"]]
    (package / "a.py").write_text("from pkg import c\n")
    assert cycles(graph(tmp_path, ["pkg"])) == []
    assert cycles(graph(tmp_path, ["pkg"], type_checking=True)) == [["pkg.a", "pkg.c"]]

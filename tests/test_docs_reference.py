"""The reference pages of the manual (docs/reference/) are what scripts/gen_docs.py makes from
the code today: every check and fix from their registries, the command line from its parser,
the JSON schemas and the exit codes. A change to any of them regenerates the pages."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "docs" / "reference"
REGENERATE = ".venv/bin/python scripts/gen_docs.py"


def _generator() -> ModuleType:
    path = ROOT / "scripts" / "gen_docs.py"
    spec = importlib.util.spec_from_file_location("gen_docs", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_docs"] = module
    spec.loader.exec_module(module)
    return module


def test_the_generated_reference_pages_are_current() -> None:
    pages = _generator().generate()
    on_disk = {path.name for path in REFERENCE.glob("*.md")}
    assert on_disk == set(pages), f"docs/reference/ differs from what the code makes: run {REGENERATE}"
    stale = [name for name, text in pages.items()
             if (REFERENCE / name).read_text(encoding="utf-8") != text]
    assert not stale, f"out of date: {', '.join(stale)}; run {REGENERATE}"


def test_every_check_fix_and_command_has_its_place_in_the_reference() -> None:
    import checks
    import fixes
    from strixwizard.cli.main import build_parser

    text = {name: (REFERENCE / name).read_text(encoding="utf-8") for name in ("checks.md", "fixes.md",
                                                                            "cli.md")}
    assert all(f"{{ #{check.id} }}" in text["checks.md"] for check in checks.ALL)
    assert all(f"{{ #{fix_id} }}" in text["fixes.md"] for fix_id in fixes.PLANS)
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    assert commands and all(f"{{ #strixwizard-{name} }}" in text["cli.md"] for name in commands)
    options = {option for command in commands.values() for action in command._actions
               for option in action.option_strings}
    assert all(f"`{option}" in text["cli.md"] or f", {option}" in text["cli.md"] for option in options)

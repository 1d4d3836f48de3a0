"""The wizard's structure: no import cycle, one step list, no product module named like a test."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from strixwizard.tui import steps
from tests.support.imports import imports_of

ROOT = Path(__file__).resolve().parent.parent
TUI = ROOT / "strixwizard" / "tui"


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


TUI_MODULES = sorted(_module(p) for p in TUI.rglob("*.py"))


@pytest.mark.interpreter
def test_each_tui_module_imports_alone_in_a_fresh_interpreter() -> None:
    """An import cycle shows as an ImportError when a module in it is imported first."""
    code = textwrap.dedent("""
        import importlib, subprocess, sys
        failed = []
        for name in sys.argv[1:]:
            done = subprocess.run([sys.executable, "-c", f"import {name}"], capture_output=True,
                                  text=True, timeout=60, check=False)
            if done.returncode:
                failed.append(f"{name}: {done.stderr.strip().splitlines()[-1]}")
        print("\\n".join(failed))
    """)
    done = subprocess.run([sys.executable, "-c", code, *TUI_MODULES], capture_output=True, text=True,
                          timeout=600, check=False, cwd=ROOT)
    assert len(TUI_MODULES) > 20
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""


def test_no_screen_or_widget_imports_the_app() -> None:
    """Screens post messages and read the `Wizard` protocol; only the app knows the screens."""
    offenders = {
        str(path.relative_to(TUI)): sorted(n for n in imports_of(path) if n.startswith("strixwizard.tui.app"))
        for folder in ("screens", "widgets") for path in sorted((TUI / folder).rglob("*.py"))
    }
    offenders.update({
        str(path.relative_to(TUI)): sorted(n for n in imports_of(path) if n.startswith("strixwizard.tui.app"))
        for path in sorted(TUI.glob("*.py")) if path.name != "app.py"
    })
    assert not {k: v for k, v in offenders.items() if v}


def test_no_product_module_is_named_like_a_test() -> None:
    named = [str(p.relative_to(ROOT)) for p in (ROOT / "strixwizard").rglob("*.py")
             if p.name.startswith("test_") or p.name.endswith("_test.py")]
    assert named == []


def test_step_numbers_are_written_only_in_the_step_list() -> None:
    """"n/7", "(2, r)" and "step 5" are derived from `tui/steps.py`, never typed into a screen."""
    import re

    literal = re.compile(r"""["'][^"']*((}|\b\d)/\d\b|\(\d, [a-z]\)|\bstep \d\b|\(\d\))""")
    found = {}
    for path in sorted(TUI.rglob("*.py")):
        if path.name == "steps.py":
            continue
        hits = [line.strip() for line in path.read_text().splitlines() if literal.search(line)]
        if hits:
            found[str(path.relative_to(TUI))] = hits
    assert found == {}


def test_session_has_no_busy_flags() -> None:
    from strixwizard.tui.workspace import Session

    fields = set(Session.__dataclass_fields__)
    assert not fields & {"discovering", "ssh_testing", "fixing", "deploy_planning", "deploying",
                         "testing", "cancelling"}
    assert not hasattr(Session, "forget_steps")


def test_a_new_step_is_one_entry_in_the_step_list_and_its_screen(tmp_path: Path) -> None:
    """Add a step the way README says (an entry in STEPS and a screen module), in a fresh
    interpreter: the app gets its mode, its number key, the step bar, "n/8" titles, and the
    later steps' numbers (and the texts naming them) move up by one."""
    package = tmp_path / "extrastep"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "notes.py").write_text(textwrap.dedent('''
        from dataclasses import dataclass, field
        from textual.app import ComposeResult
        from textual.widgets import Static
        from strixwizard.tui.screens.base import StepScreen
        from strixwizard.tui.workspace import StepState

        @dataclass
        class NotesState(StepState):
            lines: list[str] = field(default_factory=list)

        class NotesScreen(StepScreen, step="notes", state=NotesState):
            def compose_body(self) -> ComposeResult:
                yield Static("notes", id="notes-body")
    '''))
    script = textwrap.dedent('''
        import asyncio, sys
        sys.path.insert(0, sys.argv[1])
        from strixwizard.tui import steps
        extra = steps.Step("notes", "Notes", "the operator's notes", "extrastep.notes:NotesScreen")
        steps.STEPS = (steps.STEPS[0], extra, *steps.STEPS[1:])
        steps.BY_ID.clear(); steps.BY_ID.update({s.id: s for s in steps.STEPS})
        from strixwizard.services.facade import Services
        from strixwizard.tui.app import WizardApp
        from strixwizard.tui.screens.common import needs_discovery

        async def main():
            app = WizardApp(demo=True, resume=False, services=Services(demo_seconds=0.2))
            async with app.run_test(size=(100, 30)) as pilot:
                await pilot.press("2")
                await pilot.pause()
                print(app.screen.id, app.screen.sub_title)
                print(str(app.screen.query_one("#stepbar").render()).split())
                await pilot.press("3")
                await app.workers.wait_for_complete()
                await pilot.pause()
                print(app.screen.id, app.screen.sub_title)
                app.session.of(type(app.session.states["notes"])).lines.append("x")
                app.session.forget_after("site")
                print(app.session.states["notes"].lines)
                await pilot.press("q")
        asyncio.run(main())
    ''')
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True,
                          timeout=120, check=False, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    total = len(steps.STEPS) + 1  # with the extra step
    assert lines[0] == f"step-notes site demo · step 2/{total} Notes"
    assert "Notes" in lines[1] and str(total) in lines[1]
    assert lines[2] == f"step-discover site demo · step 3/{total} Discover"
    assert lines[3] == "[]"  # a new site step result resets the later steps' state, the new one too


@pytest.mark.parametrize("step_id", [step.id for step in steps.STEPS])
def test_every_step_names_a_screen_that_owns_a_state(step_id: str) -> None:
    from strixwizard.tui.app import screen_class
    from strixwizard.tui.steps import BY_ID
    from strixwizard.tui.workspace import StepState

    screen = screen_class(BY_ID[step_id])
    assert step_id == screen.STEP
    assert issubclass(screen.State, StepState)


def test_no_test_reaches_a_step_by_its_number() -> None:
    """Tests open steps with `key_of(step id)`, so a new step changes no test's key presses
    (this file's own numbering test is the one place that presses numbers on purpose)."""
    import ast

    pressed = []
    for path in sorted(Path(__file__).parent.glob("test_*.py")):
        if path.name == Path(__file__).name:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "press"
                    and any(isinstance(a, ast.Constant) and isinstance(a.value, str)
                            and a.value.isdigit() for a in node.args)):
                pressed.append(f"{path.name}:{node.lineno}")
    assert pressed == []

"""The TUI renders and calls the engine; it does no I/O of its own, and `doctor` never loads it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.imports import imports_of

TUI = Path(__file__).resolve().parent.parent / "strixwizard" / "tui"
FORBIDDEN = {"subprocess", "paramiko", "pyroute2", "pyverbs", "socket", "strixwizard.probe.local",
             "strixwizard.node.ssh"}


def test_nothing_under_tui_imports_io_modules() -> None:
    files = sorted(TUI.rglob("*.py"))
    assert len(files) > 10
    offenders = {
        str(f.relative_to(TUI)): sorted(n for n in imports_of(f)
                                        if any(n == bad or n.startswith(bad + ".") for bad in FORBIDDEN))
        for f in files
    }
    assert not {k: v for k, v in offenders.items() if v}


def test_doctor_and_the_tui_helpers_do_not_load_textual() -> None:
    code = (
        "import sys\n"
        "from strixwizard.cli.main import main\n"
        "import strixwizard.tui, strixwizard.tui.export, strixwizard.tui.views, strixwizard.tui.saved\n"
        "main(['doctor', '--demo', '--json'])\n"
        "print('textual' in sys.modules, file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.stderr.strip().splitlines()[-1] == "False"


@pytest.mark.parametrize(("words", "works"), [((), "strixwizard doctor"),
                                              (("--demo",), "strixwizard doctor --demo"),
                                              (("--site", "my site.yaml"),
                                               "strixwizard doctor --site 'my site.yaml'")])
def test_without_a_terminal_the_wizard_says_why_and_exits_2(words: tuple[str, ...], works: str) -> None:
    """It could not start: a script that runs it must not take that for success, and is told
    why (no terminal) and the command that works for the same site; no help page on stdout."""
    done = subprocess.run([sys.executable, "-m", "strixwizard", *words], capture_output=True,
                          text=True, timeout=60, check=False, stdin=subprocess.DEVNULL)
    assert done.returncode == 2
    assert done.stdout == ""
    assert "cannot start: its input is not a terminal" in done.stderr, done.stderr
    assert f"`{works}`" in done.stderr, done.stderr

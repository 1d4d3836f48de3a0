"""`strixwizard help`, `completion` and `man`: generated from the parser, so what they offer is
what the parser takes. Completion is tried as each shell's hook runs it (argcomplete's
protocol: `_ARGCOMPLETE` and `COMP_LINE` in the environment), and bash's for real."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import run_cli

BIN = Path(sys.executable).parent


def test_help_of_a_command_is_its_own_help(cli: Any) -> None:
    result = cli("help", "doctor")
    assert result.rc == 0 and result.stdout.startswith("usage: strixwizard doctor")
    assert "--json" in result.stdout


def test_help_of_no_such_command_names_the_commands(cli: Any) -> None:
    result = cli("help", "doctr")
    assert result.rc == 2 and "no command 'doctr'" in result.stderr and "doctor" in result.stderr


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_each_shell_gets_a_script_that_calls_strixwizard(shell: str, cli: Any) -> None:
    result = cli("completion", shell)
    assert result.rc == 0 and "strixwizard" in result.stdout and "_ARGCOMPLETE" in result.stdout


def _complete(line: str, tmp_path: Path) -> list[str]:
    """What the completion hook gets for `line` (the cursor at its end)."""
    out = tmp_path / "completions"
    env = {**os.environ, "_ARGCOMPLETE": "1", "_ARGCOMPLETE_IFS": "\n", "COMP_LINE": line,
           "COMP_POINT": str(len(line)), "_ARGCOMPLETE_STDOUT_FILENAME": str(out)}
    subprocess.run([sys.executable, "-m", "strixwizard"], env=env, check=False, timeout=60,
                   stdin=subprocess.DEVNULL, capture_output=True)
    return [word.strip() for word in out.read_text(encoding="utf-8").split("\n")] if out.exists() else []


def test_completion_offers_commands_and_options(tmp_path: Path) -> None:
    assert "doctor" in _complete("strixwizard doc", tmp_path)
    assert "--prometheus" in _complete("strixwizard doctor --prom", tmp_path)


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
def test_bash_completes_through_the_generated_script(tmp_path: Path) -> None:
    script = tmp_path / "strixwizard.bash"
    script.write_text(run_cli("completion", "bash").stdout, encoding="utf-8")
    line = "strixwizard doctor --jso"
    words = " ".join(f"'{w}'" for w in line.split())
    program = (f"source {script}; COMP_WORDS=({words}); COMP_CWORD=2; COMP_LINE='{line}'; "
               f"COMP_POINT={len(line)}; _python_argcomplete strixwizard; "
               "printf '%s\\n' \"${COMPREPLY[@]}\"")
    done = subprocess.run(["bash", "-c", program], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"}, check=False)
    assert "--json" in done.stdout.split(), (done.stdout, done.stderr)


def test_the_man_page_is_roff_that_man_renders(tmp_path: Path, cli: Any) -> None:
    result = cli("man", "doctor")
    assert result.rc == 0 and result.stdout.startswith(".TH")
    page = tmp_path / "strixwizard-doctor.1"
    page.write_text(result.stdout, encoding="utf-8")
    if shutil.which("man") is None:
        pytest.skip("no man here to render it")
    shown = subprocess.run(["man", "-l", str(page)], capture_output=True, text=True, timeout=60,
                           env={**os.environ, "MANPAGER": "cat", "COLUMNS": "100"}, check=False)
    assert "--prometheus" in shown.stdout.replace("\u2010", "-"), shown.stderr

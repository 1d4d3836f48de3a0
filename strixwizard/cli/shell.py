"""The command line about itself: `help [COMMAND]`, `completion bash|zsh|fish` and
`man [COMMAND]`, each generated from the one argparse parser (argcomplete for completion,
argparse-manpage for the roff page), so neither can drift from the options."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import Any

SHELLS = ("bash", "zsh", "fish")


def complete_if_asked(full_parser: Callable[[], argparse.ArgumentParser]) -> None:
    """Answer a shell's completion request and exit; return at once when none was made.

    The shell's completion hook runs `strixwizard` with `_ARGCOMPLETE` set: only then is the
    whole parser built and argcomplete imported."""
    if "_ARGCOMPLETE" not in os.environ:
        return
    import argcomplete

    argcomplete.autocomplete(full_parser())


def add_help(commands: Any) -> None:
    helper = commands.add_parser("help", help="the help of a command (strixwizard help doctor)",
                                 description="Print the help of a command, or the overview.")
    helper.add_argument("topic", nargs="?", metavar="COMMAND", help="a command (default: the overview)")


def add_completion(commands: Any) -> None:
    completion = commands.add_parser(
        "completion", help="a shell completion script (bash, zsh, fish)",
        description="Print the completion script of a shell. bash: "
        "`strixwizard completion bash > ~/.local/share/bash-completion/completions/strixwizard`; "
        "zsh: `strixwizard completion zsh > \"${fpath[1]}/_strixwizard\"`; fish: "
        "`strixwizard completion fish > ~/.config/fish/completions/strixwizard.fish`.")
    completion.add_argument("shell", choices=SHELLS, help="the shell")


def add_man(commands: Any) -> None:
    man = commands.add_parser(
        "man", help="the manual page in roff (strixwizard man | man -l -)",
        description="Print the manual page of strixwizard, or of one command, in roff: "
        "`strixwizard man doctor | man -l -`, or save it as strixwizard.1 under a man path.")
    man.add_argument("topic", nargs="?", metavar="COMMAND", help="a command (default: all of them)")


def _command(parser: argparse.ArgumentParser, name: str | None) -> argparse.ArgumentParser:
    """The parser of the named command (UsageError with the known names when there is none)."""
    if name is None:
        return parser
    from strixwizard.errors import UsageError

    for action in parser._actions:  # argparse keeps its subparsers here and nowhere public
        if isinstance(action, argparse._SubParsersAction):
            if name in action.choices:
                command: argparse.ArgumentParser = action.choices[name]
                return command
            known = ", ".join(action.choices)
            raise UsageError(f"no command {name!r} (the commands: {known})")
    raise UsageError(f"no command {name!r}")


def run_help(full_parser: argparse.ArgumentParser, topic: str | None) -> int:
    _command(full_parser, topic).print_help()
    return 0


def run_completion(shell: str) -> int:
    from argcomplete.shell_integration import shellcode

    sys.stdout.write(shellcode(["strixwizard"], shell=shell))
    return 0


def run_man(full_parser: argparse.ArgumentParser, topic: str | None) -> int:
    from argparse_manpage.manpage import Manpage

    parser = _command(full_parser, topic)
    if topic is not None:
        parser.prog = f"strixwizard {topic}"
    from strixwizard import __version__

    page = Manpage(parser, _data={"project_name": "strixwizard", "version": __version__,
                                  "manual_title": "strixwizard manual"})
    sys.stdout.write(str(page))
    return 0

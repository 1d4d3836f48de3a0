"""The next command a command suggests, with the options that chose its site repeated.

`strixwizard fix --apply` run after `fix --site lab.yaml` would plan for this machine;
every suggestion therefore carries `--site`, `--demo` or `--inventory` as given (and
`--journal-dir` where a journal is involved), quoted for a POSIX shell.
"""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Sequence
from pathlib import Path


def site_options(args: argparse.Namespace) -> list[str]:
    """The options of `args` that select the site: --demo, --site FILE, --inventory FILE."""
    words: list[str] = []
    if getattr(args, "demo", False):
        words.append("--demo")
    site: Path | None = getattr(args, "site", None)
    if site is not None:
        words += ["--site", str(site)]
    inventory: Path | None = getattr(args, "inventory", None)
    if inventory is not None:
        words += ["--inventory", str(inventory)]
    return words


def command(args: argparse.Namespace, words: Sequence[str], *extra: str) -> str:
    """`strixwizard WORDS <site options> EXTRA`, quoted."""
    return shlex.join(["strixwizard", *words, *site_options(args), *extra])


def journal_options(args: argparse.Namespace) -> list[str]:
    """--journal-dir DIR when the run used one other than the default."""
    directory: Path | None = getattr(args, "journal_dir", None)
    return ["--journal-dir", str(directory)] if directory is not None else []


def with_this_command(text: str, bare: str, command: str) -> str:
    """`text` (a plan's words, written without knowing the command line) with each quoted
    command matching the pattern `bare` (`strixwizard deploy (--stack S )?--apply`) replaced by
    `command`, the one that repeats every option that chose the site."""
    import re

    return re.sub(r"`" + bare + r"`", lambda _: f"`{command}`", text)


def same_command(argv: Sequence[str], drop: Sequence[str] = (), add: Sequence[str] = ()) -> str:
    """The command that was run (`argv` without the program), without the flags in `drop` and
    with `add` (a flag, or an option and its value, replacing the one given): every option that
    chose the site and the plan repeated as given."""
    option, takes_value = (add[0], len(add) == 2) if add else ("", False)
    kept: list[str] = []
    skip = False
    for word in argv:
        if skip:
            skip = False
        elif word in drop or word == option:
            skip = takes_value and word == option
        elif option and word.startswith(option + "="):
            continue
        else:
            kept.append(word)
    return shlex.join(["strixwizard", *kept, *add])

"""The one place where an argv becomes a remote command string, and where a failed argv is named.

An SSH exec takes a string that the node's login shell parses; every piece of
the argv is quoted (`shlex.quote`), so no argument is ever read as shell syntax.
A node whose login user is not root (`become: sudo` in the site file) runs what
needs root as `sudo -n -- ARGV` (strixwizard/become.py says which): `-n` never
waits for a password, so a missing rule fails at once with sudo's own words
instead of hanging.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

from strixwizard.become import BECOME_PREFIX

SHELLS = frozenset({"sh", "bash", "dash", "/bin/sh", "/bin/bash", "/usr/bin/sh", "/usr/bin/bash"})


def as_root(argv: Sequence[str], become: str | None = None) -> list[str]:
    """`argv` as the node runs it: as it is for a root login, behind `sudo -n --` for
    `become: sudo`."""
    if become is None:
        return list(argv)
    try:
        return [*BECOME_PREFIX[become], *argv]
    except KeyError:
        raise ValueError(f"no way to become root named {become!r}") from None


def remote_command(argv: Sequence[str], become: str | None = None) -> str:
    """`argv` as one string for the node's shell, each piece quoted (behind `sudo -n --` when
    `become` is "sudo")."""
    if not argv:
        raise ValueError("an empty argv runs nothing")
    return " ".join(shlex.quote(str(arg)) for arg in as_root(argv, become))


def program_name(argv: Sequence[str]) -> str:
    """The program an argv runs. For `sh -c SCRIPT [$0 ARGS...]` it is the one the script
    `exec`s (`exec "$@"` runs ARGS), else the script's first word: exit status 127 from the
    shell means *that* program was not found, not the shell."""
    if not argv:
        return "?"
    flags = argv[1] if len(argv) > 1 else ""
    if not (len(argv) >= 3 and argv[0] in SHELLS and flags.startswith("-") and "c" in flags):
        return str(argv[0])
    try:
        words = shlex.split(argv[2], comments=True)
    except ValueError:
        words = argv[2].split()
    positional = list(argv[4:])  # argv[3] is $0
    execs = [i for i, word in enumerate(words) if word == "exec" and i + 1 < len(words)]
    if execs:
        target = words[execs[-1] + 1]
        if target in ("$@", "$1") and positional:
            return str(positional[0])
        return target
    plain = [w for w in words if "=" not in w and w not in ("set", "-e", "-u", ".", "&&", ";")]
    return plain[0] if plain else str(argv[0])


#: A POSIX shell's own words for a program it could not find (dash: `sh: 1: exec: ray: not
#: found`, bash: `…: line 1: exec: ray: not found`, `…: ray: command not found`), and the
#: deploy launchers' (`not installed: ray`, after `command -v`).
_NOT_FOUND = re.compile(r":\s(?:exec:\s)?(?P<name>[^\s:]+): (?:command )?not found\s*$"
                        r"|^not installed: (?P<named>\S+)\s*$")


def missing_program(argv: Sequence[str], stderr: str = "") -> str:
    """The program an exit status 127 means was missing: the one the shell named on stderr
    (a launcher script that `exec`s its arguments), else `program_name(argv)`."""
    for line in reversed(stderr.strip().splitlines()):
        if (found := _NOT_FOUND.search(line.strip())) is not None:
            return found.group("name") or found.group("named")
    return program_name(argv)


def not_installed(argv: Sequence[str], where: str = "the node", stderr: str = "") -> str:
    return f"`{missing_program(argv, stderr)}` is not installed on {where}"

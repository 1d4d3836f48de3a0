"""Unit files read back as systemd reads them, for the tests of every unit strixwizard writes.

`command_argv` undoes a command line the way systemd.service(5) "Command lines" and
systemd.syntax(7) "Quoting" describe it: words split on white space, single or double quotes
around a whole word, C escapes undone inside and outside quotes (the table of
systemd.syntax(7)); then, per word, specifiers (`%%` is `%`; any other specifier is an error
here, the units name none; systemd 252 expands them after the escapes: `\x25u` is read as
the user's name), then `$$` is `$` in the arguments (a `$NAME` or `${NAME}` would be a
variable: an error here). It is a reading written from those manuals, not systemd's code;
`verify` runs the real `systemd-analyze verify`, which only reads the files (it loads the
units into a manager of its own in test mode and starts nothing), and its message
"Command PATH is not executable" is systemd's own reading of the program's path.

https://www.freedesktop.org/software/systemd/man/latest/systemd.syntax.html#Quoting
https://www.freedesktop.org/software/systemd/man/latest/systemd.service.html#Command%20lines
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

#: Arguments a unit must carry as they are: C escapes systemd would undo (`\x2d` is `-`, `\s`
#: a space), quotes, specifiers, variables, a lone `;` (a command separator when bare), a
#: trailing backslash (it would join the next line), white space at the ends, UTF-8, nothing.
ODD_ARGS = ["/opt/llama\\x2dbin", "b\\s", "it's", 'say "hi"', "100%h", "$HOME", "${HOME}x",
            "$$", ";", "\\;", "ends\\", " pad ", "näme", "", "-", "@x", "a b"]

#: systemd.syntax(7), "Table 1. Supported escapes" (the single-character ones)
_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v",
            "\\": "\\", '"': '"', "'": "'", "s": " "}
_SPECIFIER = re.compile(r"%(.)")
_VARIABLE = re.compile(r"\$(\$|\{[^}]*\}|[A-Za-z_]\w*)?")


def specifiers(text: str) -> str:
    """`%%` as `%`; any other specifier fails the test."""
    def one(match: re.Match[str]) -> str:
        assert match.group(1) == "%", f"specifier %{match.group(1)} in {text!r}"
        return "%"
    return _SPECIFIER.sub(one, text)


def _escape(text: str, at: int) -> tuple[str, int]:
    """The C escape starting at `text[at]` (the backslash) and where the text goes on."""
    kind = text[at + 1:at + 2]
    assert kind, f"a trailing backslash in {text!r}"
    if kind in _ESCAPES:
        return _ESCAPES[kind], at + 2
    for prefix, digits, base in (("x", 2, 16), ("u", 4, 16), ("U", 8, 16)):
        if kind == prefix:
            return chr(int(text[at + 2:at + 2 + digits], base)), at + 2 + digits
    if kind in "01234567":
        return chr(int(text[at + 1:at + 4], 8)), at + 4
    raise AssertionError(f"unknown escape \\{kind} in {text!r}")


def words(text: str) -> list[str]:
    """White-space separated words, quotes around a whole word, C escapes undone."""
    out: list[str] = []
    at = 0
    while True:
        while at < len(text) and text[at] in " \t":
            at += 1
        if at == len(text):
            return out
        quote = text[at] if text[at] in "'\"" else None
        at += 1 if quote else 0
        word = ""
        while True:
            assert at < len(text) or quote is None, f"unbalanced quoting in {text!r}"
            if at == len(text) or (quote is None and text[at] in " \t"):
                break
            if quote is not None and text[at] == quote:
                at += 1
                assert at == len(text) or text[at] in " \t", f"text after a quote in {text!r}"
                break
            if text[at] == "\\":
                char, at = _escape(text, at)
                word += char
            else:
                assert quote is not None or text[at] not in "'\"", f"a quote inside {text!r}"
                word += text[at]
                at += 1
        out.append(word)


def _no_variables(arg: str) -> str:
    def one(match: re.Match[str]) -> str:
        assert match.group(1) == "$", f"variable {match.group(0)} in {arg!r}"
        return "$"
    return _VARIABLE.sub(one, arg)


def command_argv(value: str) -> list[str]:
    """The argv systemd runs for an `ExecStart=` value (its program's path kept as written:
    systemd expands no variable in it)."""
    argv = [specifiers(word) for word in words(value)]
    return [argv[0], *(_no_variables(arg) for arg in argv[1:])]


def environment_pairs(value: str) -> list[str]:
    """The assignments of an `Environment=` value (quoted words, specifiers, no variables)."""
    return [specifiers(word) for word in words(value)]


def settings(text: str, key: str) -> list[str]:
    """Every value of `key=` in a unit's text, in order."""
    return [line.partition("=")[2] for line in text.splitlines() if line.startswith(f"{key}=")]


def analyze_tool() -> str:
    found = shutil.which("systemd-analyze")
    assert found, "systemd-analyze not found: Debian's systemd package provides it"
    return found


def verify(*units: Path) -> str:
    """What `systemd-analyze verify` says about `units` (empty: it accepts them); reads files
    only: no service of this machine is touched."""
    done = subprocess.run([analyze_tool(), "verify", "--man=no", *map(str, units)],
                          capture_output=True, text=True, timeout=60, check=False,
                          cwd=units[0].parent)
    said = (done.stdout + done.stderr).strip()
    return said if done.returncode == 0 or said else f"exit {done.returncode}"

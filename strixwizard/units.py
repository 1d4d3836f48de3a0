"""How a value is written into a systemd unit so that systemd reads back exactly that value;
one rule for every unit strixwizard writes (`init --timer`, `deploy --persist`, the fix
engine's boot-time units). What cannot be written faithfully is refused (`UnitValueError`,
exit 2), never bent into another value.

What systemd does to a line, from its manuals:
- every line of a unit file: a line ending in an unescaped backslash is joined with the next
  one, and leading/trailing white space is dropped (systemd.syntax(7), "General syntax");
- `%` starts a specifier in almost every setting, `%%` is a literal `%` (systemd.unit(5),
  "Specifiers"); in a quoted setting each word is unquoted and unescaped first, then its
  specifiers expanded (systemd 252: `ExecStart=/x/\\x25n` runs `/x/NAME.service`), so `%`
  is always written `%%`, never as an escape;
- `ExecStart=` and the other command lines: the line is split into words; single and double
  quotes wrap a whole word, and C escapes (`\\\\`, `\\'`, `\\"`, `\\xNN`, `\\n`…) are undone
  inside and outside quotes (systemd.syntax(7), "Quoting"; systemd.service(5), "Command
  lines"); `$NAME` and `${NAME}` are environment variables, `$$` a literal `$` — in the
  arguments only: the executable's path keeps `$$` as it is (systemd 252, `systemd-analyze
  verify`: `/a$$b/x` is looked up as `/a$$b/x`); the executable is an absolute path or a bare
  name, may not start with one of the prefixes `-@:+!`, and may hold no quote, backslash or
  control character ("Executable name contains special characters");
- `Environment=`: quoted words with C escapes like a command line, no variables
  (systemd.exec(5), "Environment=");
- `StandardOutput=file:PATH` (`truncate:`, `append:`): the path with specifiers, no quoting,
  absolute and normalized (systemd.exec(5), "StandardOutput=").

Sources:
https://www.freedesktop.org/software/systemd/man/latest/systemd.syntax.html#Quoting
https://www.freedesktop.org/software/systemd/man/latest/systemd.service.html#Command%20lines
https://www.freedesktop.org/software/systemd/man/latest/systemd.unit.html#Specifiers
https://www.freedesktop.org/software/systemd/man/latest/systemd.exec.html#Environment=
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence

from strixwizard.errors import UsageError

#: Words written without quotes (the characters `shlex.quote` leaves bare); everything else
#: is single-quoted with its backslashes and quotes escaped.
_BARE = re.compile(r"[\w@%+=:,./-]+", re.ASCII)
#: What systemd takes as prefixes of the executable (systemd.service(5), table "Special
#: executable prefixes").
EXEC_PREFIXES = "-@:+!|"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class UnitValueError(UsageError):
    """A value a systemd unit cannot carry as it is."""


def _shown(value: str) -> str:
    """A value in a message: control characters as `\\xNN`, the rest as it is."""
    return "".join(f"\\x{ord(c):02x}" if ord(c) < 32 or 127 <= ord(c) < 160 else c
                   for c in value).encode("utf-8", "backslashreplace").decode("utf-8")


def _control(value: str) -> bool:
    return any(ord(c) < 32 or 127 <= ord(c) < 160 for c in value)


def _plain(value: str, what: str) -> None:
    """Characters any unit line refuses: control characters (a line break starts a new
    setting) and what is not UTF-8 (systemd ignores such lines)."""
    if _control(value):
        raise UnitValueError(f"{what} `{_shown(value)}`: a systemd unit cannot carry a control "
                             "character (a line break would start another setting)")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise UnitValueError(f"{what} `{_shown(value)}`: not UTF-8, which systemd ignores") from None


def word(value: str, variables: bool = True) -> str:
    """One word of a command line or of `Environment=`, as systemd unquotes it back to `value`:
    bare when it holds only safe characters, else in single quotes with `\\` and `'` escaped
    (systemd undoes C escapes inside quotes); `%` doubled, and `$` doubled when the setting
    expands variables."""
    _plain(value, "value")
    text = value if _BARE.fullmatch(value) else \
        "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    text = text.replace("%", "%%")
    return text.replace("$", "$$") if variables else text


def executable(path: str, what: str = "executable") -> str:
    """The first word of a command line: an absolute, normalized path or a bare name, with
    nothing systemd refuses or reads otherwise in an executable."""
    _plain(path, what)
    if any(c in path for c in "\\'\"$"):
        raise UnitValueError(f"{what} `{_shown(path)}`: a systemd unit cannot carry a backslash, a quote "
                             "or `$` in the program's path; choose a plain path")
    if "/" in path:
        if not path.startswith("/"):
            raise UnitValueError(f"{what} `{_shown(path)}`: a systemd unit needs an absolute path (or a "
                                 "bare name)")
        if not normalized(path) or path.endswith("/"):
            raise UnitValueError(f"{what} `{_shown(path)}`: give the path without `.`, `..`, `//` or a "
                                 "trailing `/`")
    elif not path or path[0] in EXEC_PREFIXES or path in (".", ".."):
        raise UnitValueError(f"{what} `{_shown(path)}`: not a program name systemd can start")
    return word(path, variables=False)


def command_line(argv: Sequence[str], what: str = "executable") -> str:
    """The value of `ExecStart=` (or `ExecStartPre=`) that systemd runs as exactly `argv`."""
    if not argv:
        raise ValueError("a command line needs a program")
    return " ".join([executable(argv[0], what), *(word(a) for a in argv[1:])])


def environment(pairs: Sequence[str]) -> str:
    """The value of `Environment=` setting each `NAME=value` of `pairs`."""
    for pair in pairs:
        name = pair.partition("=")[0]
        if "=" not in pair or not _NAME.fullmatch(name):
            raise UnitValueError(f"environment `{_shown(pair)}`: not NAME=value")
    return " ".join(word(pair, variables=False) for pair in pairs)


def normalized(path: str) -> bool:
    """`path` as systemd keeps it: no `.` or `..` part, no empty part."""
    return posixpath.normpath(path) == path.rstrip("/") and not path.startswith("//")


def path_value(path: str, what: str = "path") -> str:
    """A path for a setting that takes it literally (`StandardOutput=truncate:PATH`): absolute
    and normalized, `%` doubled; no white space at its ends (systemd drops it) and no trailing
    backslash (it would join the next line)."""
    _plain(path, what)
    if not path.startswith("/") or not normalized(path) or (path.endswith("/") and path != "/"):
        raise UnitValueError(f"{what} `{_shown(path)}`: a systemd unit needs an absolute path without "
                             "`.`, `..`, `//` or a trailing `/`")
    if path != path.strip() or path.endswith("\\"):
        raise UnitValueError(f"{what} `{_shown(path)}`: a systemd unit cannot carry white space at the "
                             "ends of a path, nor a trailing backslash")
    return path.replace("%", "%%")


def label(text: str) -> str:
    """Text for people (`Description=`, a comment): `%` doubled; a control character, and a
    backslash that would end the line (joining it with the next), shown as `\\xNN`."""
    shown = _shown(text)
    if shown.endswith("\\"):
        shown = shown[:-1] + "\\x5c"
    return shown.replace("%", "%%")

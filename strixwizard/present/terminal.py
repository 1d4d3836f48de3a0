"""Text for a terminal: what nodes, snapshots, bundles and site files say is shown, never obeyed.

Linux allows ESC and BEL in an interface name; a kernel release, a firmware version, a log line or
a bundle's site name can carry them too. Written raw, `ESC ] 52 ; c ; … BEL` sets the operator's
clipboard, `ESC ] 0 ; … BEL` the window title, `ESC [ 2 J` clears the screen (hiding FAIL lines).
`visible` is the one function that turns such text into what a terminal shows as it is: every
character `str.isprintable` refuses but a space (C0 and C1 controls, DEL, format characters such as U+202E,
line and paragraph separators U+2028/U+2029, U+0085, unassigned code points) is written as its
Python escape (`\\x1b`, `\\u2028`). `VisibleStream` puts every write of the plain CLI through it,
keeping only newlines and tabs (the tool's own lines) and the colours `paint` asked for.
JSON needs none of this: `json.dump` escapes every control character itself.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

# Anything outside printable ASCII is looked at one by one; printable ASCII is left alone fast.
_SUSPECT = re.compile(r"[^\x20-\x7e]")
#: Spaces `str.isprintable` refuses but a terminal only shows as space (no-break, thin, ideographic).
_SPACES = frozenset("\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
                    "\u202f\u205f\u3000")

#: A colour asked for by the tool: a mark no outside text can hold (a secret of this process),
#: turned into the real escape sequence only after everything else has been made visible.
_TOKEN = os.urandom(8).hex()  # what secrets.token_hex does, without loading secrets
_MARK = re.compile(rf"⟦{_TOKEN}:([0-9;]{{1,12}})⟧")


_SHORT = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _escape(char: str) -> str:
    if char in _SHORT:
        return _SHORT[char]
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def visible(value: object, keep: str = "") -> str:
    """`value` as text whose every non-printable character is spelled out (`\\x1b`, `\\x9b`,
    `\\u2028`), newlines and tabs included unless `keep` names them. Printable text (any
    language) is unchanged; the result never makes a terminal do anything."""
    text = value if isinstance(value, str) else str(value)
    if text.isprintable():
        return text

    def spell(match: re.Match[str]) -> str:
        char = match.group()
        return char if char in keep or char.isprintable() or char in _SPACES else _escape(char)

    return _SUSPECT.sub(spell, text)


def paint(text: str, code: str) -> str:
    """`text` in a colour (an SGR code such as `31`), once it is written to a `VisibleStream`."""
    return f"⟦{_TOKEN}:{code}⟧{text}⟦{_TOKEN}:0⟧"


def unpainted(text: str) -> str:
    """`text` without the colour marks of `paint` (for a stream that is not a terminal)."""
    return _MARK.sub("", text)


def terminal_text(text: str, colour: bool = True) -> str:
    """The tool's own text as written to a terminal: every line and tab it wrote kept, any other
    non-printable character spelled out, `paint`'s colours made real (or dropped)."""
    shown = visible(text, keep="\n\t")
    if colour:
        return _MARK.sub(lambda match: f"\x1b[{match.group(1)}m", shown)
    return _MARK.sub("", shown)


class VisibleStream:
    """A text stream writing everything through `terminal_text`; the rest is the wrapped
    stream's (isatty, fileno, encoding, flush)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(terminal_text(text, colour=True))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def visible_stream(stream: TextIO) -> TextIO:
    """`stream` behind a `VisibleStream` (once: a wrapped stream is returned as it is)."""
    if isinstance(stream, VisibleStream):
        return stream
    return VisibleStream(stream)  # type: ignore[return-value]


@contextmanager
def visible_output(stdout: bool = True) -> Iterator[None]:
    """While inside: `sys.stderr` (and `sys.stdout` unless it carries JSON) are `VisibleStream`s,
    so no `print` of a command can write a control character it did not mean."""
    saved = sys.stdout, sys.stderr
    if stdout:
        sys.stdout = visible_stream(sys.stdout)
    sys.stderr = visible_stream(sys.stderr)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved

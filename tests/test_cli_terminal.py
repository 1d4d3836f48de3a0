"""The plain CLI's one escaping function for text from outside (strixwizard/present/terminal.py,
issue 22): every control character of the hostile corpus (tests/support/hostile/strings.py) is
spelled out, printable text and the tool's own lines and colours are left as they are, and a
large string is escaped whole. Live nodes saying such words: tests/test_cli_terminal_lab.py; the
wizard's side: tests/test_tui_text.py."""

from __future__ import annotations

import io

import pytest

from strixwizard.present.terminal import VisibleStream, paint, terminal_text, visible
from tests.support.hostile import strings


@pytest.mark.parametrize("text", strings.ALL)
def test_visible_spells_out_every_control_character(text: str) -> None:
    shown = visible(text)
    assert shown.isprintable() or all(c.isprintable() or c == "\u00a0" for c in shown)
    assert not strings.contains_control(shown) and "\n" not in shown
    assert visible(shown) == shown  # printable text is left as it is


def test_visible_keeps_printable_text_and_the_tools_own_lines() -> None:
    assert visible("Ryzen AI Max+ 395 · µs · 日本") == "Ryzen AI Max+ 395 · µs · 日本"
    assert visible("e\x1b]52;c;QQ\x07") == "e\\x1b]52;c;QQ\\x07"
    assert visible("c1\x9b2J\u2028\u0085\x00") == "c1\\x9b2J\\u2028\\x85\\x00"
    assert visible("a\nb\tc") == "a\\nb\\tc"
    assert terminal_text("a\nb\tc\x1b[2J") == "a\nb\tc\\x1b[2J"


def test_a_large_string_is_escaped_whole() -> None:
    big = strings.large()
    shown = visible(big)
    assert not strings.contains_control(shown)
    assert shown.count("\\x1b[2J") == big.count("\x1b")


def test_only_the_tools_own_colours_reach_the_stream() -> None:
    out = io.StringIO()
    stream = VisibleStream(out)
    stream.write(paint("FAIL", "31") + " node \x1b[32mfake\x1b[0m\n")
    assert out.getvalue() == "\x1b[31mFAIL\x1b[0m node \\x1b[32mfake\\x1b[0m\n"

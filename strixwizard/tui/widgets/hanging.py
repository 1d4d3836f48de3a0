"""Lines that wrap under their own start: a hanging indent for the wizard's paragraphs.

Textual wraps a `Content` line back to column 0, so a detail written four spaces in
("    fix ethtool.pause_off: …") continues at the left edge, level with the finding it
belongs to. `Hanging` wraps each line itself at the width it is drawn at: the
continuation starts under the line's own text (its leading spaces kept) plus `hang`
cells, so a wrapped line never reads as the start of the next item.
"""

from __future__ import annotations

from textual.content import Content
from textual.css.styles import RulesMap
from textual.strip import Strip
from textual.style import Style
from textual.visual import RenderOptions, Visual

_BLANKS = " \u00a0"
#: Marks that start an item of a list ("! MTU differs …"): with `marked_only`, only such
#: lines (and indented ones) hang; a plain paragraph wraps as usual.
MARKS = ("! ", "✗ ", "✓ ", "- ", "• ")
#: Marks drawn in a line's indentation ("⇄ node-b …" under "  node-a …"): they count as
#: blanks, so the two lines wrap alike.
GUTTER_MARKS = ("⇄\u00a0",)


def leading(line: Content) -> int:
    """How many cells of blanks (spaces, no-break spaces, a gutter mark) a line starts with."""
    plain = line.plain
    mark = next((m for m in GUTTER_MARKS if plain.startswith(m)), "")
    rest = plain[len(mark):]
    return len(mark) + len(rest) - len(rest.lstrip(_BLANKS))


def hang_lines(content: Content, width: int, hang: int = 2, marked_only: bool = False) -> list[Content]:
    """`content` wrapped at `width`: each continuation starts `hang` cells right of where its
    line's text starts (with `marked_only`, only for indented lines and lines of a list)."""
    out: list[Content] = []
    for line in content.split("\n", allow_blank=True):
        if marked_only and not leading(line) and not line.plain.startswith(MARKS):
            out += line.wrap(max(1, width)) if line.plain else [line]
            continue
        indent = min(leading(line), max(0, width // 2))
        head, rest = line[:indent], line[indent:]
        first = rest.wrap(max(1, width - indent))[0] if rest.plain else rest
        out.append(head + first)
        start = len(first.plain)
        while start < len(rest.plain) and rest.plain[start] == " ":
            start += 1  # the blank the line broke at
        if start < len(rest.plain):
            room = max(1, width - indent - hang)
            out += [Content(" " * (indent + hang)) + piece for piece in rest[start:].wrap(room)]
    return out


class Hanging(Visual):
    """`content` drawn with a hanging indent at whatever width the widget has."""

    def __init__(self, content: Content, hang: int = 2, marked_only: bool = False) -> None:
        self.content, self.hang, self.marked_only = content, hang, marked_only
        self._cache: tuple[int, Content] | None = None

    def __str__(self) -> str:
        return self.content.plain

    def at(self, width: int) -> Content:
        """The content wrapped for `width` cells, one Content line per screen line."""
        if self._cache is None or self._cache[0] != width:
            self._cache = (width, Content("\n").join(hang_lines(self.content, width, self.hang,
                                                                   self.marked_only)))
        return self._cache[1]

    def render_strips(self, width: int, height: int | None, style: Style,
                      options: RenderOptions) -> list[Strip]:
        return self.at(width).render_strips(width, height, style, options)

    def get_optimal_width(self, rules: RulesMap, container_width: int) -> int:
        return self.content.get_optimal_width(rules, container_width)

    def get_minimal_width(self, rules: RulesMap) -> int:
        return self.content.get_minimal_width(rules)

    def get_height(self, rules: RulesMap, width: int) -> int:
        return self.at(width).get_height(rules, width)


"""A tiny SVG writer for the report's charts: shapes and text, every value escaped.

Text and attribute values go through `html.escape` (node names and tool names are
data from a site file or a node, never markup). Numbers are written rounded, so
the same data gives the same file. No dependency, no script: the result is inline
SVG that any browser draws from a file, offline.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass, field

#: Average glyph width of the chart font at size 1, to size labels and margins.
GLYPH_WIDTH = 0.6


def _num(value: float) -> str:
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("", "-0") else text


def _attrs(attributes: dict[str, str | float | None]) -> str:
    parts = []
    for name, value in attributes.items():
        if value is None:
            continue
        shown = _num(value) if isinstance(value, float | int) else value
        parts.append(f' {name.rstrip("_").replace("_", "-")}="{html.escape(str(shown), quote=True)}"')
    return "".join(parts)


def text_width(text: str, size: float) -> float:
    return len(text) * size * GLYPH_WIDTH


def wrap(text: str, size: float, width: float) -> list[str]:
    """`text` in lines no wider than `width` at font `size` (broken between words)."""
    lines: list[str] = []
    for word in text.split():
        if lines and text_width(f"{lines[-1]} {word}", size) <= width:
            lines[-1] = f"{lines[-1]} {word}"
        else:
            lines.append(word)
    return lines


@dataclass
class Svg:
    """One chart: `add` shapes, then `render()`; `label` names it for screen readers."""

    width: float
    height: float
    label: str
    css_class: str = "chart"
    _body: list[str] = field(default_factory=list)

    def _element(self, tag: str, attributes: dict[str, str | float | None], tooltip: str | None,
                 content: str = "") -> None:
        inner = (f"<title>{html.escape(tooltip)}</title>" if tooltip else "") + content
        if inner:
            self._body.append(f"<{tag}{_attrs(attributes)}>{inner}</{tag}>")
        else:
            self._body.append(f"<{tag}{_attrs(attributes)}/>")

    def rect(self, x: float, y: float, w: float, h: float, fill: str, tooltip: str | None = None,
             css_class: str | None = None, opacity: float | None = None, stroke: str | None = None,
             dash: str | None = None) -> None:
        self._element("rect", {"x": x, "y": y, "width": max(w, 0.0), "height": max(h, 0.0), "fill": fill,
                               "fill_opacity": opacity, "stroke": stroke, "stroke_dasharray": dash,
                               "class": css_class}, tooltip)

    def line(self, x1: float, y1: float, x2: float, y2: float, stroke: str = "currentColor",
             width: float = 1.0, opacity: float | None = None, dash: str | None = None,
             css_class: str | None = None) -> None:
        self._element("line", {"x1": x1, "y1": y1, "x2": x2, "y2": y2, "stroke": stroke,
                               "stroke_width": width, "stroke_opacity": opacity,
                               "stroke_dasharray": dash, "class": css_class}, None)

    def polyline(self, points: Sequence[tuple[float, float]], stroke: str, width: float = 2.0,
                 css_class: str | None = None, dash: str | None = None) -> None:
        joined = " ".join(f"{_num(x)},{_num(y)}" for x, y in points)
        self._element("polyline", {"points": joined, "fill": "none", "stroke": stroke,
                                   "stroke_width": width, "stroke_dasharray": dash,
                                   "class": css_class}, None)

    def circle(self, x: float, y: float, r: float, fill: str, tooltip: str | None = None) -> None:
        self._element("circle", {"cx": x, "cy": y, "r": r, "fill": fill}, tooltip)

    def text(self, x: float, y: float, content: str, size: float = 12.0, anchor: str = "start",
             fill: str = "currentColor", weight: str | None = None, css_class: str | None = None,
             rotate: float | None = None) -> None:
        transform = f"rotate({_num(rotate)} {_num(x)} {_num(y)})" if rotate is not None else None
        self._element("text", {"x": x, "y": y, "font_size": size, "text_anchor": anchor, "fill": fill,
                               "font_weight": weight, "class": css_class, "transform": transform},
                      None, html.escape(content))

    def render(self) -> str:
        head = (f'<svg xmlns="http://www.w3.org/2000/svg" class="{html.escape(self.css_class, quote=True)}" '
                f'role="img" aria-label="{html.escape(self.label, quote=True)}" '
                f'width="{_num(self.width)}" height="{_num(self.height)}" '
                f'viewBox="0 0 {_num(self.width)} {_num(self.height)}" font-family="system-ui, sans-serif">')
        return head + f"<title>{html.escape(self.label)}</title>" + "".join(self._body) + "</svg>"

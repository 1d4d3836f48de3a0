"""The HTML report's pictures, drawn from a `strixwizard test --json` document.

- an all-pairs heatmap of the one-way latency medians of a matrix run (RDMA, TCP);
- per link, a latency distribution: the statistics every tool reports (min, median,
  average, p99, p99.9, max) as a curve, RDMA beside TCP, on a log scale;
- when the document has a `decode` block, the predicted decode tokens per second per
  tensor-parallel size, bars grouped by transport, each labelled measured, estimated
  or recorded.

Pure: the same document gives the same SVG; nothing is computed that the JSON does not
already hold. Every name is escaped by `strixwizard.svg`.
"""

from __future__ import annotations

import html
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from strixwizard.svg import Svg, text_width, wrap

#: Series colours per transport; others take the next free colour of EXTRA.
TRANSPORT_COLOURS = {"rdma": "#2f6fdf", "tcp": "#e07a1f", "usb4": "#8e44ad", "thunderbolt-net": "#8e44ad"}
EXTRA = ("#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e")
#: The statistics of a latency result, in curve order: (JSON key, label).
STATISTICS = (("min", "min"), ("median", "median"), ("avg", "average"), ("p99", "p99"),
              ("p99_9", "p99.9"), ("max", "max"))
SOURCES = {"measured": "meas.", "estimated": "est.", "recorded": "rec."}
NO_FIT = "no fit"
NAME_CHARS = 18
HEAT_RED_RATIO = 2.0
FONT = 12.0
#: A distribution's axis ends this many times above the slowest median: a loaded run's p99.9
#: or max (milliseconds on a busy loopback) would otherwise squash the µs curves into the
#: bottom band. Points above are drawn on the top edge with their figure (a broken axis).
AXIS_OVER_MEDIAN = 25.0
LABEL_ANGLE = math.radians(40)


def short(name: str, limit: int = NAME_CHARS) -> str:
    return name if len(name) <= limit else name[: limit - 1] + "…"


def _colour(transport: str, seen: dict[str, str]) -> str:
    if transport not in seen:
        seen[transport] = TRANSPORT_COLOURS.get(transport.lower(), EXTRA[len(seen) % len(EXTRA)])
    return seen[transport]


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _figure(svg: Svg, caption: str, css_class: str) -> str:
    return (f'<figure class="{css_class}">{svg.render()}<figcaption>{html.escape(caption)}</figcaption>'
            "</figure>")


# -- heatmap ---------------------------------------------------------------------------------------
def heat_colour(fraction: float) -> str:
    """Green (lowest latency of the grid) through yellow to red (highest)."""
    stops = ((0.0, (46, 157, 79)), (0.5, (224, 176, 0)), (1.0, (208, 58, 58)))
    fraction = min(1.0, max(0.0, fraction))
    for (f0, c0), (f1, c1) in itertools.pairwise(stops):
        if fraction <= f1:
            t = (fraction - f0) / (f1 - f0)
            r, g, b = (round(a + (z - a) * t) for a, z in zip(c0, c1, strict=True))
            return f"#{r:02x}{g:02x}{b:02x}"
    return "#d03a3a"


def _grid_values(grid: dict[str, Any], nodes: Sequence[str]) -> dict[tuple[str, str], float]:
    values = {}
    for a in nodes:
        row = grid.get(a)
        if not isinstance(row, dict):
            continue
        for b in nodes:
            value = _number(row.get(b))
            if a != b and value is not None and value > 0:
                values[(a, b)] = value
    return values


def heatmap_svg(nodes: Sequence[str], grid: dict[str, Any], title: str, unit: str) -> Svg | None:
    """Rows and columns are the nodes; each cell the pair's median. None: no figure in the grid."""
    values = _grid_values(grid, nodes)
    if not values:
        return None
    low, high = min(values.values()), max(values.values())
    # red is the highest, or twice the lowest when all are closer: a few percent is not red
    span = max(math.log(high) - math.log(low), math.log(HEAT_RED_RATIO))
    names = [short(n) for n in nodes]
    label_width = max(text_width(n, FONT) for n in names) + 14
    cell_w = max(64.0, text_width(f"{high:.2f}", FONT) + 16)
    cell_h = 34.0
    longest = max(text_width(n, FONT) for n in names)
    top = 40 + longest * 0.7
    # the last column's label, slanted up to the right, ends past its cell: room for it
    width = label_width + cell_w * (len(nodes) - 0.5) + max(cell_w / 2, longest * math.cos(LABEL_ANGLE)) + 12
    height = top + cell_h * len(nodes) + 44
    svg = Svg(width, height, title, "chart heatmap")
    svg.text(8, 20, title, size=14, weight="bold")
    for j, name in enumerate(names):
        x = label_width + cell_w * (j + 0.5)
        svg.text(x, top - 8, name, anchor="start", rotate=-40, css_class="node-label")
    for i, (node, name) in enumerate(zip(nodes, names, strict=True)):
        y = top + cell_h * i
        svg.text(label_width - 8, y + cell_h / 2 + 4, name, anchor="end", css_class="node-label")
        for j, other in enumerate(nodes):
            x = label_width + cell_w * j
            value = values.get((node, other))
            if node == other:
                svg.rect(x, y, cell_w - 2, cell_h - 2, "#8884", tooltip=f"{node}: itself")
                continue
            if value is None:
                svg.rect(x, y, cell_w - 2, cell_h - 2, "none", stroke="#888", dash="3 3",
                         tooltip=f"{node} → {other}: not measured")
                svg.text(x + cell_w / 2, y + cell_h / 2 + 4, "n/a", anchor="middle", size=11)
                continue
            fraction = (math.log(value) - math.log(low)) / span
            svg.rect(x, y, cell_w - 2, cell_h - 2, heat_colour(fraction), css_class="cell",
                     tooltip=f"{node} → {other}: {value:.2f} {unit}")
            svg.text(x + cell_w / 2 - 1, y + cell_h / 2 + 4, f"{value:.2f}", anchor="middle",
                     fill="#111", css_class="cell-value")
    red = max(high, low * HEAT_RED_RATIO)
    svg.text(8, height - 14, f"median one-way {unit}, lower is better; green {low:.2f} … red {red:.2f} "
             "(log scale)", size=11)
    return svg


# -- latency distributions -------------------------------------------------------------------------
@dataclass(frozen=True)
class Series:
    label: str
    colour: str
    points: list[tuple[str, float]]  # (statistic label, µs)


def _decade_ticks(low: float, high: float) -> list[float]:
    ticks = []
    exponent = math.floor(math.log10(low))
    for _ in range(12):  # bounded: a dozen decades is more than any latency spans
        for mantissa in (1, 2, 5):
            tick = mantissa * 10.0 ** exponent
            if low <= tick <= high:
                ticks.append(tick)
        exponent += 1
        if 10.0 ** exponent > high:
            break
    return ticks or [low, high]


def distribution_svg(pair: Sequence[str], series: Sequence[Series]) -> Svg | None:
    values = [v for s in series for _, v in s.points if v > 0]
    if not values:
        return None
    medians = [m for s in series if (m := dict(s.points).get("median")) is not None and m > 0]
    ceiling = max(values) if not medians else min(max(values), max(medians) * AXIS_OVER_MEDIAN)
    clipped = ceiling < max(values)
    span = math.log(ceiling) - math.log(min(values))
    pad = max(0.15 * span, math.log(1.3))  # room under the lowest point for its label
    low, high = min(values) / math.exp(pad), ceiling * (1.0 if clipped else math.exp(pad))
    title = f"{short(pair[0])} - {short(pair[1])}: one-way latency distribution"
    left, top, plot_w, plot_h = 64.0, 52.0 if clipped else 36.0, 440.0, 210.0
    note = (f"values above {ceiling:.0f} µs are drawn on the top edge with their figure "
            f"(the axis stops at {AXIS_OVER_MEDIAN:g} x the slowest median)" if clipped else "")
    note_lines = wrap(note, 10, plot_w + 20) if note else []
    width = left + plot_w + 30
    height = top + plot_h + 50 + 18 * len(series) + 14 * len(note_lines)
    svg = Svg(width, height, title, "chart distribution")
    svg.text(8, 20, title, size=14, weight="bold")

    def y_of(value: float) -> float:
        value = min(value, high)  # above the axis: on its top edge
        return top + plot_h - (math.log(value) - math.log(low)) / (math.log(high) - math.log(low)) * plot_h

    columns = [label for _, label in STATISTICS]
    step = plot_w / (len(columns) - 1)
    for tick in _decade_ticks(low, high):
        y = y_of(tick)
        svg.line(left, y, left + plot_w, y, opacity=0.2)
        svg.text(left - 6, y + 4, f"{tick:g}", anchor="end", size=11)
    svg.text(14, top + plot_h / 2, "µs (log)", anchor="middle", size=11, rotate=-90)
    for k, label in enumerate(columns):
        x = left + step * k
        svg.line(x, top, x, top + plot_h, opacity=0.12)
        svg.text(x, top + plot_h + 16, label, anchor="middle", size=11, css_class="stat-label")
    svg.line(left, top + plot_h, left + plot_w, top + plot_h, css_class="axis")
    for n, s in enumerate(series):
        points = [(left + step * columns.index(label), y_of(value)) for label, value in s.points if value > 0]
        svg.polyline(points, s.colour, css_class="curve")
        for (x, y), (label, value) in zip(points, [p for p in s.points if p[1] > 0], strict=True):
            svg.circle(x, y, 3.5, s.colour, tooltip=f"{s.label}: {label} {value:.2f} µs")
            if value > high:  # off the axis: its figure above the top edge
                svg.text(x, top - 6 - 12 * (n % 2), f"↑{value:.0f}", anchor="middle", size=10,
                         fill=s.colour, css_class="clipped-label")
        median = dict(s.points).get("median")
        if median is not None and median > 0:
            # the slowest curve's label above its point, the others below, unless that would
            # put it on the axis (or above the plot): then on the other side
            y = y_of(median)
            above = median >= max(medians, default=median)
            if not above and y + 14 > top + plot_h - 3:
                above = True
            elif above and y - 17 < top:
                above = False
            svg.text(left + step + 6, y + (-6 if above else 14), f"{median:.2f}", size=11,
                     fill=s.colour, css_class="median-label")
        legend_y = top + plot_h + 38 + 18 * n
        svg.rect(left, legend_y - 9, 14, 4, s.colour)
        svg.text(left + 20, legend_y - 3, s.label, size=11, css_class="legend")
    for k, line in enumerate(note_lines):
        svg.text(left - 50, top + plot_h + 38 + 18 * len(series) + 14 * k, line, size=10,
                 css_class="axis-note")
    return svg


def link_series(results: Sequence[dict[str, Any]]) -> dict[tuple[str, str], list[Series]]:
    """Per unordered pair, one curve per judged latency result that carries statistics."""
    out: dict[tuple[str, str], list[Series]] = {}
    shown: dict[frozenset[str], tuple[str, str]] = {}  # each pair as it first appeared
    seen: dict[str, str] = {}
    for r in results:
        stats = r.get("latency_us")
        if r.get("kind") != "latency" or r.get("role") != "verdict" or not isinstance(stats, dict):
            continue
        points = [(label, value) for key, label in STATISTICS
                  if (value := _number(stats.get(key))) is not None]
        if not points:
            continue
        pair = r.get("pair") or ["?", "?"]
        key = shown.setdefault(frozenset((str(pair[0]), str(pair[1]))), (str(pair[0]), str(pair[1])))
        transport = str(r.get("transport", "?"))
        label = f"{transport.upper()} {short(str(r.get('tool', '?')), 32)} ({r.get('source', '?')})"
        out.setdefault(key, []).append(Series(label, _colour(transport, seen), points))
    for curves in out.values():
        curves.sort(key=lambda s: (not s.label.startswith("RDMA"), s.label))
    return out


# -- decode tokens per second ----------------------------------------------------------------------
@dataclass(frozen=True)
class Prediction:
    transport: str
    tp: int
    tokens_per_s: float
    comm_share: float | None
    t_comm_ms: float | None
    t_comp_ms: float | None
    source: str
    batch: int | None = None
    fits: bool = True  # False: the model's weights do not fit in `tp` nodes' memory


def predictions(decode: object) -> list[Prediction]:
    """The well-formed rows of `decode.predictions`; anything else is left out."""
    rows = decode.get("predictions") if isinstance(decode, dict) else None
    out = []
    for row in rows if isinstance(rows, list) else []:
        if not isinstance(row, dict):
            continue
        tp, rate = row.get("tp"), _number(row.get("tokens_per_s"))
        if isinstance(tp, bool) or not isinstance(tp, int) or rate is None or rate < 0:
            continue
        share, batch = _number(row.get("comm_share")), row.get("batch")
        out.append(Prediction(str(row.get("transport", "?")), tp, rate,
                              min(1.0, max(0.0, share)) if share is not None else None,
                              _number(row.get("t_comm_ms")), _number(row.get("t_comp_ms")),
                              str(row.get("source", "?")),
                              batch if isinstance(batch, int) and not isinstance(batch, bool) else None,
                              row.get("fits") is not False))
    return out


def _link_source(link: object) -> str:
    """Where an advice link's figure came from: the first word of its first source line."""
    sources = link.get("sources") if isinstance(link, dict) else None
    first = str(sources[0]).split(":")[0] if isinstance(sources, list) and sources else ""
    return first if first in SOURCES else "estimated"


def ways(decode: object) -> list[Prediction]:
    """The advice's ways (the one prediction table `test decode` and the wizard show, whose
    "fastest" is one of its rows), one sequence, as chart rows: `transport` is the way and its
    link ("tensor rdma"), `tp` its node count; [] when the document has none."""
    advice = decode.get("advice") if isinstance(decode, dict) else None
    rows = advice.get("predictions") if isinstance(advice, dict) else None
    links = advice.get("links") if isinstance(advice, dict) else None
    source = {str(link.get("name")): _link_source(link) for link in links or [] if isinstance(link, dict)}
    out = []
    for row in rows if isinstance(rows, list) else []:
        if not isinstance(row, dict):
            continue
        nodes, rate = row.get("nodes"), _number(row.get("tok_s"))
        comm, comp = _number(row.get("t_comm_ms")), _number(row.get("t_comp_ms"))
        if isinstance(nodes, bool) or not isinstance(nodes, int) or rate is None or rate < 0:
            continue
        over = row.get("interconnect")
        name = f"{row.get('split', '?')} {over}" if over else str(row.get("split", "?"))
        share = comm / (comm + comp) if comm is not None and comp is not None and comm + comp > 0 else None
        out.append(Prediction(name, nodes, rate, share, comm, comp,
                              source.get(str(over), "estimated"), 1, row.get("fits") is not False))
    return out


def first_batch(rows: Sequence[Prediction]) -> tuple[list[Prediction], int | None, list[int]]:
    """The rows of the smallest batch (one user's decode speed), that batch, and every batch."""
    batches = sorted({r.batch for r in rows if r.batch is not None})
    if not batches:
        return list(rows), None, []
    return [r for r in rows if r.batch == batches[0]], batches[0], batches


def _nice_top(value: float) -> tuple[float, float]:
    """An axis top at or above `value`, and its tick step (1, 2 or 5 times a power of ten)."""
    if value <= 0:
        return 1.0, 0.25
    raw = value / 5
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    return step * math.ceil(value / step), step


def decode_svg(rows: Sequence[Prediction], title: str, group: str = "TP = {n}") -> Svg | None:
    if not rows:
        return None
    tps = sorted({r.tp for r in rows})
    transports = list(dict.fromkeys(r.transport for r in rows))
    seen: dict[str, str] = {}
    colours = {t: _colour(t, seen) for t in transports}
    bar_w, gap = 46.0, 28.0
    group_w = bar_w * len(transports) + gap
    left, top, plot_h = 64.0, 40.0, 220.0
    width = max(left + group_w * len(tps) + 20, 420.0, text_width(title, 14) + 16)
    notes = [line for text in (
        "meas. = measured, est. = estimated (pale, dashed; the JSON's notes say how), "
        "rec. = replayed recording",
        f"dark top of a bar: the share of each token spent communicating; {NO_FIT} (outline only): "
        "the model does not fit in that many nodes' memory") for line in wrap(text, 10, width - left - 8)]
    height = top + plot_h + 64 + 18 * len(transports) + 14 * len(notes)
    y_top, y_step = _nice_top(max(r.tokens_per_s for r in rows) * 1.1)
    svg = Svg(width, height, title, "chart decode")
    svg.text(8, 22, title, size=14, weight="bold")

    def y_of(value: float) -> float:
        return top + plot_h - value / y_top * plot_h

    for k in range(round(y_top / y_step) + 1):
        tick = k * y_step
        svg.line(left, y_of(tick), width - 12, y_of(tick), opacity=0.18)
        svg.text(left - 6, y_of(tick) + 4, f"{tick:g}", anchor="end", size=11)
    svg.text(14, top + plot_h / 2, "tokens/s", anchor="middle", size=11, rotate=-90)
    svg.line(left, top + plot_h, width - 12, top + plot_h)
    for g, tp in enumerate(tps):
        x0 = left + gap / 2 + group_w * g
        svg.text(x0 + bar_w * len(transports) / 2, top + plot_h + 34, group.format(n=tp), anchor="middle",
                 weight="bold", css_class="tp-label")
        for b, transport in enumerate(transports):
            row = next((r for r in rows if r.tp == tp and r.transport == transport), None)
            if row is None:
                continue
            x, y = x0 + bar_w * b, y_of(row.tokens_per_s)
            estimated = row.source == "estimated"
            share = (f", communication {row.comm_share:.0%} of each token"
                     if row.comm_share is not None else "")
            times = (f"; t_comm {row.t_comm_ms:.3f} ms, t_comp {row.t_comp_ms:.3f} ms"
                     if row.t_comm_ms is not None and row.t_comp_ms is not None else "")
            fit = "" if row.fits else "; the model does not fit in this many nodes' memory"
            svg.rect(x + 2, y, bar_w - 4, top + plot_h - y, colours[transport] if row.fits else "none",
                     css_class="bar" if row.fits else "bar no-fit",
                     opacity=0.55 if estimated else None, stroke=colours[transport],
                     dash="4 2" if estimated else "2 3" if not row.fits else None,
                     tooltip=(f"{transport}, {group.format(n=tp)}: {row.tokens_per_s:.1f} tok/s "
                              f"({row.source}){share}{times}{fit}"))
            if row.comm_share and row.fits:
                comm_h = (top + plot_h - y) * row.comm_share
                svg.rect(x + 2, y, bar_w - 4, comm_h, "#0006", css_class="comm-share")
            svg.text(x + bar_w / 2, y - 5, f"{row.tokens_per_s:.1f}", anchor="middle", size=11,
                     css_class="bar-value")
            svg.text(x + bar_w / 2, top + plot_h + 14,
                     SOURCES.get(row.source, short(row.source, 6)) if row.fits else NO_FIT,
                     anchor="middle", size=9, css_class="source-label")
    legend_y = top + plot_h + 60
    for n, transport in enumerate(transports):
        svg.rect(left, legend_y + 18 * n - 9, 14, 10, colours[transport])
        svg.text(left + 20, legend_y + 18 * n, short(transport, 40), size=11, css_class="legend")
    for k, line in enumerate(notes):  # wrapped to the chart: nothing runs past its right edge
        svg.text(left, legend_y + 18 * len(transports) + 14 * k, line, size=10, css_class="legend-note")
    return svg


# -- the report's section --------------------------------------------------------------------------
def run_pictures(document: dict[str, Any]) -> list[str]:
    """The pictures of one test run document, as HTML fragments (a <figure> each)."""
    parts: list[str] = []
    matrix = document.get("matrix")
    if isinstance(matrix, dict) and isinstance(matrix.get("nodes"), list):
        nodes = [str(n) for n in matrix["nodes"]]
        for key, title in (("rdma_latency_us", "RDMA one-way latency, all pairs"),
                           ("tcp_latency_us", "TCP one-way latency, all pairs")):
            grid = matrix.get(key)
            svg = heatmap_svg(nodes, grid, title, "µs") if isinstance(grid, dict) else None
            if svg is not None:
                parts.append(_figure(svg, f"{title}: the median of each pair, row to column",
                                     "heatmap"))
    results = document.get("results")
    for pair, series in link_series(results if isinstance(results, list) else []).items():
        svg = distribution_svg(pair, series)
        if svg is not None:
            parts.append(_figure(svg, f"{pair[0]} - {pair[1]}: min, median, average, p99, p99.9 and max "
                                 "of each tool's one-way latency", "distribution"))
    decode = document.get("decode")
    every_way = ways(decode)
    rows, batch, batches = (every_way, 1, [1]) if every_way else first_batch(predictions(decode))
    if rows:
        model = decode.get("model") if isinstance(decode, dict) else None
        name = model.get("name") if isinstance(model, dict) else model
        title = ("Predicted decode tokens per second" + (f": {short(str(name), 40)}" if name else "")
                 + (f", batch {batch}" if batch is not None else ""))
        svg = decode_svg(rows, title, "{n} node(s)" if every_way else "TP = {n}")
        others = f"; batches {', '.join(map(str, batches))} are in the JSON" if len(batches) > 1 else ""
        notes = decode.get("notes") if isinstance(decode, dict) else None
        loopback = next((str(n) for n in notes or [] if "loopback" in str(n)), None)
        warning = f". {loopback[0].upper()}{loopback[1:]}" if loopback else ""
        if svg is not None:
            what = ("tok/s of every way to run it on this site (the advice's table, whose fastest "
                    "fitting bar is its \"fastest\"), grouped by node count" if every_way
                    else "tok/s per tensor-parallel size, grouped by transport")
            parts.append(_figure(svg, f"{what}; each bar says where its collective time came from"
                                 f"{others}{warning}", "decode"))
    if not parts:
        return []
    return ['<h3 id="pictures">Pictures</h3><div class="charts">', *parts, "</div>"]

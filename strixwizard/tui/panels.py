"""The Test step's panels, picked out of the live engine's `Measurement`s. Pure, no Textual.

A panel is one judged figure of one link: RDMA latency, the TCP baseline, RDMA bandwidth,
or the RCCL all-reduce (across the nodes). Panels exist before their result arrives
(status None: waiting), so the screen shows what will be measured.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from strixwizard.live.results import REPLAYED, Measurement
from strixwizard.model import Status, pair_text

#: (kind, transport) → panel title, in the order panels are shown per link.
PANELS = (("latency", "rdma", "RDMA latency"), ("latency", "tcp", "TCP baseline"),
          ("bandwidth", "rdma", "RDMA bandwidth"))
RCCL_TITLE = "RCCL all-reduce"
COUNTERS_TITLE = "Fabric counters"


def pair_key(pair: Sequence[str]) -> str:
    return "-".join(sorted(pair))


def panel_key(m: Measurement) -> str:
    if m.kind in ("rccl", "counters"):
        return m.kind
    return f"{pair_key(m.pair)}:{m.kind}:{m.transport}"


@dataclass
class PanelView:
    key: str
    title: str
    link: str  # the pair's key (`pair_key`)
    verdict: Measurement | None = None
    references: list[Measurement] = field(default_factory=list)

    @property
    def status(self) -> Status | None:
        return self.verdict.status if self.verdict is not None else None

    @property
    def figure(self) -> str:
        m = self.verdict
        if m is None or m.figure is None:
            return "—"
        return f"{m.figure:.2f} {m.unit}".strip()

    @property
    def source(self) -> str:
        if self.verdict is None:
            return ""
        return "replayed recording" if self.verdict.source == REPLAYED else "measured"

    def counter_lines(self) -> list[str]:
        """A counters panel: its summary, then the counters that changed (live/counters.py)."""
        from strixwizard.live.counters import delta_lines

        m = self.verdict
        if m is None or m.kind != "counters":
            return []
        return [m.summary, *delta_lines(m, limit=6)]

    def reference_text(self) -> str:
        parts = []
        for r in self.references:
            figure = f"{r.figure:.2f} {r.unit}".strip() if r.figure is not None else "no figure"
            parts.append(f"{r.tool} {figure}")
        return " · ".join(parts)


def spark_points(m: Measurement) -> list[float]:
    """The points a result adds to its panel's sparkline: a latency's one-way profile
    (min, median, avg, p99, p99.9), else the figure itself."""
    if m.latency is not None:
        s = m.latency
        return [v for v in (s.min_us, s.median_us, s.avg_us, s.p99_us, s.p999_us) if v is not None]
    return [m.figure] if m.figure is not None else []


def empty_panels(pairs: Sequence[tuple[str, str]]) -> dict[str, PanelView]:
    panels: dict[str, PanelView] = {}
    for pair in pairs:
        link = pair_key(pair)
        for kind, transport, title in PANELS:
            key = f"{link}:{kind}:{transport}"
            panels[key] = PanelView(key, title, link)
    if pairs:
        panels["rccl"] = PanelView("rccl", RCCL_TITLE, "all nodes")
    return panels


def panel_views(pairs: Sequence[tuple[str, str]], results: Sequence[Measurement]) -> dict[str, PanelView]:
    """Every planned panel, filled with the results that arrived so far (in arrival order)."""
    panels = empty_panels(pairs)
    for m in results:
        key = panel_key(m)
        panel = panels.get(key)
        if panel is None and m.kind == "counters":  # read around the run, shown with its link
            panel = panels[key] = PanelView(key, COUNTERS_TITLE, pair_key(m.pair))
        if panel is None:  # a result the plan did not foresee (an SSH error): its own panel
            title = f"{m.transport.upper()} {m.kind}" if m.kind != "rccl" else RCCL_TITLE
            panel = panels[key] = PanelView(key, title, pair_key(m.pair))
        if m.role == "reference" and m.kind != "counters":
            panel.references.append(m)
        else:
            panel.verdict = m
    return panels


def across_nodes(panels: dict[str, PanelView]) -> PanelView | None:
    """The panel of the result measured across all the nodes (the RCCL all-reduce), if planned."""
    return panels.get("rccl")


def link_title(link: str, results: Sequence[Measurement],
               pairs: Sequence[tuple[str, str]] = ()) -> str:
    """`link node0 ⇄ node1` (the pair as every screen names it, from the planned `pairs` or the
    results), or, for a pair the TCP baseline reached over the management network (no fabric
    link between them), what was measured instead, as the CLI says it."""
    ours = [m for m in results if pair_key(m.pair) == link]
    named = [p for p in pairs if pair_key(p) == link] or [m.pair for m in ours]
    shown = pair_text(*sorted(named[0])) if named else link
    tcp = next((m for m in ours if m.transport == "tcp" and m.kind == "latency" and m.role == "verdict"),
               None)
    if tcp is not None and "management network" in tcp.path:
        return f"{shown}: no fabric link; TCP measured over the management network"
    return f"link {shown}"


def links_of(panels: dict[str, PanelView]) -> list[str]:
    return list(dict.fromkeys(p.link for p in panels.values() if p.key != "rccl"))

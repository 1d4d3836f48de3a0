"""Step 6: live panels per link (RDMA latency and bandwidth, TCP baseline, RCCL), streamed
from the live engine in a worker; the RDMA/TCP ratio like for like; the all-pairs grid."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import DataTable, Select, Static

from strixwizard.decode.catalog import DEFAULT_MODEL
from strixwizard.live.report import like_for_like, matrix_json
from strixwizard.live.results import Measurement, cause, overall_status, read_measurements
from strixwizard.live.soak import SoakProgress
from strixwizard.model import pair_text
from strixwizard.readback import Range, ReadBackError, number
from strixwizard.services.measure import SOAK_SECONDS, planned_pairs
from strixwizard.tui.fit import cell_width
from strixwizard.tui.messages import CancelTests, RunSoak, RunTests
from strixwizard.tui.panels import PanelView, across_nodes, link_title, links_of, panel_views
from strixwizard.tui.screens.base import StepScreen
from strixwizard.tui.screens.common import needs_discovery
from strixwizard.tui.screens.discover import DiscoverState
from strixwizard.tui.text import lines as text_lines
from strixwizard.tui.text import outside
from strixwizard.tui.widgets.decode import DecodePanel
from strixwizard.tui.widgets.measurement import MeasurementPanel, panel_id
from strixwizard.tui.widgets.notice import Notice
from strixwizard.tui.widgets.soak import SoakChoice, SoakModal, SoakPanel
from strixwizard.tui.widgets.table import SizedTable
from strixwizard.tui.workspace import KEEP, KEEP_FOR_SITE, StepState

DEMO_NOTE = ("Demo: every figure is replayed from recordings of two real Strix Halo nodes "
             "(E810 back to back), TCP baseline included, and labelled so.")

DEMO_SOAK = ("Demo: the soak runs for real on this machine's loopback (the demo nodes are "
             "snapshots; not a fabric link).")

SPARK_NOTE = ("Sparklines grow as results arrive: each latency adds its one-way µs profile (min, "
              "median, avg, p99, p99.9), bandwidth and RCCL a point per run.")


@dataclass
class SoakRun:
    """The Test step's soak: what was asked, where each pair is, what it found."""

    pairs: list[tuple[str, str]]
    seconds: float
    progress: dict[tuple[str, str], SoakProgress] = field(default_factory=dict)
    results: list[Measurement] = field(default_factory=list)
    outcome: str | None = None  # "done", "cancelled"
    history: str | None = None  # where it was stored in the test history and how it compared
    recorded: dict[str, Any] | None = None  # the `history` field of its document
    #: The soak came from the report an earlier session saved (its time); that report's `soak`
    #: document is kept as it was, so the Report does not rewrite it
    resumed_at: str | None = None
    resumed_document: dict[str, Any] | None = None


def resumed_soak(document: dict[str, Any], saved_at: str | None) -> tuple[SoakRun | None, list[str]]:
    """The soak of the report an earlier session saved (its `soak` document), back on the Test
    step, and why it was not when it breaks the read-back rule (a file edited by hand: nothing
    restored, said)."""
    where = "the saved report's soak"
    try:
        pairs = [(str(a), str(b)) for a, b in document["pairs"]]
        seconds = number(document["seconds"], f"{where}: seconds", Range(0, 1e7))
    except (KeyError, TypeError, ValueError, IndexError, ReadBackError) as error:
        return None, [f"{where}: not restored ({error!r:.120})"]
    results, skipped = read_measurements(document.get("results"), where)
    if skipped:
        return None, [*skipped[:1], f"{where}: not restored (a soak is whole or not at all)"]
    outcome = document.get("outcome")
    history = document.get("history")
    return SoakRun(pairs, seconds, results=results,
                   outcome=outcome if outcome in ("done", "cancelled") else "cancelled",
                   recorded=history if isinstance(history, dict) else None,
                   resumed_at=saved_at, resumed_document=document), []


@dataclass
class MeasurementState(StepState):

    run: int = field(default=0, metadata=KEEP)  # the run whose messages count; older ones are ignored
    results: list[Measurement] = field(default_factory=list, metadata=KEEP_FOR_SITE)
    pairs: list[tuple[str, str]] = field(default_factory=list, metadata=KEEP_FOR_SITE)
    nodes: list[str] = field(default_factory=list, metadata=KEEP_FOR_SITE)
    spark: dict[str, list[float]] = field(default_factory=dict, metadata=KEEP)  # panel -> points
    error: tuple[str, str] | None = None
    outcome: str | None = field(default=None, metadata=KEEP_FOR_SITE)  # "done", "cancelled"
    seconds: float | None = field(default=None, metadata=KEEP_FOR_SITE)
    file: Path | None = None  # where the last results were saved (Report step)
    history: str | None = None  # where the run was stored and how it compared, in words
    #: The last run that finished (results, nodes): what the Report shows when a later run was
    #: cancelled, since a cancelled run has no verdict. Kept across runs, reset with the site.
    complete: tuple[list[Measurement], list[str]] | None = field(default=None, metadata=KEEP_FOR_SITE)
    #: The results shown were measured before the nodes were discovered again
    earlier: bool = False
    #: The results came from the report an earlier session saved (its time); that report's
    #: `live_tests` document is kept as it was, so the Report does not rewrite it. A new run
    #: clears both.
    resumed_at: str | None = field(default=None, metadata=KEEP_FOR_SITE)
    resumed_document: dict[str, Any] | None = field(default=None, metadata=KEEP_FOR_SITE)
    #: The last soak: its own run, apart from the matrix's results; stored in the test history
    #: as `test soak` is, and its own section of the Report
    soak: SoakRun | None = field(default=None, metadata=KEEP_FOR_SITE)
    soak_run: int = field(default=0, metadata=KEEP)
    #: The model "what this fabric buys you" predicts for (the Report's decode chart follows it)
    decode_model: str | None = field(default=None, metadata=KEEP)

    def reset(self, new_site: bool = False) -> None:
        had = bool(self.results) and not self.earlier
        super().reset(new_site)
        self.earlier = (had or self.earlier) and bool(self.results)

    def begin(self, pairs: list[tuple[str, str]], nodes: list[str]) -> None:
        run, complete, soak = self.run, self.complete, self.soak
        self.reset(new_site=True)
        self.run, self.pairs, self.nodes, self.complete, self.soak = run, pairs, nodes, complete, soak

    def finish(self, outcome: str) -> None:
        self.outcome = outcome
        if outcome == "done":
            self.complete = (list(self.results), list(self.nodes))


def _link_id(kind: str, link: str) -> str:
    """A widget id for a link's row: node names may hold `.`, which an id may not."""
    return f"{kind}-" + re.sub(r"[^A-Za-z0-9_-]", "_", link)


def matrix_view(nodes: list[str], grid: dict[str, Any], width: int
                ) -> tuple[str, list[str], list[list[str]]]:
    """The all-pairs grid as it fits `width`, never a cut cell: "TCP / RDMA" medians; if that is
    too wide, RDMA alone (TCP stays in the panels); then numbered columns with a legend."""
    def cell(a: str, b: str, both: bool) -> str:
        if a == b:
            return "—"
        tcp, rdma = grid["tcp_latency_us"][a].get(b), grid["rdma_latency_us"][a].get(b)
        r = f"{rdma:.2f}" if rdma is not None else "…"
        return (f"{tcp:.1f}" if tcp is not None else "…") + " / " + r if both else r

    for both, title in ((True, "All pairs: median one-way µs, TCP / RDMA"),
                        (False, "All pairs: median one-way RDMA µs (TCP: in the panels above)")):
        rows = [[a, *(cell(a, b, both) for b in nodes)] for a in nodes]
        labels = ["", *nodes]
        if sum(cell_width(label, [r[i] for r in rows]) for i, label in enumerate(labels)) <= width:
            return title, labels, rows
    legend = " · ".join(f"{i} {n}" for i, n in enumerate(nodes, 1))
    rows = [[f"{i} {a}", *(cell(a, b, False) for b in nodes)] for i, a in enumerate(nodes, 1)]
    return (f"All pairs: median one-way RDMA µs (TCP: in the panels above); columns: {legend}",
            ["", *(str(i) for i in range(1, len(nodes) + 1))], rows)


class MeasurementScreen(StepScreen, step="test", state=MeasurementState):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r", "run_tests", "Run tests"),
        Binding("s", "soak_a_link", "Soak a link"),
        Binding("escape", "cancel_tests", "Cancel tests"),
        Binding("i", "details", "Details", tooltip="What the tests run, their limits and what the "
                "demo replays (again: hide them)"),
    ]

    @on(Select.Changed, "#decode-model")
    def _decode_model(self, event: Select.Changed) -> None:
        """The model picked in "what this fabric buys you": the Report's decode chart follows."""
        state = self.session.of(MeasurementState)
        if isinstance(event.value, str) and event.value != state.decode_model:
            state.decode_model = event.value
            self.session.changed()

    def __init__(self) -> None:
        super().__init__()
        self.layout_key: tuple[object, ...] = ()
        self.details = False  # the notice's long text (i): short by default, to leave room below

    def compose_body(self) -> ComposeResult:
        yield Notice(id="test-status", title="Test")
        yield Vertical(id="test-panels")
        yield Static(id="test-matrix-title", classes="section")
        yield SizedTable(id="test-matrix", zebra_stripes=True, cursor_type="none")
        yield DecodePanel(self.session.of(MeasurementState).decode_model or DEFAULT_MODEL, id="test-decode")
        yield SoakPanel(id="test-soak")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        testing = self.wizard.busy("tests")
        if action in ("run_tests", "soak_a_link"):
            return self.session.of(DiscoverState).discovery is not None and not testing
        if action == "cancel_tests":
            return testing and not self.wizard.cancelling("tests")
        return True

    def action_run_tests(self) -> None:
        self.post_message(RunTests())

    def action_soak_a_link(self) -> None:
        discovery = self.session.of(DiscoverState).discovery
        if discovery is None:
            return
        nodes = [spec.name for spec in discovery.site.nodes]
        pairs = planned_pairs(discovery.site)
        if not pairs:
            self.notify("A soak needs two nodes; the site has fewer.", severity="warning")
            return

        def chosen(choice: SoakChoice | None) -> None:
            if choice is not None:
                self.post_message(RunSoak(choice.pairs, choice.seconds))
        self.app.push_screen(SoakModal(pairs, nodes, SOAK_SECONDS), chosen)

    def action_cancel_tests(self) -> None:
        self.post_message(CancelTests())

    def action_details(self) -> None:
        """The notice's details: what runs, the limits, the sparklines, the demo's sources."""
        self.details = not self.details
        self.refresh_view()

    def refresh_view(self) -> None:
        notice = self.query_one("#test-status", Notice)
        self.refresh_bindings()
        if needs_discovery(self.wizard, notice):
            self._show_matrix(False)
            self.query_one("#test-panels").display = False
            self.query_one(SoakPanel).display = False
            return
        self._say(notice)
        self._draw_soak()
        if not self.session.of(MeasurementState).pairs:
            self.query_one("#test-panels").display = False
            self._show_matrix(False)
            return
        self.query_one("#test-panels").display = True
        self._draw_panels()
        self._draw_matrix()
        state = self.session.of(MeasurementState)
        self.query_one(DecodePanel).show(state.results, len(state.nodes))

    def _draw_soak(self) -> None:
        soak = self.session.of(MeasurementState).soak
        panel = self.query_one(SoakPanel)
        if soak is None:
            panel.display = False
            return
        notes = [soak.history] if soak.history else []
        if soak.resumed_at:
            notes.append(f"From an earlier session (saved {soak.resumed_at}), restored from its "
                         "report: s soaks again.")
        panel.show(soak.pairs, soak.seconds, soak.progress, soak.results, soak.outcome,
                   self.wizard.busy("tests") and soak.outcome is None, notes)

    def _say(self, notice: Notice) -> None:
        session = self.session
        state = session.of(MeasurementState)
        discovery = session.of(DiscoverState).discovery
        assert discovery is not None
        t = discovery.site.thresholds
        limits = (f"Limits: RDMA ≤ {t.rdma_latency_us:g} µs one-way, TCP ≤ {t.tcp_latency_us:g} µs, "
                  f"RDMA bandwidth ≥ {t.bandwidth_fraction:.0%} of the link rate, RCCL on NET/IB.")
        demo = f"\n{DEMO_NOTE}" if session.is_demo else ""
        more = (f"\n{SPARK_NOTE}{demo}\ni: fewer words" if self.details
                else "\ni: details" + (" (what the demo measures and what it replays)"
                                        if session.is_demo else ""))
        results = state.results
        soaking = state.soak is not None and state.soak.outcome is None
        if self.wizard.busy("tests") and soaking:
            what = ("stopping the programs…" if self.wizard.cancelling("tests")
                    else "Esc cancels (stops the programs)")
            loopback = "\n" + DEMO_SOAK if session.is_demo else ""
            notice.say(f"Soaking: progress and verdict below. {what}{loopback}", "info",
                       title="Soaking")
        elif self.wizard.busy("tests"):
            what = ("stopping the programs…" if self.wizard.cancelling("tests")
                    else "Esc cancels (stops the programs)")
            notice.say(f"Running: {len(results)} result(s) so far. {what}{demo}", "info",
                       title="Testing")
        elif state.error:
            reason, next_step = state.error
            notice.say(f"{reason}\n\nNext: {next_step}", "error", title="Tests stopped")
        elif state.outcome == "cancelled":
            notice.say(f"Cancelled after {len(results)} result(s); the programs were stopped. "
                       "r runs the tests again.", "warning", title="Tests cancelled")
        elif state.outcome == "done":
            status = overall_status(results)
            seconds = f" in {state.seconds:.1f} s" if state.seconds is not None else ""
            kind = {"pass": "success", "fail": "error", "error": "error"}.get(status.value, "warning")
            stored = f"\n{state.history}" if state.history else ""
            earlier = ("\nMeasured before the nodes were discovered again: r tests what was found now."
                       if state.earlier else "")
            if state.resumed_at:
                earlier = (f"\nFrom an earlier session (saved {state.resumed_at}), restored from its "
                           "report: r tests the nodes now.")
            notice.say(f"{status.value.upper()}: {cause(results)}\n{len(results)} result(s){seconds}. "
                       f"r runs again.{earlier}{stored}{more}", kind,
                       title=f"Tests: {status.value.upper()}")
        else:
            pairs = ", ".join(pair_text(a, b) for a, b in planned_pairs(discovery.site))
            if self.details:
                notice.say(f"r runs the live tests on {pairs}: RDMA latency and bandwidth, the TCP "
                           f"baseline beside it, and the RCCL all-reduce. s soaks a link: every byte "
                           f"checked both ways.\n{limits}{more}", "info", title="Test")
            else:
                notice.say(f"r runs the live tests on {pairs} (latency, bandwidth, RCCL); s soaks "
                           f"a link.{more}", "info", title="Test")

    def _draw_panels(self) -> None:
        state = self.session.of(MeasurementState)
        views = panel_views(state.pairs, state.results)
        box = self.query_one("#test-panels", Vertical)
        key = (state.run, tuple(views))
        if key != self.layout_key:
            self.layout_key = key
            box.remove_children()
            rows: list[Vertical | Horizontal | Static] = []
            for link in links_of(views):
                rows.append(Static(outside(link_title(link, state.results, state.pairs)),
                                   classes="section", id=_link_id("title", link)))
                pair = [v for v in views.values() if v.link == link]
                first, rest = pair[:2], pair[2:]
                rows.append(Horizontal(*[self._panel(v) for v in first], classes="panel-row"))
                rows.append(Static(id=_link_id("ratio", link), classes="ratio"))
                rows += [self._panel(v) for v in rest]
            across = across_nodes(views)
            if across is not None:
                rows.append(Static("all nodes", classes="section"))
                rows.append(self._panel(across))
            # Removal is asynchronous: mount the new panels only once the old ones (same ids)
            # are gone, or a second run would meet the first run's widgets.
            self.app.call_later(self._replace_panels, box, rows)
            return
        self._update_panels(views, box)

    async def _replace_panels(self, box: Vertical, rows: list[Vertical | Horizontal | Static]) -> None:
        await box.remove_children()
        await box.mount_all(rows)
        state = self.session.of(MeasurementState)
        self._update_panels(panel_views(state.pairs, state.results), box)

    def _update_panels(self, views: dict[str, PanelView], box: Vertical) -> None:
        state = self.session.of(MeasurementState)
        testing = self.wizard.busy("tests")
        for view in views.values():
            for panel in box.query(f"#{panel_id(view.key)}").results(MeasurementPanel):
                panel.show(view, state.spark.get(view.key, []), testing)
        ratios = {"-".join(sorted(c.pair)): c for c in like_for_like(state.results)}
        for link in links_of(views):
            for title in box.query(f"#{_link_id('title', link)}").results(Static):
                title.update(outside(link_title(link, state.results, state.pairs)))
            for ratio in box.query(f"#{_link_id('ratio', link)}").results(Static):
                c = ratios.get(link)
                lines = [f"like for like: {c.summary}"] if c else []
                ratio.update(text_lines(lines))

    def _panel(self, view: PanelView) -> MeasurementPanel:
        state = self.session.of(MeasurementState)
        return MeasurementPanel(view, state.spark.get(view.key, []), self.wizard.busy("tests"))

    def _show_matrix(self, shown: bool) -> None:
        self.query_one("#test-matrix").display = shown
        self.query_one("#test-matrix-title").display = shown

    def _draw_matrix(self) -> None:
        state = self.session.of(MeasurementState)
        nodes = state.nodes
        if len(nodes) <= 2:
            self._show_matrix(False)
            return
        self._show_matrix(True)
        grid = matrix_json(nodes, state.results, [], [])
        title_text, labels, rows = matrix_view(nodes, grid, max(40, self.size.width - 4))
        title = self.query_one("#test-matrix-title", Static)
        title.update(outside(title_text))
        table: DataTable[str] = self.query_one("#test-matrix", DataTable)
        table.clear(columns=True)
        table.add_columns(*labels)
        for row in rows:
            table.add_row(*row)

"""Step 2: probe every node (in a worker, per-node progress); nodes, NICs and RDMA ports."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import DataTable, ProgressBar, Static

from strixwizard.checking.engine import Report
from strixwizard.model import CheckResult
from strixwizard.services.discover import Diagnosis
from strixwizard.tui.fit import Column, cell_width, details, fitting, short_kernel, short_sku, short_state
from strixwizard.tui.hostkeys import for_the_wizard
from strixwizard.tui.messages import CancelDiscovery, StartDiscovery
from strixwizard.tui.screens.base import StepScreen
from strixwizard.tui.steps import keys
from strixwizard.tui.text import lines as text_lines
from strixwizard.tui.text import outside
from strixwizard.tui.views import PROBLEMS, NodePorts, node_rows
from strixwizard.tui.widgets.hanging import Hanging
from strixwizard.tui.widgets.notice import Notice
from strixwizard.tui.widgets.sections import FILTER_NOTE, Section, counted_title, failing
from strixwizard.tui.widgets.status import badge
from strixwizard.tui.widgets.table import SizedTable
from strixwizard.tui.workspace import KEEP, NodeStatus, StepState

_MARKS = {"waiting": "·", "start": "…", "done": "✓", "failed": "✗"}
NODE_COLUMNS = ("node", "state", "SKU", "gfx", "ROCm", "kernel", "memory")
PORT_COLUMNS = ("node", "interface", "model", "RDMA port", "state", "speed", "MTU", "GID idx",
                "driver", "firmware", "PCIe")
#: What stays longest when the screen is narrow (0: always shown); the rest is in the details line
_NODE_KEEP = (0, 6, 3, 5, 1, 2, 4)
_PORT_KEEP = (0, 0, 3, 6, 5, 2, 4, 1, 1, 1, 1)


@dataclass(frozen=True)
class Fitted:
    """One table as drawn at a width: the columns shown, each row's cells (short forms when
    narrow) and each row's full cells (for the details line)."""

    shown: list[int]
    rows: list[tuple[str, ...]]
    full: list[tuple[str, ...]]

    @property
    def complete(self) -> bool:
        return all(r == f for r, f in zip(self.rows, self.full, strict=True)) and \
            (not self.full or len(self.shown) == len(self.full[0]))


def fit_table(labels: tuple[str, ...], keep: tuple[int, ...], full: list[tuple[str, ...]],
              short: list[tuple[str, ...]], width: int) -> Fitted:
    """Full cells if every column fits; else the short forms, with columns left out as needed."""
    columns = [Column(label, k) for label, k in zip(labels, keep, strict=True)]
    if sum(cell_width(label, [r[i] for r in full]) for i, label in enumerate(labels)) <= width:
        return Fitted(list(range(len(labels))), full, full)
    return Fitted(fitting(columns, short, width), short, full)


def _short_node(cells: tuple[str, ...]) -> tuple[str, ...]:
    name, state, sku, gfx, rocm, kernel, memory = cells
    return (name, short_state(state), short_sku(sku), gfx, rocm, short_kernel(kernel), memory)


def _short_port(cells: tuple[str, ...]) -> tuple[str, ...]:
    node, interface, model, rdma, state, *rest = cells
    return (node, interface, model, rdma.replace(" (TCP only)", ""), state.split(" (")[0], *rest)


def check_groups(report: Report) -> list[tuple[str, tuple[CheckResult, ...]]]:
    """Every check, by node, then the links', then the site's; worst first in each."""
    groups: dict[str, list[CheckResult]] = {f"node {host.name}": [] for host in report.hosts}
    for result in report.checks:
        if result.host is not None:
            key = f"node {result.host}"
        else:
            key = f"site {report.site}" if result.id.startswith("site.") else "links"
        groups.setdefault(key, []).append(result)
    return [(title, tuple(sorted(results, key=lambda r: (-r.status.rank, r.id))))
            for title, results in groups.items() if results]


def check_line(result: CheckResult) -> Content:
    where = f" {result.entity}" if result.entity and result.entity != result.host else ""
    observed = result.observed or result.detail
    said = f": {observed}" if observed else ""
    want = f"  (want {result.expected})" if result.expected and result.status in PROBLEMS else ""
    return Content.assemble(badge(result.status), outside(f" {result.id}{where}{said}{want}"))


def check_section(title: str, results: tuple[CheckResult, ...], failing_only: bool,
                  folds: dict[str, bool]) -> Section | None:
    """A node's (or the links', or the site's) checks, folded until opened; with the FAIL
    filter on, only its failing checks (None: nothing left to show)."""
    shown = failing(results, failing_only)
    if not shown:
        return None
    body = Static(Hanging(Content("\n").join(check_line(r) for r in shown)), classes="check-lines")
    return Section(body, key=f"discover {title}", title=counted_title(title, results), folds=folds,
                   folded=True, classes="check-section")


@dataclass
class DiscoverState(StepState):
    discovery: Diagnosis | None = None
    ports: list[NodePorts] = field(default_factory=list)  # read in the worker, off the UI thread
    error: tuple[str, str] | None = None  # reason, next step
    progress: dict[str, NodeStatus] = field(default_factory=dict)
    run: int = field(default=0, metadata=KEEP)  # the run whose messages count; older ones are ignored


class DiscoverScreen(StepScreen, step="discover", state=DiscoverState):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r", "rediscover", "Discover again"),
        Binding("escape", "cancel", "Cancel"),
        Binding("f", "failing_only", "FAIL only"),
    ]

    def compose_body(self) -> ComposeResult:
        yield Notice(id="discover-status", title="Discovery")
        yield ProgressBar(id="discover-progress", show_eta=False)
        yield Static("[b]Nodes[/b]", classes="section")
        yield SizedTable(id="nodes", cursor_type="row", zebra_stripes=True)
        yield Static("", id="nodes-details", classes="details", markup=False)
        yield Static("[b]NICs and RDMA ports[/b]", classes="section")
        yield SizedTable(id="ports", cursor_type="row", zebra_stripes=True)
        yield Static("", id="ports-details", classes="details", markup=False)
        yield Static("", id="ports-notes")
        yield Static("[b]Checks[/b] (Enter or a click folds a section; f: FAIL only)", classes="section",
                     id="checks-title")
        yield Vertical(id="check-sections")

    def show_details(self) -> None:
        """The selected rows' fields the tables leave out or shorten at this width."""
        for table_id, labels in (("nodes", NODE_COLUMNS), ("ports", PORT_COLUMNS)):
            fitted = self._fitted.get(table_id)
            line = self.query_one(f"#{table_id}-details", Static)
            table = self.query_one(f"#{table_id}", DataTable)
            if fitted is None or fitted.complete or not fitted.full or not table.display:
                line.display = False
                continue
            row = min(max(table.cursor_row, 0), len(fitted.full) - 1)
            full = fitted.full[row]
            hidden = [i for i in range(len(labels))
                      if i not in fitted.shown or fitted.rows[row][i] != full[i]]
            line.update(outside(f"{full[0]}" + (f" {full[1]}" if table_id == "ports" else "") + ": "
                                + details([labels[i] for i in hidden], [full[i] for i in hidden])))
            line.display = True

    def on_mount(self) -> None:
        self._fitted: dict[str, Fitted] = {}
        self._width = 0
        super().on_mount()

    def on_resize(self, event: events.Resize) -> None:
        if event.size.width != self._width:
            self.refresh_view()

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self.show_details()

    def _fill(self, table: DataTable[object], table_id: str, labels: tuple[str, ...],
              keep: tuple[int, ...], full: list[tuple[str, ...]],
              short: list[tuple[str, ...]], keys: list[str | None]) -> None:
        fitted = fit_table(labels, keep, full, short, self._width)
        self._fitted[table_id] = fitted
        table.clear(columns=True)
        table.add_columns(*[labels[i] for i in fitted.shown])
        for cells, key in zip(fitted.rows, keys, strict=True):
            table.add_row(*[cells[i] for i in fitted.shown], key=key)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "cancel":
            return self.wizard.busy("discover")
        return True

    def action_failing_only(self) -> None:
        """Only the FAIL and ERROR checks (again: every check)."""
        self.session.failing_only = not self.session.failing_only
        self.session.changed()
        self.sync()

    def _show_checks(self, report: Report | None) -> None:
        box = self.query_one("#check-sections", Vertical)
        box.remove_children()
        title = self.query_one("#checks-title", Static)
        title.display = report is not None and bool(report.checks)
        if report is None:
            return
        only, folds = self.session.failing_only, self.session.folds
        sections = [check_section(title, results, only, folds) for title, results in check_groups(report)]
        box.mount_all(section for section in sections if section is not None)

    def action_rediscover(self) -> None:
        self.post_message(StartDiscovery())

    def action_cancel(self) -> None:
        self.post_message(CancelDiscovery())

    def refresh_view(self) -> None:
        session = self.session.of(DiscoverState)
        discovering = self.wizard.busy("discover")
        status = self.query_one("#discover-status", Notice)
        bar = self.query_one("#discover-progress", ProgressBar)
        nodes = self.query_one("#nodes", DataTable)
        ports = self.query_one("#ports", DataTable)
        notes = self.query_one("#ports-notes", Static)
        discovery = session.discovery
        total = len(session.progress) or 1
        finished = sum(1 for s in session.progress.values() if s.event in ("done", "failed"))
        bar.update(total=total, progress=finished)
        bar.display = discovering
        self._width = max(40, self.size.width - 4)  # the body's padding and scrollbar
        notes.update("")
        if discovering or discovery is None:
            rows = [(name, f"{_MARKS.get(st.event, ' ')} {st.text}", *[""] * 5)
                    for name, st in session.progress.items()]
            self._fill(nodes, "nodes", NODE_COLUMNS, _NODE_KEEP, rows, [_short_node(r) for r in rows],
                       list(session.progress))
            self._fill(ports, "ports", PORT_COLUMNS, _PORT_KEEP, [], [], [])
        if discovering:
            status.say(f"Probing {len(session.progress)} nodes ({finished} done)… "
                       "Escape cancels.", "info", title="Discovering")
        elif session.error:
            reason, next_step = session.error
            status.say(f"{reason}\n\nNext: {next_step}", "error", title="Discovery did not finish")
        elif discovery is None:
            status.say("Nothing discovered yet. Press r to probe every node of the site.", "info")
        self._show_checks(None if discovery is None or discovering else discovery.report)
        if discovery is None or discovering:
            self.show_details()
            self.refresh_bindings()
            return
        report = discovery.report
        reachable = sum(1 for h in report.hosts if h.reachable)
        counts = report.summary
        links = len(report.links)
        text = (f"{reachable} of {len(report.hosts)} nodes read · {counts['fail']} failed, "
                f"{counts['warn']} warnings, {counts['pass']} passed, {counts['skip']} skipped checks "
                f"· {links} {'link' if links == 1 else 'links'}.  n: see the links")
        if report.checks:
            from strixwizard.present.doctor_text import area_marks  # no Textual there, no cost here

            text += f"\n{area_marks(report)}"
        if self.session.failing_only:
            text += f"\n{FILTER_NOTE}"
        status.say(text, "error" if reachable == 0 else ("warning" if reachable < len(report.hosts)
                                                         else "success"), title="Discovered")
        node_cells: list[tuple[str, ...]] = []
        for row in node_rows(report):
            progress = session.progress.get(row.name)
            if row.state == "ok":
                state = f"✓ {progress.text if progress else 'read'}"
            else:
                state = f"✗ {for_the_wizard(row.error or 'unreachable')}"
            node_cells.append((row.name, state, row.sku, row.gfx, row.rocm, row.kernel, row.memory))
        self._fill(nodes, "nodes", NODE_COLUMNS, _NODE_KEEP, node_cells,
                   [_short_node(c) for c in node_cells], [c[0] for c in node_cells])
        lines = []
        port_cells: list[tuple[str, ...]] = []
        for node_ports in session.ports:
            for port in node_ports.rows:
                port_cells.append((port.node, port.interface, port.model, port.rdma, port.state, port.speed,
                                   port.mtu, port.gid_index, port.driver, port.firmware, port.pcie))
            if node_ports.note:
                lines.append(f"{node_ports.node}: {node_ports.note}")
            elif not node_ports.rows:
                lines.append(f"{node_ports.node}: no NIC found")
        self._fill(ports, "ports", PORT_COLUMNS, _PORT_KEEP, port_cells,
                   [_short_port(c) for c in port_cells], [None] * len(port_cells))
        ports.display = ports.row_count > 0
        if not ports.row_count:
            lines.insert(0, "No NIC, RDMA port or USB4 network interface found on any node.")
        unreachable = [h for h in report.hosts if not h.reachable]
        if unreachable:
            lines.append(f"Unreachable nodes: go back to Site ({keys('site', 's')}) to test SSH; "
                         "unknown host keys are offered for you to confirm there.")
        notes.update(text_lines(lines))
        self.show_details()
        self.refresh_bindings()

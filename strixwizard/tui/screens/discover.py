"""Step 2: probe every node (in a worker, per-node progress); nodes, NICs and RDMA ports."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import DataTable, ProgressBar, Static

from strixwizard.services.discover import Discovery
from strixwizard.tui.hostkeys import for_the_wizard
from strixwizard.tui.messages import CancelDiscovery, StartDiscovery
from strixwizard.tui.screens.base import StepScreen
from strixwizard.tui.session import KEEP, NodeStatus, StepState
from strixwizard.tui.steps import keys
from strixwizard.tui.views import NodePorts, node_rows
from strixwizard.tui.widgets.notice import Notice
from strixwizard.tui.widgets.table import SizedTable

_MARKS = {"waiting": "·", "start": "…", "done": "✓", "failed": "✗"}
NODE_COLUMNS = ("node", "state", "SKU", "gfx", "ROCm", "kernel", "memory")
PORT_COLUMNS = ("node", "interface", "model", "RDMA port", "state", "speed", "MTU", "GID idx",
                "driver", "firmware", "PCIe")


@dataclass
class DiscoverState(StepState):
    discovery: Discovery | None = None
    ports: list[NodePorts] = field(default_factory=list)  # read in the worker, off the UI thread
    error: tuple[str, str] | None = None  # reason, next step
    progress: dict[str, NodeStatus] = field(default_factory=dict)
    run: int = field(default=0, metadata=KEEP)  # the run whose messages count; older ones are ignored


class DiscoverScreen(StepScreen, step="discover", state=DiscoverState):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r", "rediscover", "Discover again"),
        Binding("escape", "cancel", "Cancel"),
    ]

    def compose_body(self) -> ComposeResult:
        yield Notice(id="discover-status", title="Discovery")
        yield ProgressBar(id="discover-progress", show_eta=False)
        yield Static("[b]Nodes[/b]", classes="section")
        yield SizedTable(id="nodes", cursor_type="row", zebra_stripes=True)
        yield Static("[b]NICs and RDMA ports[/b]", classes="section")
        yield SizedTable(id="ports", cursor_type="row", zebra_stripes=True)
        yield Static("", id="ports-notes")

    def on_mount(self) -> None:
        self.query_one("#nodes", DataTable).add_columns(*NODE_COLUMNS)
        self.query_one("#ports", DataTable).add_columns(*PORT_COLUMNS)
        super().on_mount()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "cancel":
            return self.wizard.busy("discover")
        return True

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
        nodes.clear()
        ports.clear()
        notes.update("")
        if discovering or discovery is None:
            for name, node_status in session.progress.items():
                mark = _MARKS.get(node_status.event, " ")
                nodes.add_row(name, f"{mark} {node_status.text}", *[""] * 5, key=name)
        if discovering:
            status.say(f"Probing {len(session.progress)} nodes ({finished} done)… "
                       "Escape cancels.", "info", title="Discovering")
        elif session.error:
            reason, next_step = session.error
            status.say(f"{reason}\n\nNext: {next_step}", "error", title="Discovery did not finish")
        elif discovery is None:
            status.say("Nothing discovered yet. Press r to probe every node of the site.", "info")
        if discovery is None or discovering:
            self.refresh_bindings()
            return
        report = discovery.report
        reachable = sum(1 for h in report.hosts if h.reachable)
        counts = report.summary
        text = (f"{reachable} of {len(report.hosts)} nodes read · {counts['fail']} failed, "
                f"{counts['warn']} warnings, {counts['pass']} passed, {counts['skip']} skipped checks "
                f"· {len(report.links)} links.  n: see the links")
        status.say(text, "error" if reachable == 0 else ("warning" if reachable < len(report.hosts)
                                                         else "success"), title="Discovered")
        for row in node_rows(report):
            progress = session.progress.get(row.name)
            if row.state == "ok":
                state = f"✓ {progress.text if progress else 'read'}"
            else:
                state = f"✗ {for_the_wizard(row.error or 'unreachable')}"
            nodes.add_row(row.name, state, row.sku, row.gfx, row.rocm, row.kernel, row.memory, key=row.name)
        lines = []
        for node_ports in session.ports:
            for port in node_ports.rows:
                ports.add_row(port.node, port.interface, port.model, port.rdma, port.state, port.speed,
                              port.mtu, port.gid_index, port.driver, port.firmware, port.pcie)
            if node_ports.note:
                lines.append(f"{node_ports.node}: {node_ports.note}")
            elif not node_ports.rows:
                lines.append(f"{node_ports.node}: no NIC found")
        ports.display = ports.row_count > 0
        if not ports.row_count:
            lines.insert(0, "No NIC, RDMA port or USB4 network interface found on any node.")
        unreachable = [h for h in report.hosts if not h.reachable]
        if unreachable:
            lines.append(f"Unreachable nodes: go back to Site ({keys('site', 's')}) to test SSH; "
                         "unknown host keys are offered for you to confirm there.")
        notes.update("\n".join(lines))
        self.refresh_bindings()

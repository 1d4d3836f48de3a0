"""Step 1: open or create site.yaml, test SSH and trust host keys, or pick the demo."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.notifications import SeverityLevel
from textual.widgets import Button, Checkbox, DataTable, Input, Label, Static

from strixwizard.errors import UsageError
from strixwizard.files import display_path
from strixwizard.services.discover import SiteSource
from strixwizard.services.site_file import parse_node_argument, write_site_file
from strixwizard.site import NodeSpec
from strixwizard.tui.cliwords import in_wizard_terms
from strixwizard.tui.messages import OpenSite, TestSsh
from strixwizard.tui.screens.base import StepScreen
from strixwizard.tui.text import outside, paragraph
from strixwizard.tui.widgets.notice import Notice
from strixwizard.tui.widgets.opensite import OpenSiteModal
from strixwizard.tui.widgets.table import SizedTable
from strixwizard.tui.workspace import NodeStatus, StepState

_MARKS = {"waiting": "·", "start": "…", "done": "✓", "failed": "✗"}


def node_address(spec: NodeSpec) -> str:
    if spec.snapshot is not None:
        return f"snapshot {spec.snapshot}"
    if spec.is_local:
        return "this machine"
    port = f":{spec.port}" if spec.port != 22 else ""
    become = f" ({spec.become})" if spec.become else ""
    return f"{spec.user}@{spec.host}{port}{become}"


@dataclass
class SiteState(StepState):
    ssh: dict[str, NodeStatus] = field(default_factory=dict)  # node -> the last SSH test


class SiteScreen(StepScreen, step="site", state=SiteState):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("s", "test_ssh", "Test SSH"),
        Binding("o", "open", "Open"),
        Binding("d", "demo", "Demo"),
        Binding("w", "write", "Write site", show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.pending: list[NodeSpec] = []

    def compose_body(self) -> ComposeResult:
        yield Notice(id="site-info", title="Site")
        yield SizedTable(id="site-nodes", cursor_type="row", zebra_stripes=True)
        yield Static("", id="site-hint")
        with Vertical(id="create"):
            yield Static("[b]Create a site file[/b] — add nodes, then Write. "
                         "Or press d for the demo, o to open an existing file.")
            source = self.session.source
            default = source.site_file if source and source.site_file else Path.cwd() / "site.yaml"
            fields = (
                ("create-path", "file", str(default), "where to write site.yaml"),
                ("create-name", "name", default.parent.name or "site", "site name"),
                ("create-node", "node", "", "NAME=[USER@]HOST[:PORT], Enter adds it"),
                ("create-key", "key", "", "SSH key for these nodes (optional), e.g. ~/.ssh/id_ed25519"),
            )
            for field_id, label, value, placeholder in fields:
                with Horizontal(classes="field"):
                    yield Label(label)
                    yield Input(value, placeholder=placeholder, id=field_id, compact=True)
            with Horizontal(classes="field"):
                yield Label("sudo")
                yield Checkbox("the users are not root: run every command through sudo -n",
                               id="create-sudo", compact=True)
            with Horizontal(id="create-buttons"):
                yield Button("Write site file (w)", id="write", variant="primary", compact=True)
                yield Button("Open… (o)", id="open", compact=True)
                yield Button("Demo (d)", id="demo", compact=True)
            yield Static("", id="create-said", markup=False)

    def on_mount(self) -> None:
        table = self.query_one("#site-nodes", DataTable)
        table.add_columns("node", "reached by", "SSH")
        super().on_mount()
        if self.creating:
            self.query_one("#create-node", Input).focus()

    @property
    def creating(self) -> bool:
        return self.session.site is None

    def tell(self, text: str, severity: SeverityLevel = "information") -> None:
        """What the form answers, inside the form: a notification would cover its fields."""
        if not self.creating:
            self.notify(text, severity=severity, timeout=8)
            return
        said = self.query_one("#create-said", Static)
        said.set_class(severity == "error", "error")
        said.update(paragraph(text))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "write":
            return self.creating
        if action == "test_ssh":
            return not self.creating
        return True

    def refresh_view(self) -> None:
        session = self.session
        info = self.query_one("#site-info", Notice)
        site = session.site
        if site is not None:
            kind = "success" if not session.is_demo else "info"
            info.say(f"{site.name}: {len(site.nodes)} nodes · {session.describe_source()}\n"
                     f"progress is saved to {display_path(session.state_file or '')}", kind,
                     title=f"Site {site.name}")
        elif session.site_error:
            info.say(f"{in_wizard_terms(session.site_error)}\n\nNext: correct the file and open it "
                     "again (o), create a new one below, or press d for the demo.", "error",
                     title="Site file problem")
        else:
            info.say("No site file yet: create one below (a commented site.yaml to edit "
                     "later), open one with o, or try the demo with d.", "info", title="No site yet")
        self.query_one("#create").display = self.creating
        table = self.query_one("#site-nodes", DataTable)
        table.clear()
        specs = list(site.nodes) if site else self.pending
        for spec in specs:
            status = session.of(SiteState).ssh.get(spec.name)
            if spec.snapshot is not None:
                ssh = "- (replayed)"
            elif spec.is_local:
                ssh = "- (local)"
            elif status is None:
                ssh = "not tested (s)"
            else:
                ssh = f"{_MARKS.get(status.event, ' ')} {status.text}"
            table.add_row(spec.name, node_address(spec), ssh, key=spec.name)
        table.display = bool(specs)
        remote = [s for s in specs if s.snapshot is None and not s.is_local]
        hint = self.query_one("#site-hint", Static)
        if site is None:
            hint.update("")
        elif remote:
            tested = [session.of(SiteState).ssh.get(s.name) for s in remote]
            reached = sum(1 for t in tested if t is not None and t.event == "done")
            if all(t is not None and t.event in ("done", "failed") for t in tested):
                hint.update(outside(f"SSH reaches {reached} of {len(remote)} remote nodes"
                                    + (" · n goes on to Discover" if reached == len(remote) else
                                       " · s tests them again (unknown host keys are shown for you to "
                                       "confirm) · n goes on to Discover")))
            else:
                hint.update("s tests SSH to every remote node (unknown host keys are shown for you to "
                            "confirm) · n goes on to Discover")
        else:
            hint.update("No node is reached over SSH here · n goes on to Discover")
        self.refresh_bindings()

    # -- actions ----------------------------------------------------------------
    def action_test_ssh(self) -> None:
        site = self.session.site
        if site is None:
            return
        remote = [s.name for s in site.nodes if s.snapshot is None and not s.is_local]
        if not remote:
            self.notify("no node of this site is reached over SSH", timeout=4)
            return
        self.post_message(TestSsh(remote))

    def action_demo(self) -> None:
        self.post_message(OpenSite(SiteSource(demo=True)))

    def action_open(self) -> None:
        source = self.session.source
        default = str(source.site_file) if source and source.site_file else str(Path.cwd() / "site.yaml")

        def opened(path: Path | None) -> None:
            if path is not None:
                self.post_message(OpenSite(SiteSource(site_file=path.resolve())))

        self.app.push_screen(OpenSiteModal(default), opened)

    def action_write(self) -> None:
        if not self.creating:
            return
        path = Path(self.query_one("#create-path", Input).value.strip() or "site.yaml").expanduser()
        name = self.query_one("#create-name", Input).value.strip() or path.resolve().parent.name or "site"
        pending_text = self.query_one("#create-node", Input).value.strip()
        if pending_text and not self._add_node(pending_text):
            return
        try:
            written = write_site_file(path, name, self.pending)
        except UsageError as error:
            self.tell(f"{error}", "error")
            return
        except OSError as error:
            self.tell(f"cannot write {path}: {error.strerror or error}", "error")
            return
        self.notify(f"site file written to {written}")
        self.pending = []
        self.post_message(OpenSite(SiteSource(site_file=written.resolve())))

    def _add_node(self, text: str) -> bool:
        key = self.query_one("#create-key", Input).value.strip() or None
        become = "sudo" if self.query_one("#create-sudo", Checkbox).value else None
        try:
            spec = parse_node_argument(text, key, become)
        except UsageError as error:
            self.tell(str(error), "error")
            return False
        if any(p.name == spec.name for p in self.pending):
            self.tell(f"there is already a node named {spec.name}", "error")
            return False
        self.pending.append(spec)
        self.tell(f"{spec.name} added; Write (w) writes the file")
        self.query_one("#create-node", Input).value = ""
        self.session.changed()
        self.sync()
        return True

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "create-node" and event.value.strip():
            self._add_node(event.value.strip())
        elif event.input.id in ("create-path", "create-name", "create-key"):
            self.query_one("#create-node", Input).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        actions = {"write": self.action_write, "open": self.action_open, "demo": self.action_demo}
        action = actions.get(event.button.id or "")
        if action:
            action()

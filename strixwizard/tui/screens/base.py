"""What every step screen has: header, step bar, a body, the footer with its keys."""

from __future__ import annotations

from typing import Any, ClassVar, cast

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.widgets import Footer, Header, Input

from strixwizard.tui.steps import BY_ID
from strixwizard.tui.widgets.stepbar import StepBar
from strixwizard.tui.wizard import Wizard
from strixwizard.tui.workspace import Session, StepState


class StepScreen(Screen[None]):
    """A step's screen names its step and its state where it is declared:
    `class FixScreen(StepScreen, step="fix", state=FixState)`."""

    STEP: ClassVar[str]
    #: Home and End move the whole step, whichever table has the focus (text fields keep theirs)
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("home", "body_edge('home')", "Top", show=False, priority=True),
        Binding("end", "body_edge('end')", "Bottom", show=False, priority=True),
    ]
    #: The step's own state (the session keeps one instance per step; `reset()` clears it).
    State: ClassVar[type[StepState]]

    def __init_subclass__(cls, step: str, state: type[StepState] = StepState, **options: Any) -> None:
        super().__init_subclass__(**options)
        cls.STEP, cls.State = step, state

    def __init__(self) -> None:
        super().__init__(id=f"step-{self.STEP}")
        self.rendered_version = -1
        self.sub_title = BY_ID[self.STEP].label

    @property
    def wizard(self) -> Wizard:
        return cast(Wizard, self.app)

    @property
    def session(self) -> Session:
        return self.wizard.session

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False, icon="≡")
        yield StepBar(self.STEP, id="stepbar")
        with VerticalScroll(id="body"):
            yield from self.compose_body()
        yield Footer()

    def compose_body(self) -> ComposeResult:
        yield from ()

    def tell(self, text: str, severity: SeverityLevel = "information") -> None:
        """A short answer to the user (a step with a form says it in the form instead)."""
        self.notify(text, severity=severity, timeout=8)

    def action_body_edge(self, edge: str) -> None:
        focused = self.focused
        if isinstance(focused, Input):
            focused.action_home() if edge == "home" else focused.action_end()
            return
        body = self.query_one("#body", VerticalScroll)
        body.scroll_home(animate=False) if edge == "home" else body.scroll_end(animate=False)

    def on_mount(self) -> None:
        self.sync()

    def on_screen_resume(self) -> None:
        self.sync()

    def sync(self) -> None:
        """Re-render from the session if it changed since this screen last drew it."""
        self.query_one(StepBar).show(self.session.state.visited)
        site = self.session.site
        where = f"site {site.name} · " if site else ""
        self.sub_title = f"{where}{BY_ID[self.STEP].label}"
        if self.rendered_version != self.session.version:
            self.rendered_version = self.session.version
            self.refresh_view()

    def refresh_view(self) -> None:
        """Draw the body from the session; subclasses override."""

"""The wizard application: steps as modes, the session, and the workers that call the engine."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import ClassVar

from textual import work
from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.worker import get_current_worker

from strixwizard.errors import UsageError
from strixwizard.site import Site
from strixwizard.tui import jobs
from strixwizard.tui.deploy_flow import DeployFlow
from strixwizard.tui.hostkeys import UnknownHostKey, unknown_host_key
from strixwizard.tui.jobs import SiteSource
from strixwizard.tui.live_flow import LiveFlow
from strixwizard.tui.messages import (
    DeployPlanned,
    DiscoveryDone,
    DiscoveryFailed,
    MeasurementArrived,
    NodeProgress,
    SshTested,
    TestsEnded,
)
from strixwizard.tui.screens.deploy import DeployScreen
from strixwizard.tui.screens.discover import DiscoverScreen
from strixwizard.tui.screens.fix import FixScreen
from strixwizard.tui.screens.links import LinksScreen
from strixwizard.tui.screens.report import ReportScreen
from strixwizard.tui.screens.site import SiteScreen
from strixwizard.tui.screens.test import TestScreen
from strixwizard.tui.session import NodeStatus, Session
from strixwizard.tui.state import WizardState, load_state, save_state, state_path, user_state_dir
from strixwizard.tui.steps import BY_ID, STEPS, step_after
from strixwizard.tui.widgets.confirm import ConfirmationModal

LAST_SITE_FILE = "last-site.json"


def choose_source(site_file: Path | None, demo: bool, cwd: Path | None = None) -> SiteSource | None:
    """The site to open: --demo, --site FILE, ./site.yaml, else none (the Site step creates one)."""
    if demo:
        return SiteSource(demo=True)
    if site_file is not None:
        return SiteSource(site_file=site_file.expanduser().resolve())
    here = (cwd or Path.cwd()) / "site.yaml"
    return SiteSource(site_file=here.resolve()) if here.is_file() else None


class WizardApp(App[int]):
    CSS_PATH = "app.tcss"
    TITLE = "strixwizard"
    DEFAULT_MODE: ClassVar[str] = "site"
    MODES: ClassVar[dict[str, str | type[Screen[None]]]] = {  # type: ignore[assignment]
        "site": SiteScreen, "discover": DiscoverScreen, "links": LinksScreen, "fix": FixScreen,
        "deploy": DeployScreen, "test": TestScreen, "report": ReportScreen,
    }
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("n", "next_step", "Next"),
        Binding("b", "prev_step", "Back"),
        *[Binding(step.key, f"goto('{step.id}')", step.title, show=False) for step in STEPS],
        Binding("ctrl+t", "toggle_dark", "Light/dark", show=False),
        Binding("q", "quit", "Quit"),
    ]

    def __init__(self, site_file: Path | None = None, demo: bool = False,
                 source: SiteSource | None = None, resume: bool = True) -> None:
        self.session = Session()
        self.deploy = DeployFlow(self)
        self.live = LiveFlow(self)
        self._key_queue: list[str] = []
        self._keys: dict[str, UnknownHostKey] = {}
        self._asking = False
        chosen = source if source is not None else choose_source(site_file, demo)
        self._open(chosen, resume)
        self.DEFAULT_MODE = self.session.state.step  # type: ignore[misc]
        super().__init__()

    # -- session ---------------------------------------------------------------
    def _open(self, source: SiteSource | None, resume: bool) -> None:
        """Point the session at a site and load its saved progress (no probing)."""
        session = self.session
        session.source = source
        session.site, session.site_error = None, None
        session.discovery, session.discovery_error = None, None
        session.progress, session.ssh, session.saved = {}, {}, {}
        session.run += 1
        session.discovering = False
        session.forget_steps()
        if source is not None:
            try:
                session.site = source.load()
            except UsageError as error:
                session.site_error = str(error)
            except Exception as error:  # never a traceback on screen
                session.site_error = f"cannot read the site: {error!r}"
        path = state_path(source.site_file if source else None, source.demo if source else False)
        session.state_file = path
        session.state = load_state(path) if resume and source is not None else WizardState()
        if session.site is None:
            session.state.step = "site"
        session.state.site_file = str(source.site_file) if source and source.site_file else None
        session.saved = {k: Path(v) for k, v in session.state.saved_reports.items() if Path(v).exists()}
        if session.state.step not in session.state.visited:
            session.state.visited.append(session.state.step)
        session.changed()

    def open_site(self, source: SiteSource) -> None:
        """Switch to another site (from the Site step); progress of the new site is resumed."""
        self.workers.cancel_group(self, "discover")
        self.live.cancel()
        self._open(source, resume=True)
        self._remember_site(source)
        self.save_progress()
        self.screen_changed()

    def _remember_site(self, source: SiteSource) -> None:
        if source.site_file is None:
            return
        state = WizardState(step="site", site_file=str(source.site_file))
        save_state(user_state_dir() / LAST_SITE_FILE, state)

    def save_progress(self) -> None:
        session = self.session
        if session.source is None or session.state_file is None:
            return
        session.state.saved_reports = {k: str(v) for k, v in session.saved.items()}
        problem = save_state(session.state_file, session.state)
        if problem:
            self.notify(problem, severity="warning", timeout=8)

    def screen_changed(self) -> None:
        """Tell the current step screen to re-render (other screens do when shown)."""
        self.session.changed()
        screen = self.screen
        sync = getattr(screen, "sync", None)
        if callable(sync):
            sync()

    def on_mount(self) -> None:
        self.theme = "textual-dark"
        if self.session.state.step != "site":
            self.notify(f"resumed at step {BY_ID[self.session.state.step].number} "
                        f"{BY_ID[self.session.state.step].title}", timeout=4)
            self.ensure_discovery()

    # -- navigation ------------------------------------------------------------
    def action_goto(self, step: str) -> None:
        if step not in BY_ID:
            return
        session = self.session
        if step != "site" and session.site is None:
            self.notify("open or create a site first (or press d for the demo)", severity="warning")
            return
        session.state.step = step
        if step not in session.state.visited:
            session.state.visited.append(step)
        self.save_progress()
        if step != "site":
            self.ensure_discovery()
        self.switch_mode(step)

    def action_next_step(self) -> None:
        self.action_goto(step_after(self.session.state.step, +1).id)

    def action_prev_step(self) -> None:
        self.action_goto(step_after(self.session.state.step, -1).id)

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for step in STEPS:
            yield SystemCommand(f"Step {step.number}: {step.title}", step.purpose,
                                lambda s=step.id: self.action_goto(s))
        yield SystemCommand("Open the demo site", "two Strix Halo nodes replayed from snapshots",
                            lambda: self.open_site(SiteSource(demo=True)))
        yield SystemCommand("Discover again", "probe every node and run the checks again",
                            self.start_discovery)
        yield SystemCommand("Cancel discovery", "stop waiting for the nodes being probed",
                            self.cancel_discovery)
        yield SystemCommand("Plan the deploy again", "step 5: the deploy engine's plan from the facts",
                            self.deploy.plan)
        if self.deploy.can_apply():
            yield SystemCommand("Apply the deploy", "step 5: REAL changes on the nodes (asks first)",
                                lambda: self._goto_and("deploy", "apply"))
        if self.deploy.can_roll_back():
            yield SystemCommand("Roll back the deploy", "step 5: undo the last deploy run",
                                self.deploy.roll_back)
        yield SystemCommand("Run the live tests", "step 6: RDMA and TCP latency, bandwidth, RCCL",
                            lambda: self._goto_and("test", "run_tests"))
        yield SystemCommand("Cancel the live tests", "step 6: stop the tests and their programs",
                            self.live.cancel)
        yield SystemCommand("Light or dark theme", "switch between textual-light and textual-dark",
                            self.action_toggle_dark)

    def _goto_and(self, step: str, action: str) -> None:
        self.action_goto(step)
        self.call_after_refresh(self.screen.run_action, action)

    async def action_quit(self) -> None:
        self.live.cancel()  # stop the programs of a running test before leaving
        await super().action_quit()

    # -- discovery -------------------------------------------------------------
    def ensure_discovery(self) -> None:
        session = self.session
        if session.site is not None and session.discovery is None and not session.discovering \
                and session.discovery_error is None:
            self.start_discovery()

    def start_discovery(self) -> None:
        session = self.session
        if session.source is None or session.site is None:
            self.notify("open or create a site first", severity="warning")
            return
        self.workers.cancel_group(self, "discover")
        self.live.cancel()
        session.run += 1
        session.forget_steps()
        session.discovering = True
        session.discovery_error = None
        session.progress = {spec.name: NodeStatus("waiting", "waiting") for spec in session.site.nodes}
        self.screen_changed()
        self._discover(session.run, session.source)

    def cancel_discovery(self) -> None:
        session = self.session
        if not session.discovering:
            return
        self.workers.cancel_group(self, "discover")
        session.run += 1  # late messages of the abandoned run are ignored
        session.discovering = False
        session.discovery_error = (
            "discovery cancelled",
            "press r to discover again; SSH collections already started end on their own "
            "within the site's ssh.deadline",
        )
        self.screen_changed()

    @work(thread=True, exclusive=True, group="discover", exit_on_error=False)
    def _discover(self, run: int, source: SiteSource) -> None:
        def progress(node: str, event: str, text: str) -> None:
            self.post_message(NodeProgress(run, node, event, text))

        try:
            discovery = jobs.discover(source, progress)
        except UsageError as error:
            self.post_message(DiscoveryFailed(run, str(error), "correct the site file, then press r"))
            return
        except Exception as error:
            self.post_message(DiscoveryFailed(
                run, f"internal error: {error!r}",
                "press r to try again; if it repeats, report it with the output of "
                "`strixwizard doctor -v` and `strixwizard capture`",
            ))
            return
        if not get_current_worker().is_cancelled:
            self.post_message(DiscoveryDone(run, discovery))

    def on_node_progress(self, message: NodeProgress) -> None:
        if message.run != self.session.run:
            return
        self.session.progress[message.node] = NodeStatus(message.event, message.text)
        self.screen_changed()

    def on_discovery_done(self, message: DiscoveryDone) -> None:
        session = self.session
        if message.run != session.run:
            return
        session.discovering = False
        session.discovery = message.discovery
        session.site = message.discovery.site
        for node in message.discovery.nodes:
            report = node.report
            current = session.progress.get(report.name)
            if not report.reachable:
                session.progress[report.name] = NodeStatus("failed", report.error or "unreachable")
            elif current is None or current.event != "done":
                session.progress[report.name] = NodeStatus("done", report.source)
        self.screen_changed()

    def on_discovery_failed(self, message: DiscoveryFailed) -> None:
        if message.run != self.session.run:
            return
        self.session.discovering = False
        self.session.discovery_error = (message.reason, message.next_step)
        self.screen_changed()

    # -- deploy and live tests (steps 5 and 6) -------------------------------------
    def on_deploy_planned(self, message: DeployPlanned) -> None:
        self.deploy.planned(message)

    def on_measurement_arrived(self, message: MeasurementArrived) -> None:
        self.live.arrived(message)

    def on_tests_ended(self, message: TestsEnded) -> None:
        self.live.ended(message)

    # -- fixes (Fix step) -------------------------------------------------------
    def apply_fixes(self) -> None:
        session = self.session
        discovery = session.discovery
        if discovery is None or discovery.plan is None or session.fixing:
            return
        session.fixing, session.fix_log, session.fix_error = True, [], None
        session.applied, session.rolled_back = None, None
        self.screen_changed()
        self._apply(discovery)

    @work(thread=True, group="fix", exit_on_error=False)
    def _apply(self, discovery: jobs.Discovery) -> None:
        assert discovery.plan is not None
        try:
            applied = jobs.apply_fixes(discovery.site, discovery.nodes, discovery.plan, self._fix_say)
        except Exception as error:
            self.call_from_thread(self._fix_done, None, f"applying stopped: {error!r}")
            return
        self.call_from_thread(self._fix_done, applied, None)

    def _fix_say(self, node: str, message: str) -> None:
        self.call_from_thread(self._fix_log, f"{node}: {message}")

    def _fix_log(self, line: str) -> None:
        self.session.fix_log.append(line)
        self.screen_changed()

    def _fix_done(self, applied: jobs.Applied | None, error: str | None) -> None:
        session = self.session
        session.fixing, session.applied, session.fix_error = False, applied, error
        self.screen_changed()

    def roll_back(self) -> None:
        session = self.session
        if session.applied is None or session.fixing:
            return
        session.fixing, session.fix_log = True, []
        self.screen_changed()
        self._roll_back(session.applied.report.run_id)

    @work(thread=True, group="fix", exit_on_error=False)
    def _roll_back(self, run_id: str) -> None:
        try:
            result = jobs.roll_back(run_id, self._fix_say)
            outcome = ("rolled back: " if result.ok else "rollback incomplete: ") + "; ".join(
                f"{n.node} {n.status} ({n.state})" for n in result.nodes)
        except Exception as error:
            outcome = f"rollback stopped: {error!r}; the journals are kept for `strixwizard fix --rollback`"
        self.call_from_thread(self._rolled_back, outcome)

    def _rolled_back(self, outcome: str) -> None:
        session = self.session
        session.fixing, session.rolled_back, session.applied = False, outcome, None
        self.screen_changed()

    # -- SSH test (Site step) ---------------------------------------------------
    def test_ssh(self, names: list[str], trust: str | None = None) -> None:
        session = self.session
        if session.site is None or not names:
            return
        session.ssh_testing = True
        for name in names:
            session.ssh[name] = NodeStatus("start", "connecting…")
        self.screen_changed()
        self._test_ssh(session.site, names, trust)

    @work(thread=True, group="ssh", exit_on_error=False)
    def _test_ssh(self, site: Site, names: list[str], trust: str | None) -> None:
        def progress(node: str, event: str, text: str) -> None:
            self.call_from_thread(self._ssh_progress, node, event, text)

        try:
            nodes = jobs.test_ssh(site, names, trust is not None, progress)
        except Exception as error:
            self.call_from_thread(self._ssh_progress, ",".join(names), "failed", f"internal error: {error!r}")
            nodes = []
        self.post_message(SshTested(nodes, trust))

    def _ssh_progress(self, node: str, event: str, text: str) -> None:
        self.session.ssh[node] = NodeStatus(event, text)
        self.screen_changed()

    def on_ssh_tested(self, message: SshTested) -> None:
        session = self.session
        session.ssh_testing = False
        for node in message.nodes:
            report = node.report
            if report.reachable:
                session.ssh[report.name] = NodeStatus("done", f"reached {report.address}")
            else:
                session.ssh[report.name] = NodeStatus("failed", report.error or "unreachable")
        if message.trusted:
            self.notify(f"host key of {message.trusted} trusted and saved to known_hosts")
        session.discovery, session.discovery_error = None, None  # the answers may have changed
        session.forget_steps()
        self.screen_changed()
        asked = set(self._key_queue) | ({message.trusted} if message.trusted else set())
        for node in message.nodes:
            key = unknown_host_key(node.report.name, node.report.error)
            if key is not None and key.node not in asked:
                self._key_queue.append(key.node)
                self._keys[key.node] = key
        if not self._asking:
            self._ask_next_key()

    def _ask_next_key(self) -> None:
        if not self._key_queue:
            self._asking = False
            return
        self._asking = True
        key = self._keys[self._key_queue.pop(0)]
        site = self.session.site
        known_hosts = site.resolve(site.ssh.known_hosts) if site else "known_hosts"
        question = (
            f"Node {key.node} ({key.host}) offered a host key that is not in {known_hosts}:\n\n"
            f"    {key.key_type}\n    {key.fingerprint}\n\n"
            "Compare it with the node's own key (on the node: ssh-keygen -lf "
            "/etc/ssh/ssh_host_ed25519_key.pub). Trust it and add it to known_hosts?"
        )

        def answered(yes: bool | None) -> None:
            if yes:
                self.test_ssh([key.node], trust=key.node)
            else:
                self.session.ssh[key.node] = NodeStatus(
                    "failed", f"host key {key.fingerprint} not trusted; SSH to this node is refused")
                self.screen_changed()
            self._ask_next_key()

        self.push_screen(ConfirmationModal("Unknown SSH host key", question,
                                           yes="Trust it (y)", no="Do not trust (n)"), answered)


def run(site_file: Path | None = None, demo: bool = False) -> int:
    app = WizardApp(site_file=site_file, demo=demo)
    app.run()
    return app.return_code or 0

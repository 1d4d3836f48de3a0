"""The wizard application: steps as modes, the session, and the workers that call the services.

Screens post requests (`tui.messages`); the handlers here start workers (`@work`) that
call the services (`strixwizard.services`, injected as `services=`) and post results
back; one handler, `on_worker_state_changed`, re-renders when a job starts or ends and
turns a worker's error into the reason its step shows. Whether a job runs is the
workers' state (`busy`), never a flag of the session.
"""

from __future__ import annotations

import datetime
import importlib
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import ClassVar, cast

from textual import work
from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.widgets import Input
from textual.worker import Worker, WorkerState, get_current_worker

from strixwizard.errors import UsageError
from strixwizard.fixing.lock import LockHeld, UnfinishedRun
from strixwizard.live.results import Measurement, read_measurements
from strixwizard.live.soak import SoakProgress
from strixwizard.places import NODE_CONFIG_DIR, NODE_JOURNAL_DIR
from strixwizard.present.terminal import visible
from strixwizard.services.common import NodeEvent, NotConfirmed, Question, StepEvent
from strixwizard.services.deploy import Deployed
from strixwizard.services.discover import Diagnosis, SiteSource
from strixwizard.services.facade import Services
from strixwizard.services.fix import Applied, rollback_outcome
from strixwizard.services.measure import Cancel, planned_pairs
from strixwizard.site import Site
from strixwizard.tui import messages as m
from strixwizard.tui.cliwords import in_wizard_terms
from strixwizard.tui.extras import saved_sections
from strixwizard.tui.hostkeys import UnknownHostKey, for_the_wizard, unknown_host_key
from strixwizard.tui.panels import panel_key, spark_points
from strixwizard.tui.saved import (
    WizardState,
    load_state,
    load_theme,
    save_state,
    save_theme,
    state_path,
    user_state_dir,
)
from strixwizard.tui.screens.base import StepScreen
from strixwizard.tui.screens.deploy import DeployState
from strixwizard.tui.screens.discover import DiscoverState
from strixwizard.tui.screens.fix import FixState
from strixwizard.tui.screens.measure import MeasurementState, SoakRun, resumed_soak
from strixwizard.tui.screens.site import SiteState
from strixwizard.tui.steps import BY_ID, STEPS, Step, keys, refer, step_after
from strixwizard.tui.views import all_ports
from strixwizard.tui.widgets.confirm import ConfirmationModal
from strixwizard.tui.widgets.hostkeys import HostKeysModal
from strixwizard.tui.wizard import RunAction, RunGroup, WorkerGroup
from strixwizard.tui.workspace import NodeStatus, Session

LAST_SITE_FILE = "last-site.json"
MAX_SPARK = 120  # points kept per panel across runs
ANSWER_WAIT_S = 3600.0  # how long a worker waits for the user to answer a question


def choose_source(site_file: Path | None, demo: bool, cwd: Path | None = None) -> SiteSource | None:
    """The site to open: --demo, --site FILE, ./site.yaml, else none (the Site step creates one)."""
    if demo:
        return SiteSource(demo=True)
    if site_file is not None:
        return SiteSource(site_file=site_file.expanduser().resolve())
    here = (cwd or Path.cwd()) / "site.yaml"
    return SiteSource(site_file=here.resolve()) if here.is_file() else None


def screen_class(step: Step) -> type[StepScreen]:
    """The screen class a step names ("module:Class")."""
    module, name = step.screen.split(":")
    return cast(type[StepScreen], getattr(importlib.import_module(module), name))


class WizardApp(App[int]):
    CSS_PATH = "app.tcss"
    TITLE = "strixwizard"
    DEFAULT_MODE: ClassVar[str] = STEPS[0].id
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("n", "next_step", "Next"),
        Binding("b", "prev_step", "Back"),
        *[Binding(step.key, f"goto('{step.id}')", step.title, show=False) for step in STEPS],
        Binding("ctrl+t", "toggle_dark", "Light/dark", show=False),
        Binding("question_mark", "help", "Help"),
        Binding("q", "quit", "Quit"),
        # In a text field the letters above type into it: these two keys are the way out,
        # and the footer shows them only there (check_action).
        Binding("escape", "leave_field", "Leave the field"),
        Binding("ctrl+q", "quit_from_field", "Quit"),
    ]

    def __init__(self, site_file: Path | None = None, demo: bool = False,
                 source: SiteSource | None = None, resume: bool = True,
                 services: Services | None = None) -> None:
        self.services = services or Services()
        screens = {step.id: screen_class(step) for step in STEPS}
        self.MODES = dict(screens)  # type: ignore[misc]
        self.session = Session(states={step_id: cls.State() for step_id, cls in screens.items()})
        self.test_cancel = Cancel()
        self._test_started = 0.0
        self._key_queue: list[str] = []
        self._keys: dict[str, UnknownHostKey] = {}
        self._asking = False
        chosen = source if source is not None else choose_source(site_file, demo)
        self._open(chosen, resume)
        self.DEFAULT_MODE = self.session.state.step  # type: ignore[misc]
        super().__init__()

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = True) -> None:
        """Every toast of the wizard (its screens' and widgets' too: they call this) is plain text:
        an error's or a node's words are shown, never read as markup (`markup` is ignored), and
        a command-line next step is said as the wizard's step or key that does it."""
        super().notify(visible(in_wizard_terms(message), keep="\n"), title=visible(title), severity=severity,
                       timeout=timeout, markup=False)

    # -- what screens may ask (tui.wizard.Wizard) ----------------------------------
    def busy(self, group: WorkerGroup) -> bool:
        return any(w.group == group and w.state in (WorkerState.PENDING, WorkerState.RUNNING)
                   for w in self.workers)

    def cancelling(self, group: WorkerGroup) -> bool:
        if group == "tests":
            return self.busy("tests") and self.test_cancel.cancelled
        return False

    # -- session ---------------------------------------------------------------
    def _open(self, source: SiteSource | None, resume: bool) -> None:
        """Point the session at a site and load its saved progress (no probing)."""
        session = self.session
        session.source = source
        session.site, session.site_error, session.restore_notes = None, None, []
        session.saved = {}
        session.forget_all()
        session.of(DiscoverState).run += 1
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
            session.state.step = STEPS[0].id
        session.state.site_file = str(source.site_file) if source and source.site_file else None
        session.saved = {k: Path(v) for k, v in session.state.saved_reports.items() if Path(v).exists()}
        if resume and session.site is not None:
            self._restore(session)
        if session.state.step not in session.state.visited:
            session.state.visited.append(session.state.step)
        session.changed()

    def _restore(self, session: Session) -> None:
        """The live tests, the soak and the deploy of the report an earlier session saved, back
        on the Test and Deploy steps (and in the Report, unchanged, until something new runs)."""
        assert session.site is not None
        sections = saved_sections(session.saved.get("json"), session.site.name)
        at = session.state.saved_at
        tests = sections.get("live_tests")
        skipped: list[str] = []
        if tests is not None:
            results, notes = read_measurements(tests.get("results", []), "the saved report's live tests")
            skipped += notes  # a file edited by hand: what breaks the rule is left out, said
            if results:
                state = session.of(MeasurementState)
                nodes = [spec.name for spec in session.site.nodes]
                outcome = tests.get("outcome") if isinstance(tests.get("outcome"), str) else None
                state.results, state.nodes, state.outcome = results, nodes, outcome
                state.pairs = planned_pairs(session.site)
                state.complete = (list(results), list(nodes)) if outcome == "done" else None
                # kept as it was saved, unless something was left out: then written anew
                state.resumed_at, state.resumed_document = at, None if notes else tests
                for measurement in results:
                    state.spark.setdefault(panel_key(measurement), []).extend(spark_points(measurement))
        soak = sections.get("soak")
        if soak is not None:
            session.of(MeasurementState).soak, notes = resumed_soak(soak, at)
            skipped += notes
        session.restore_notes = skipped
        deploy = sections.get("deploy")
        if deploy is not None:
            deployed = session.of(DeployState)
            deployed.resumed, deployed.resumed_at = deploy, at

    def _say_restore_notes(self) -> None:
        """What resuming left out of the saved report, said once (on start or on opening a site)."""
        skipped, self.session.restore_notes = self.session.restore_notes, []
        if skipped:
            self.notify("Not restored from the saved report:\n" + "\n".join(skipped[:5])
                        + (f"\n(and {len(skipped) - 5} more)" if len(skipped) > 5 else ""),
                        severity="warning", timeout=10)

    def on_open_site(self, message: m.OpenSite) -> None:
        """Switch to another site (from the Site step); progress of the new site is resumed."""
        if self.session.site is not None:  # a bad file never replaces the site that is open
            try:
                message.source.load()
            except Exception as error:  # never a traceback on screen
                reason = str(error) if isinstance(error, UsageError) else f"cannot read the site: {error!r}"
                self.notify(f"{reason}\nStill on site {self.session.site.name}.", severity="error",
                            timeout=10)
                return
        self.workers.cancel_group(self, "discover")
        self._cancel_tests()
        self._open(message.source, resume=True)
        if self.session.site_error:
            self.notify(self.session.site_error, severity="error", timeout=10)
        self._say_restore_notes()
        self._remember_site(message.source)
        self.save_progress()
        self.screen_changed()

    def _remember_site(self, source: SiteSource) -> None:
        if source.site_file is None:
            return
        state = WizardState(step=STEPS[0].id, site_file=str(source.site_file))
        save_state(user_state_dir() / LAST_SITE_FILE, state)

    def on_save_progress(self, message: m.SaveProgress) -> None:
        self.save_progress()

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
        if isinstance(screen, StepScreen):
            screen.sync()

    def clear_selection(self) -> None:
        """An Input composed on a mode's first screen clears the selection before that screen is
        on the stack (Textual issue 6444): on Python 3.12+ the wizard died at start. Nothing is
        selected then, so there is nothing to clear."""
        from contextlib import suppress

        from textual.app import ScreenStackError

        with suppress(ScreenStackError):
            super().clear_selection()

    def on_mount(self) -> None:
        self.theme = load_theme()
        self._say_restore_notes()
        if self.session.state.step != STEPS[0].id:
            step = BY_ID[self.session.state.step]
            self.notify(f"resumed at step {step.number} {step.title}", timeout=4)
            self.ensure_discovery()

    # -- navigation ------------------------------------------------------------
    def action_goto(self, step: str) -> None:
        if step not in BY_ID:
            return
        session = self.session
        if step != STEPS[0].id and session.site is None:
            text = "open or create a site first (or press d for the demo)"
            screen = self.screen
            if isinstance(screen, StepScreen):
                screen.tell(text, "warning")  # the Site form says it there: a toast would cover it
            else:
                self.notify(text, severity="warning")
            return
        session.state.step = step
        if step not in session.state.visited:
            session.state.visited.append(step)
        self.save_progress()
        if step != STEPS[0].id:
            self.ensure_discovery()
        self.switch_mode(step)
        self.refresh_bindings()  # Next/Back follow the step

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """No "Next" on the last step and no "Back" on the first: the footer offers only a
        key that goes somewhere."""
        if action in ("leave_field", "quit_from_field"):
            return isinstance(self.focused, Input)
        step = self.session.state.step
        if action == "next_step":
            return step != STEPS[-1].id
        if action == "prev_step":
            return step != STEPS[0].id
        return True

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
                            lambda: self.post_message(m.OpenSite(SiteSource(demo=True))))
        yield SystemCommand("Discover again", "probe every node and run the checks again",
                            lambda: self.post_message(m.StartDiscovery()))
        if self.busy("discover"):  # "Cancel …" only while something runs
            yield SystemCommand("Cancel discovery", "stop waiting for the nodes being probed",
                                lambda: self.post_message(m.CancelDiscovery()))
        deploy, test = refer("deploy"), refer("test")
        yield SystemCommand("Plan the deploy again", f"{deploy}: the deploy engine's plan from the facts",
                            lambda: self.post_message(m.PlanDeploy()))
        if self.can_apply_deploy():
            yield SystemCommand("Apply the deploy", f"{deploy}: REAL changes on the nodes (asks first)",
                                lambda: self.post_message(m.ApplyDeploy()))
        if self.can_roll_back_deploy():
            yield SystemCommand("Roll back the deploy", f"{deploy}: undo the last deploy run (asks first)",
                                lambda: self.post_message(m.RollBackDeploy()))
        yield SystemCommand("Run the live tests", f"{test}: RDMA and TCP latency, bandwidth, RCCL",
                            lambda: self._goto_and("test", m.RunTests()))
        yield SystemCommand("Soak a link", f"{test}: every byte checked both ways, a pair or every pair",
                            self._goto_and_soak)
        if self.busy("tests"):
            yield SystemCommand("Cancel the live tests", f"{test}: stop the tests and their programs",
                                lambda: self.post_message(m.CancelTests()))
        yield SystemCommand("Light or dark theme", "switch between textual-light and textual-dark",
                            self.action_toggle_dark)

    def action_help(self) -> None:
        """The help screen: keys, steps, verdicts and where files go."""
        from strixwizard.files import display_path
        from strixwizard.fixing.journal import default_journal_dir
        from strixwizard.tui.widgets.help import HelpScreen, help_content

        if isinstance(self.screen, HelpScreen):
            return
        screen, session = self.screen, self.session
        everywhere = [(f"1…{len(STEPS)}", "open a step by its number"),
                      ("n / b", "the next / the previous step"),
                      ("f", f"only the failing rows ({refer('discover')}; {refer('fix')})"),
                      ("?", "this help"), ("ctrl+p", "every action by name (the command palette)"),
                      ("ctrl+t", "light or dark theme"), ("home/end", "top / bottom of the step"),
                      ("q", "quit: the progress is saved, a running test is stopped first")]
        here = [(binding.key_display or binding.key, binding.tooltip or binding.description)
                for binding in getattr(type(screen), "BINDINGS", [])
                if isinstance(binding, Binding) and binding.show and binding.description
                and binding.key != "f"]
        journals = default_journal_dir()
        files = [("progress (the step you are on, saved reports)",
                  display_path(session.state_file) if session.state_file else "none until a site is open"),
                 ("reports (JSON, Markdown, HTML)", display_path(session.out_dir)),
                 ("fix and deploy journals (head)", display_path(journals)),
                 ("journals on each node", NODE_JOURNAL_DIR),
                 ("demo dry runs (copies of the snapshots)", display_path(journals.parent / "dry-runs")),
                 ("deploy files on each node", NODE_CONFIG_DIR)]
        self.push_screen(HelpScreen(help_content(everywhere, here, files)))

    def action_toggle_dark(self) -> None:
        super().action_toggle_dark()
        problem = save_theme(self.theme)  # remembered for the next start
        if problem:
            self.notify(problem, severity="warning", timeout=8)

    def _goto_and(self, step: str, message: Message) -> None:
        self.action_goto(step)
        self.call_after_refresh(self.post_message, message)

    def _goto_and_soak(self) -> None:
        """The Test step, then its soak dialog (as s there opens it)."""
        self.action_goto("test")
        self.call_after_refresh(lambda: self.screen.run_action("soak_a_link"))

    def action_leave_field(self) -> None:
        """Out of the text field, so the step's keys work again (the field keeps its text)."""
        self.set_focus(None)
        self.refresh_bindings()

    async def action_quit_from_field(self) -> None:
        await self.action_quit()

    async def action_quit(self) -> None:
        self._cancel_tests()  # stop the programs of a running test before leaving
        await super().action_quit()

    # -- one handler for every worker: re-render, and turn an error into its step's reason --
    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        worker = event.worker
        if event.state == WorkerState.ERROR and worker.error is not None:
            self._failed(worker.group, worker.error)
        self.screen_changed()

    def _failed(self, group: str, error: BaseException) -> None:
        session = self.session
        if isinstance(error, NotConfirmed):
            self.notify(str(error), timeout=4)
            return
        again = f"discover again ({keys('discover', 'r')}) to see each node's state"
        if group == "discover":
            found = session.of(DiscoverState)
            if isinstance(error, UsageError):
                found.error = (str(error), "correct the site file, then press r")
            else:
                found.error = (f"internal error: {error!r}",
                               "press r to try again; if it repeats, report it with the output of "
                               "`strixwizard doctor -v` and `strixwizard capture`")
        elif group == "ssh":
            said = str(error) if isinstance(error, UsageError) else repr(error)  # a refused sudo
            self.notify(f"testing SSH stopped: {said}", severity="error", timeout=10)
        elif group in ("fix", "deploy") and isinstance(error, LockHeld | UnfinishedRun):
            refused = f"refused, nothing was changed: {error}"
            held = session.of(FixState) if group == "fix" else session.of(DeployState)
            held.run_error = refused
            self.notify(refused, severity="error", timeout=10)
        elif group == "fix":
            session.of(FixState).run_error = (f"stopped: {error!r}\nNext: {again}; the journals are "
                                              f"kept: to roll the run back, {keys('fix', 'u')}.")
        elif group == "deploy-plan":
            session.of(DeployState).error = (
                f"planning the deploy failed: {error!r}",
                "press p to plan again; if it repeats, report it with `strixwizard capture` (the "
                "nodes' snapshots)")
        elif group == "deploy":
            session.of(DeployState).run_error = (f"stopped: {error!r}\nNext: {again}; the journals are "
                                                 f"kept: to roll the run back, {keys('deploy', 'u')}.")
        elif group == "tests":
            state = session.of(MeasurementState)
            state.error = (f"the tests stopped: {error!r}",
                           f"check the nodes ({refer('discover')}, r), then press r to run the tests again")
            state.outcome, state.seconds = "done", time.monotonic() - self._test_started
        else:
            self.notify(f"{group} stopped: {error!r}", severity="error", timeout=10)

    # -- asking from a worker: the services' `confirm`, answered in a modal -------------
    def confirm_in_modal(self, question: Question) -> bool:
        """Called from a worker thread: show the question, wait (bounded) for the answer."""
        answer: list[bool] = []
        answered = threading.Event()

        def done(yes: bool | None) -> None:
            answer.append(bool(yes))
            answered.set()

        text = f"{question.detail}" if question.detail else question.text
        worker = get_current_worker()
        run = (self.session.of(FixState) if worker.group == "fix"
               else self.session.of(DeployState) if worker.group == "deploy" else None)
        if run is not None:  # its step says "waiting for your answer", not "running", drawn
            run.asking = True  # before the dialog covers it (then the step is not the screen)
            self.call_from_thread(self.screen_changed)
        self.call_from_thread(self.push_screen, ConfirmationModal(
            question.title, text, yes=question.yes, no="Cancel (n)"), done)
        deadline = time.monotonic() + ANSWER_WAIT_S
        try:
            while not answered.wait(0.1):
                if worker.is_cancelled or time.monotonic() > deadline:
                    return False
            return answer[0]
        finally:
            if run is not None:
                run.asking = False

    # -- discovery -------------------------------------------------------------
    def ensure_discovery(self) -> None:
        state = self.session.of(DiscoverState)
        if (self.session.site is not None and state.discovery is None and not self.busy("discover")
                and state.error is None):
            self.start_discovery()

    def on_start_discovery(self, message: m.StartDiscovery) -> None:
        self.start_discovery()

    def start_discovery(self) -> None:
        session = self.session
        if session.source is None or session.site is None:
            self.notify("open or create a site first", severity="warning")
            return
        self.workers.cancel_group(self, "discover")
        self._cancel_tests()
        state = session.of(DiscoverState)
        run = state.run + 1
        state.reset()
        state.run = run
        session.forget_after("discover")
        state.progress = {spec.name: NodeStatus("waiting", "waiting") for spec in session.site.nodes}
        self._discover(run, session.source)
        self.screen_changed()

    def on_cancel_discovery(self, message: m.CancelDiscovery) -> None:
        if not self.busy("discover"):
            return
        self.workers.cancel_group(self, "discover")
        state = self.session.of(DiscoverState)
        state.run += 1  # late messages of the abandoned run are ignored
        state.error = (
            "discovery cancelled",
            "press r to discover again; SSH collections already started end on their own "
            "within the site's ssh.deadline",
        )
        self.screen_changed()

    @work(thread=True, exclusive=True, group="discover", exit_on_error=False)
    def _discover(self, run: int, source: SiteSource) -> None:
        def progress(event: NodeEvent) -> None:
            self.post_message(m.NodeProgress(run, event.node, event.event, event.text))

        discovery = self.services.discover(source, progress)
        ports = all_ports(discovery.nodes)  # read off the UI thread
        if not get_current_worker().is_cancelled:
            self.post_message(m.DiscoveryDone(run, discovery, ports))

    def on_node_progress(self, message: m.NodeProgress) -> None:
        state = self.session.of(DiscoverState)
        if message.run != state.run:
            return
        state.progress[message.node] = NodeStatus(message.event, for_the_wizard(message.text))
        self.screen_changed()

    def on_discovery_done(self, message: m.DiscoveryDone) -> None:
        session = self.session
        state = session.of(DiscoverState)
        if message.run != state.run:
            return
        state.discovery, state.ports = message.discovery, message.ports
        session.site = message.discovery.site
        for node in message.discovery.nodes:
            report = node.report
            current = state.progress.get(report.name)
            if not report.reachable:
                state.progress[report.name] = NodeStatus("failed",
                                                         for_the_wizard(report.error or "unreachable"))
            elif current is None or current.event != "done":
                state.progress[report.name] = NodeStatus("done", report.source)
        self.screen_changed()

    # -- SSH test and host keys (Site step) --------------------------------------
    def on_test_ssh(self, message: m.TestSsh) -> None:
        self.test_ssh(message.names)

    def test_ssh(self, names: list[str], trust: list[UnknownHostKey] | None = None) -> None:
        session = self.session
        if session.site is None or not names:
            return
        ssh = session.of(SiteState).ssh
        for name in names:
            ssh[name] = NodeStatus("start", "connecting…")
        self._test_ssh(session.site, names, trust or [])
        self.screen_changed()

    @work(thread=True, group="ssh", exit_on_error=False)
    def _test_ssh(self, site: Site, names: list[str], trust: list[UnknownHostKey]) -> None:
        def progress(event: NodeEvent) -> None:
            self.call_from_thread(self._ssh_progress, event.node, event.event, event.text)

        trusted = {key.node: key.fingerprint for key in trust}
        nodes = self.services.reach(site, names, trusted, progress)
        self.post_message(m.SshTested(nodes, [key.node for key in trust] or None))

    def _ssh_progress(self, node: str, event: str, text: str) -> None:
        self.session.of(SiteState).ssh[node] = NodeStatus(event, for_the_wizard(text))
        self.screen_changed()

    def on_ssh_tested(self, message: m.SshTested) -> None:
        session = self.session
        ssh = session.of(SiteState).ssh
        for node in message.nodes:
            report = node.report
            if report.reachable:
                ssh[report.name] = NodeStatus("done", f"reached {report.address}")
            else:
                ssh[report.name] = NodeStatus("failed", for_the_wizard(report.error or "unreachable"))
        if message.trusted:
            self.notify(f"host key{'s' if len(message.trusted) > 1 else ''} of "
                        f"{', '.join(message.trusted)} trusted and saved to known_hosts")
        session.forget_after("site")  # the answers may have changed
        self.screen_changed()
        asked = set(self._key_queue) | set(message.trusted or ())
        for node in message.nodes:
            key = unknown_host_key(node.report.name, node.report.error)
            if key is not None and key.node not in asked:
                self._key_queue.append(key.node)
                self._keys[key.node] = key
        if not self._asking:
            self._ask_keys()

    def _ask_keys(self) -> None:
        """Every new host key waiting, in one dialog; each can be unchecked before trusting."""
        if not self._key_queue:
            self._asking = False
            return
        self._asking = True
        keys = [self._keys[node] for node in self._key_queue]
        self._key_queue = []
        site = self.session.site
        known_hosts = str(site.resolve(site.ssh.known_hosts)) if site else "known_hosts"
        modal = HostKeysModal(keys, known_hosts)

        def answered(yes: bool | None) -> None:
            chosen = modal.picked if yes else []
            for key in keys:
                if key not in chosen:
                    self.session.of(SiteState).ssh[key.node] = NodeStatus(
                        "failed", f"host key {key.fingerprint} not trusted; SSH to this node is refused")
            if chosen:
                self.test_ssh([key.node for key in chosen], trust=chosen)
            self.screen_changed()
            self._ask_keys()

        self.push_screen(modal, answered)

    # -- fix and deploy runs: apply and roll back, each asked first -----------------------
    def _say(self, group: RunGroup) -> Callable[[StepEvent], None]:
        def say(event: StepEvent) -> None:
            self.post_message(m.JobSaid(group, f"{event.node}: {event.message}"))

        return say

    def _run_state(self, group: RunGroup) -> FixState | DeployState:
        return self.session.of(FixState) if group == "fix" else self.session.of(DeployState)

    def on_job_said(self, message: m.JobSaid) -> None:
        self._run_state(message.group).log.append(message.line)
        self.screen_changed()

    def _start_run(self, group: RunGroup, action: RunAction,
                   job: Callable[[Callable[[StepEvent], None]], object]) -> None:
        """A fix or deploy run ("apply" or "rollback") in a worker of `group`: `job` asks first
        (`confirm_in_modal`), says its steps through the callback it is given (JobSaid), and what
        it returns comes back as JobDone(group, action, ...)."""
        self._run_state(group).begin()
        say = self._say(group)

        def run() -> None:
            self.post_message(m.JobDone(group, action, job(say)))

        self.run_worker(run, name=f"{group}-{action}", group=group, thread=True,
                        exit_on_error=False)
        self.screen_changed()

    def on_apply_fixes(self, message: m.ApplyFixes) -> None:
        discovery = self.session.of(DiscoverState).discovery
        if discovery is None or discovery.plan is None or self.busy("fix"):
            return
        self._start_run("fix", "apply",
                        lambda say: self.services.apply_fixes(discovery, self.confirm_in_modal, say))

    def on_roll_back_fixes(self, message: m.RollBackFixes) -> None:
        state = self.session.of(FixState)
        if state.applied is None or self.busy("fix"):
            return
        run_id = state.applied.report.run_id
        self._start_run("fix", "rollback", lambda say: rollback_outcome(
            self.services.roll_back_fixes(run_id, self.confirm_in_modal, say)))

    def on_job_done(self, message: m.JobDone) -> None:
        if message.group == "fix":
            fixed = self.session.of(FixState)
            if message.action == "apply":
                fixed.applied, fixed.rolled_back = cast(Applied, message.result), None
                fixed.applied_on = self.session.of(DiscoverState).run
            else:
                fixed.rolled_back, fixed.applied = cast(str, message.result), None
        else:
            deployed = self.session.of(DeployState)
            deployed.resumed = None  # this session's run is what the nodes have now
            if message.action == "apply":
                deployed.deployed, deployed.rolled_back = cast(Deployed, message.result), None
            else:
                deployed.rolled_back, deployed.deployed = cast(str, message.result), None
        self.screen_changed()

    # -- deploy (plan, apply + smoke test, rollback) --------------------------------------
    def can_apply_deploy(self) -> bool:
        state = self.session.of(DeployState)
        preview = state.preview
        return (preview is not None and preview.plan is not None and not preview.plan_only
                and not self.busy("deploy") and self.session.of(DiscoverState).discovery is not None)

    def can_roll_back_deploy(self) -> bool:
        return self.session.of(DeployState).rollback_run() is not None and not self.busy("deploy")

    def on_plan_deploy(self, message: m.PlanDeploy) -> None:
        state = self.session.of(DeployState)
        discovery = self.session.of(DiscoverState).discovery
        if discovery is None or self.busy("deploy") or self.busy("deploy-plan"):
            return
        if not message.again and (state.preview is not None or state.error is not None):
            return
        state.error = None
        self.services.deploy_choice = state.choice
        self._plan_deploy(self.session.of(DiscoverState).run, discovery)
        self.screen_changed()

    @work(thread=True, exclusive=True, group="deploy-plan", exit_on_error=False)
    def _plan_deploy(self, run: int, discovery: Diagnosis) -> None:
        self.post_message(m.DeployPlanned(run, self.services.plan_deploy(discovery)))

    def on_deploy_planned(self, message: m.DeployPlanned) -> None:
        if message.run != self.session.of(DiscoverState).run:
            return
        self.session.of(DeployState).preview = message.preview
        self.screen_changed()

    def on_apply_deploy(self, message: m.ApplyDeploy) -> None:
        state = self.session.of(DeployState)
        site, preview = self.session.site, state.preview
        if not self.can_apply_deploy() or preview is None or site is None:
            return
        self._start_run("deploy", "apply", lambda say: self.services.apply_deploy(
            site, preview, self.confirm_in_modal, say))

    def on_roll_back_deploy(self, message: m.RollBackDeploy) -> None:
        run_id = self.session.of(DeployState).rollback_run()
        if not self.can_roll_back_deploy() or run_id is None:
            return
        self._start_run("deploy", "rollback", lambda say: rollback_outcome(
            self.services.roll_back_deploy(run_id, self.confirm_in_modal, say)))

    # -- live tests -----------------------------------------------------------------
    def on_run_tests(self, message: m.RunTests) -> None:
        session = self.session
        discovery = session.of(DiscoverState).discovery
        if discovery is None or self.busy("tests"):
            return
        state = session.of(MeasurementState)
        state.run += 1
        state.begin(planned_pairs(discovery.site), [spec.name for spec in discovery.site.nodes])
        self.test_cancel = Cancel()
        self._test_started = time.monotonic()
        self._run_tests(state.run, discovery, session.is_demo, self.test_cancel)
        self.screen_changed()

    @work(thread=True, exclusive=True, group="tests", exit_on_error=False)
    def _run_tests(self, run: int, discovery: Diagnosis, demo: bool, cancel: Cancel) -> None:
        started_at = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        stream = self.services.live_tests(discovery, demo, cancel)
        results = []
        try:
            for measurement in stream:
                if cancel.cancelled:
                    break
                results.append(measurement)
                self.post_message(m.MeasurementArrived(run, measurement))
        finally:
            close = getattr(stream, "close", None)
            if callable(close):
                close()  # the runner stops every program still running
        history = None
        if not cancel.cancelled:
            history = self.services.store_tests(discovery.site.name, started_at, results, demo)
        self.post_message(m.TestsEnded(run, history))

    def on_run_soak(self, message: m.RunSoak) -> None:
        session = self.session
        discovery = session.of(DiscoverState).discovery
        if discovery is None or self.busy("tests") or not message.pairs:
            return
        state = session.of(MeasurementState)
        state.soak_run += 1
        state.soak = SoakRun(list(message.pairs), message.seconds)
        self.test_cancel = Cancel()
        self._run_soak(state.soak_run, discovery, session.is_demo, list(message.pairs),
                       message.seconds, self.test_cancel)
        self.screen_changed()

    @work(thread=True, exclusive=True, group="tests", exit_on_error=False)
    def _run_soak(self, run: int, discovery: Diagnosis, demo: bool, pairs: list[tuple[str, str]],
                  seconds: float, cancel: Cancel) -> None:
        def heard(progress: SoakProgress) -> None:
            self.post_message(m.SoakProgressed(run, progress))

        started_at = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        stream = self.services.soak(discovery, demo, pairs, seconds, cancel,
                                    heard)
        results: list[Measurement] = []
        line: str | None = None
        recorded: dict[str, object] | None = None
        ended = False
        try:
            for measurement in stream:
                if cancel.cancelled:
                    break
                results.append(measurement)
                self.post_message(m.SoakMeasured(run, measurement))
            ended = True
        finally:
            close = getattr(stream, "close", None)
            if callable(close):
                close()  # the runner stops every program still running
            if ended and results and not cancel.cancelled:  # stored as `test soak` stores it
                line, recorded = self.services.store_soak(discovery.site.name, started_at, results,
                                                          demo)
            self.post_message(m.SoakEnded(run, line, recorded))

    def _soak_of(self, run: int) -> SoakRun | None:
        state = self.session.of(MeasurementState)
        return state.soak if run == state.soak_run and state.soak is not None else None

    def on_soak_progressed(self, message: m.SoakProgressed) -> None:
        soak = self._soak_of(message.run)
        if soak is not None and soak.outcome is None and not self.test_cancel.cancelled:
            soak.progress[message.progress.pair] = message.progress
            self.screen_changed()

    def on_soak_measured(self, message: m.SoakMeasured) -> None:
        soak = self._soak_of(message.run)
        if soak is not None and soak.outcome is None and not self.test_cancel.cancelled:
            soak.results.append(message.measurement)
            self.screen_changed()

    def on_soak_ended(self, message: m.SoakEnded) -> None:
        soak = self._soak_of(message.run)
        if soak is not None:
            soak.outcome = "cancelled" if self.test_cancel.cancelled else "done"
            soak.history, soak.recorded = message.history, message.recorded
            self.screen_changed()

    def on_cancel_tests(self, message: m.CancelTests) -> None:
        if self.busy("tests"):
            self._cancel_tests()
            self.screen_changed()

    def _cancel_tests(self) -> None:
        self.test_cancel.cancel()  # ends the programs at once; the stream then ends

    def on_measurement_arrived(self, message: m.MeasurementArrived) -> None:
        state = self.session.of(MeasurementState)
        if message.run != state.run or self.test_cancel.cancelled:
            return
        measurement = message.measurement
        state.results.append(measurement)
        points = state.spark.setdefault(panel_key(measurement), [])
        points.extend(spark_points(measurement))
        del points[:-MAX_SPARK]
        self.screen_changed()

    def on_tests_ended(self, message: m.TestsEnded) -> None:
        state = self.session.of(MeasurementState)
        if message.run != state.run:
            return
        state.seconds = time.monotonic() - self._test_started
        state.finish("cancelled" if self.test_cancel.cancelled else "done")
        state.history = message.history
        self.screen_changed()


def run(site_file: Path | None = None, demo: bool = False) -> int:
    app = WizardApp(site_file=site_file, demo=demo)
    app.run()
    return app.return_code or 0

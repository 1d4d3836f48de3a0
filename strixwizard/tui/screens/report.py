"""Step 7: the summary, saved as JSON (the doctor schema), Markdown and HTML."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Static

from strixwizard.decode.fabric import on_loopback
from strixwizard.files import display_path
from strixwizard.live.results import REPLAYED, verdicts
from strixwizard.model import Status
from strixwizard.present.report import soak_lines
from strixwizard.tui.export import save_report
from strixwizard.tui.extras import (
    APPLIED,
    content_fingerprint,
    deploy_document,
    reported_run,
    soak_document,
    tests_document,
)
from strixwizard.tui.fit import hang
from strixwizard.tui.hostkeys import for_the_wizard
from strixwizard.tui.messages import SaveProgress
from strixwizard.tui.screens.base import StepScreen
from strixwizard.tui.screens.common import needs_discovery
from strixwizard.tui.screens.deploy import DeployState
from strixwizard.tui.screens.discover import DiscoverState
from strixwizard.tui.screens.measure import MeasurementState
from strixwizard.tui.steps import keys, refer
from strixwizard.tui.text import outside
from strixwizard.tui.views import fix_groups, link_views, node_rows
from strixwizard.tui.widgets.hanging import Hanging
from strixwizard.tui.widgets.history import HistorySparklines
from strixwizard.tui.widgets.notice import Notice
from strixwizard.tui.widgets.status import badge, styled
from strixwizard.tui.workspace import StepState

NB = "  "


def _status_of(value: object) -> Status | None:
    """A status a saved document names (it may have been edited by hand), or None."""
    try:
        return Status(str(value))
    except ValueError:
        return None


@dataclass
class ReportState(StepState):
    save_error: str | None = None


class ReportScreen(StepScreen, step="report", state=ReportState):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("s", "save", "Save report")]

    def __init__(self) -> None:
        super().__init__()
        self.saved_for: tuple[object, ...] | None = None

    def on_resize(self, event: events.Resize) -> None:
        self.refresh_view()  # lines are wrapped to the width

    def compose_body(self) -> ComposeResult:
        yield Notice(id="report-status", title="Report")
        with Vertical(id="report-summary"):
            yield Static(id="report-verdict")
            yield Notice(id="report-files", title="Files")
            yield Static(id="report-body")
            yield HistorySparklines(id="report-history")

    def refresh_view(self) -> None:
        notice = self.query_one("#report-status", Notice)
        verdict = self.query_one("#report-verdict", Static)
        body = self.query_one("#report-body", Static)
        files = self.query_one("#report-files", Notice)
        if needs_discovery(self.wizard, notice):
            verdict.update("")
            body.update("")
            files.display = False
            return
        notice.display = False
        files.display = True
        discovery = self.session.of(DiscoverState).discovery
        assert discovery is not None
        report = discovery.report
        tests, deploy = self.session.of(MeasurementState), self.session.of(DeployState)
        soak = tests.soak
        key = (id(report), tests.run, len(tests.results), tests.outcome, tests.decode_model,
               tests.soak_run, soak.outcome if soak else None, len(soak.results) if soak else 0,
               id(deploy.preview), id(deploy.deployed), deploy.rolled_back)
        if self.saved_for != key:
            self.saved_for = key
            self._save(quiet=True)
        counts = report.summary
        status = report.status
        verdict.update(Content.assemble(
            styled(f" {status.value.upper()} ", status).stylize("reverse"),
            outside(f"  site {report.site}: "),
            styled(f"{counts['fail']} failed", Status.FAIL if counts["fail"] else Status.PASS), ", ",
            styled(f"{counts['warn']} warnings", Status.WARN if counts["warn"] else Status.PASS),
            outside(f", {counts['pass']} passed, {counts['skip']} skipped"),
        ))
        width = max(40, self.size.width - 4)  # the body's padding and scrollbar
        after_badge = len(NB) + 8  # "  ✗ FAIL  " then the text

        def item(text: str, status: Status | None = None) -> Content:
            """A line of its own; wrapped, its rest stays under its first word."""
            def look(part: str) -> Content:
                return outside(part) if status is None else styled(part, status)

            first, *more = hang(text, width, len(NB), len(NB) + 2)
            return Content("\n").join([Content.assemble(NB, look(first)),
                                       *(Content.assemble(NB, "  ", look(m)) for m in more)])

        def badged(status: Status, text: str) -> Content:
            first, *more = hang(text, width, after_badge, after_badge)
            return Content("\n").join([Content.assemble(NB, badge(status), " ", outside(first)),
                                       *(Content.assemble(" " * after_badge, outside(m)) for m in more)])

        lines: list[Content] = [outside("Nodes", "bold $text-accent")]
        for row in node_rows(report):
            if row.state == "ok":
                lines.append(item(f"{row.name}: {row.sku} · {row.gfx} · kernel {row.kernel} · {row.memory}"))
            else:
                lines.append(item(f"{row.name}: unreachable: {for_the_wizard(row.error or '')}", Status.FAIL))
        lines.append(outside("Links", "bold $text-accent"))
        for link in link_views(report):
            lines.append(badged(link.status, f"{link.display} ({link.transport})"))
        lines.append(outside("Problems", "bold $text-accent"))
        for group in fix_groups(report):
            worst = max(group.results, key=lambda r: r.status.rank).status
            lines.append(badged(worst, f"{group.title}: {', '.join(r.id for r in group.results)}"))
        lines += self._steps_lines()
        body.update(Hanging(Content("\n").join(lines)))
        self.query_one(HistorySparklines).show(report.site, self.session.is_demo)
        self._show_files()

    def _steps_lines(self) -> list[Content]:
        """The deploy status and the live tests' verdicts."""
        tests = self.session.of(MeasurementState)
        results, _, outcome, note = reported_run(tests.results, tests.nodes, tests.outcome,
                                                 tests.complete)
        sections = self._sections()
        lines: list[Content] = [outside("Deploy", "bold $text-accent")]
        deploy = sections.get("deploy")
        if deploy is None:
            lines.append(outside(f"{NB}not planned yet ({refer('deploy')})"))
        else:
            reason = f": {deploy['reason']}" if deploy.get("reason") else ""
            lines.append(outside(f"{NB}{deploy['status']}{reason}"))
        lines.append(outside("Live tests", "bold $text-accent"))
        if not results:
            lines.append(outside(f"{NB}not run yet ({keys('test', 'r')})"))
        elif outcome != "done":
            lines.append(styled(f"{NB}no verdict: the run was {outcome or 'still running'} before "
                                f"it finished (to run the tests again: {keys('test', 'r')})",
                                Status.ERROR))
            return lines + self._soak_lines(sections.get("soak"))
        if note:
            lines.append(outside(f"{NB}{note}"))
        for m in verdicts(results):
            assert m.status is not None
            # a result without one figure (the fabric counters) says what it found instead
            figure = f"{m.figure:.2f} {m.unit}" if m.figure is not None else m.summary
            source = (" (replayed recording)" if m.source == REPLAYED
                      else " (this machine's loopback, not a network: does not compare with RDMA)"
                      if on_loopback(m) else "")
            what = f"{m.transport} {m.kind}" if m.kind == "counters" else f"{m.transport.upper()} {m.kind}"
            lines.append(Content.assemble(NB, badge(m.status), outside(
                f" {m.pair_label} {what}: {figure}{source}")))
        return lines + self._soak_lines(sections.get("soak"))

    @staticmethod
    def _soak_lines(document: dict[str, Any] | None) -> list[Content]:
        """The Test step's last soak: its verdict, each pair and direction, the first fault."""
        lines: list[Content] = [outside("Soak", "bold $text-accent")]
        if document is None:
            return [*lines, outside(f"{NB}not run yet ({keys('test', 's')})")]
        if document.get("outcome") == "running":
            return [*lines, outside(f"{NB}still running: its verdict comes when it ends")]
        if document.get("outcome") != "done":
            return [*lines, styled(f"{NB}no verdict: the soak was {document.get('outcome')} before "
                                   f"it finished (to soak again: {keys('test', 's')})", Status.ERROR)]
        status = _status_of(document.get("status")) or Status.ERROR
        lines.append(Content.assemble(NB, badge(status), outside(
            f" {len(document.get('pairs', []))} pair(s), {document.get('seconds', 0):g} s each at "
            "most, every byte checked both ways")))
        for line_status, text in soak_lines(document):
            if line_status is None:
                lines.append(outside(f"{NB}    {text}"))
            else:
                badge_of = _status_of(line_status)
                lines.append(Content.assemble(NB, badge(badge_of) if badge_of else outside("  ref  "),
                                              outside(f" {text}")))
        history = document.get("history")
        if isinstance(history, dict) and history.get("path"):
            lines.append(outside(f"{NB}stored in the test history {display_path(history['path'])}"))
        return lines

    def _sections(self) -> dict[str, Any]:
        session = self.session
        discovery = session.of(DiscoverState).discovery
        if discovery is None:
            return {}
        tests, deploy = session.of(MeasurementState), session.of(DeployState)
        results, nodes, outcome, note = reported_run(tests.results, tests.nodes, tests.outcome,
                                                     tests.complete)
        document = tests.resumed_document  # an earlier session's, as it saved it
        if document is None:
            document = tests_document(discovery.site.name, discovery.site.thresholds, results,
                                      session.is_demo, nodes, outcome, tests.decode_model)
            if document is not None and note:
                document["note"] = note
        soak = tests.soak
        soaked = None
        if soak is not None:
            soaked = soak.resumed_document or soak_document(
                discovery.site.name, discovery.site.thresholds, soak.pairs, soak.seconds,
                soak.results, soak.outcome, session.is_demo, soak.recorded)
        return {"live_tests": document, "soak": soaked, "deploy": self._deploy_section(deploy)}

    @staticmethod
    def _deploy_section(deploy: DeployState) -> dict[str, Any] | None:
        """This session's deploy document; an earlier session's while this one has only
        planned (or not even that) and the earlier one changed the nodes."""
        current = deploy_document(deploy.preview, deploy.deployed, deploy.rolled_back, deploy.error)
        resumed = deploy.resumed
        if resumed is None or deploy.deployed is not None or deploy.rolled_back or deploy.error:
            return current
        if current is None or resumed.get("status") in APPLIED:
            return resumed
        return current

    def _show_files(self) -> None:
        files = self.query_one("#report-files", Notice)
        session = self.session
        save_error = session.of(ReportState).save_error
        if save_error:
            files.say(f"{save_error}\nNext: make the folder writable, then press s.", "error",
                      title="Not saved")
        elif session.saved:
            paths = "\n".join(f"{fmt:>4}  {display_path(path)}" for fmt, path in session.saved.items())
            files.say(f"{paths}\nThe JSON follows the `doctor --json` schema (live tests, soak and "
                      "deploy as the optional fields live_tests, soak, deploy).  s: save again",
                      "success", title="Saved")
        else:
            files.say("Not saved yet: press s.", "info", title="Files")

    def _save(self, quiet: bool = False) -> None:
        session = self.session
        state = session.of(ReportState)
        discovery = session.of(DiscoverState).discovery
        if discovery is None:
            return
        extra = {"source": session.describe_source()}
        sections = self._sections()
        present = {k: v for k, v in sections.items() if v is not None}
        fingerprint = content_fingerprint({**discovery.report.to_json(), **present, "extra": extra})
        if (quiet and fingerprint == session.state.report_fingerprint and session.saved
                and all(path.exists() for path in session.saved.values())):
            return  # nothing new since these files were saved: they stay as they are
        try:
            session.saved = save_report(discovery.report, session.out_dir, extra, sections)
            session.state.report_fingerprint = fingerprint
            state.save_error = None
        except OSError as error:
            session.saved = {}
            state.save_error = f"cannot write the report to {session.out_dir}: {error.strerror or error}"
        self.post_message(SaveProgress())
        if not quiet:
            self.notify("report saved" if not state.save_error else state.save_error,
                        severity="information" if not state.save_error else "error")
            self._show_files()

    def action_save(self) -> None:
        self._save()

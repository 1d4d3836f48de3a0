"""Pilot tests: walk the demo from Site to Report with the keyboard, resume, cancel, failures."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable, Input, Sparkline, Static

from strixwizard.model import Status
from strixwizard.services.common import OnNode
from strixwizard.services.discover import Diagnosis, SiteSource
from strixwizard.services.facade import Services
from strixwizard.tui.app import WizardApp
from strixwizard.tui.screens.discover import DiscoverState
from strixwizard.tui.screens.fix import FixState
from strixwizard.tui.screens.links import LinkCard
from strixwizard.tui.screens.site import SiteState
from strixwizard.tui.steps import BY_ID, key_of
from strixwizard.tui.widgets.confirm import ConfirmationModal
from strixwizard.tui.widgets.notice import Notice
from tests.support.wizard import (
    SIZE,
    cells,
    discovery_of,
    live_state,
    make_app,
    next_to,
    notice_text,
    panel,
    replayed_ssh_app,
    settle,
    settle_until,
    sync,
    wait_for_modal,
    wait_for_tests,
)


@pytest.fixture(autouse=True)
def state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(home))
    return home


async def run_the_tests(app: WizardApp, pilot: Pilot[int]) -> None:
    """r on the Test step: the panels fill from the stream and reach a verdict."""
    assert "r runs the live tests" in notice_text(app, "#test-status")
    await pilot.press("r")
    await pilot.pause()  # the demo's recorded run may be over already: busy is the palette test's
    await wait_for_tests(app, pilot)
    assert live_state(app).outcome == "done" and live_state(app).error is None
    rdma = panel(app, "node-a-node-b:latency:rdma")
    tcp = panel(app, "node-a-node-b:latency:tcp")
    assert rdma.view.status is Status.PASS and "PASS" in str(rdma.query_one(".verdict").render())
    assert "5.19 µs" in str(rdma.query_one(".verdict").render())
    # the TCP baseline is the recording's too (never this machine's loopback beside it)
    assert rdma.border_subtitle == "replayed recording" and tcp.border_subtitle == "replayed recording"
    assert tcp.view.status is Status.PASS and "34.00 µs" in str(tcp.query_one(".verdict").render())
    assert "≤ 150 µs one-way" in str(tcp.query_one(".details").render())
    # the recording: 51% of the link rate, as much as its PCIe 4.0 x4 slot allows
    assert panel(app, "node-a-node-b:bandwidth:rdma").view.status is Status.WARN
    assert panel(app, "rccl").view.status is Status.PASS
    counters = panel(app, "counters")  # read around the run: the recording's deltas, judged
    assert counters.view.status is Status.WARN and counters.border_title == "Fabric counters"
    assert "ip4InDiscards 3 -> 415 (+412, discard)" in str(counters.query_one(".details").render())
    assert len(rdma.query_one(Sparkline).data or []) >= 5
    ratio = str(app.screen.query_one("#ratio-node-a-node-b", Static).render())
    # RDMA beats TCP on the recorded E810 pair, both figures the recording's, in plain words
    assert "RDMA 5.23 µs vs TCP 34.00 µs one-way" in ratio and "RDMA is 6.5x faster than TCP" in ratio
    assert "loopback" not in ratio and "0." not in ratio.split("faster")[0]


@pytest.mark.interpreter  # one Pilot walk on each newer Python
@sync
async def test_walk_the_demo_from_site_to_report(state_home: Path) -> None:
    app = make_app(demo=True)
    async with app.run_test(size=SIZE) as pilot:
        assert app.screen.id == "step-site"
        rows = cells(app.screen.query_one("#site-nodes", DataTable))
        assert [r[0] for r in rows] == ["node-a", "node-b"]

        await next_to(app, pilot, "discover")
        nodes = cells(app.screen.query_one("#nodes", DataTable))
        assert [r[0] for r in nodes] == ["node-a", "node-b"]
        assert all("gfx1151" in r for r in nodes)
        ports = cells(app.screen.query_one("#ports", DataTable))
        assert any("thunderbolt0" in r for r in ports)

        await next_to(app, pilot, "links")
        cards = list(app.screen.query(LinkCard))
        report = (discovery_of(app).report if discovery_of(app) else None)
        assert report is not None and len(cards) == len(report.links)
        thunderbolt = [c for c in cards if "thunderbolt-net" in str(c.render())]
        assert all(c.has_class("warning") for c in thunderbolt)
        assert all("TCP only" in str(c.render()) for c in thunderbolt)

        await next_to(app, pilot, "fix")
        problems = [r for r in report.checks if r.status in (Status.FAIL, Status.WARN, Status.ERROR)]
        assert ("problems" in notice_text(app, "#fix-status")) == bool(problems)

        await next_to(app, pilot, "deploy")
        assert "PLAN ONLY" in notice_text(app, "#deploy-status")
        assert "applying needs real nodes" in notice_text(app, "#deploy-status")
        env = str(app.screen.query_one("#deploy-env").render())
        assert "NCCL_IB_GID_INDEX=1" in env
        assert "/sys/class/infiniband/rocep194s0/ports/1/gid_attrs/types/1 = RoCE v2" in env
        await pilot.press("a")  # apply is refused on snapshots: no modal
        await pilot.pause()
        assert not isinstance(app.screen, ConfirmationModal)

        await next_to(app, pilot, "test")
        await run_the_tests(app, pilot)

        await next_to(app, pilot, "report")
        saved = app.session.saved
        assert set(saved) == {"json", "md", "html"}
        document = json.loads(saved["json"].read_text())
        live, deploy = document.pop("live_tests"), document.pop("deploy")
        assert document == json.loads(json.dumps(report.to_json()))
        assert deploy["status"] == "plan-only" and deploy["variables"]["node-a"]["NCCL_IB_GID_INDEX"] == "1"
        # every figure of the demo's Test step is the recording's (nothing measured on this machine)
        assert live["demo"] is True and {r["source"] for r in live["results"]} == {"replayed recording"}
        assert "## Live tests" in saved["md"].read_text() and "## Deploy" in saved["md"].read_text()
        assert saved["json"].parent == state_home / "strixwizard" / "demo"
        assert "# strixwizard report: site demo" in saved["md"].read_text()
        assert "<html" in saved["html"].read_text()
        # the Test step's "what this fabric buys you" is in the document, and charted in the HTML
        assert {p["transport"] for p in live["decode"]["predictions"]} >= {"rdma"}
        assert "tok/s" in saved["html"].read_text()
        assert "failed" in str(app.screen.query_one("#report-verdict").render())

        await pilot.press("b")
        await pilot.pause()
        assert app.screen.id == "step-test"
        await pilot.press(key_of("site"))
        await pilot.pause()
        assert app.screen.id == "step-site"


@sync
async def test_report_json_validates_against_the_doctor_schema(report_schema: dict[str, object]) -> None:
    from tests.support.cli import validate_report

    app = make_app(demo=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press(key_of("test"))
        await settle(app, pilot)
        await pilot.press("r")
        await wait_for_tests(app, pilot)
        await pilot.press(key_of("deploy"))
        await settle(app, pilot)
        await pilot.press(key_of("report"))
        await settle(app, pilot)
        await pilot.pause()
        assert "live_tests" in json.loads(app.session.saved["json"].read_text())
        validate_report(json.loads(app.session.saved["json"].read_text()), report_schema)


@sync
async def test_reopening_resumes_at_the_same_step(state_home: Path) -> None:
    app = make_app(demo=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press(key_of("links"))
        await settle(app, pilot)
        assert app.screen.id == "step-links"
    saved = json.loads((state_home / "strixwizard" / "demo-state.json").read_text())
    assert saved["step"] == "links"

    again = make_app(demo=True)
    async with again.run_test(size=SIZE) as pilot:
        await settle(again, pilot)
        assert again.screen.id == "step-links"
        assert again.session.of(DiscoverState).discovery is not None  # discovered again on resume
        assert again.screen.query(LinkCard)


@sync
async def test_site_file_progress_is_saved_beside_it(tmp_path: Path) -> None:
    from strixwizard.tui.saved import STATE_FILE_NAME

    site = tmp_path / "lab" / "site.yaml"
    site.parent.mkdir()
    demo = Path(__file__).resolve().parent.parent / "strixwizard" / "demo"
    site.write_text(
        "site: copy\nnodes:\n"
        f"  - name: node-a\n    snapshot: {demo / 'snapshots' / 'node-a.tar.gz'}\n"
        f"  - name: node-b\n    snapshot: {demo / 'snapshots' / 'node-b.tar.gz'}\n"
    )
    app = make_app(site_file=site)
    async with app.run_test(size=SIZE) as pilot:
        await next_to(app, pilot, "discover")
    state = json.loads((site.parent / STATE_FILE_NAME).read_text())
    assert state["step"] == "discover"
    assert state["site_file"] == str(site.resolve())


@sync
async def test_a_bad_site_file_shows_the_reason_and_the_next_step(tmp_path: Path) -> None:
    site = tmp_path / "site.yaml"
    site.write_text("site: broken\nnodes:\n  - name: a\n    hots: x\n")
    app = make_app(site_file=site)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        text = notice_text(app, "#site-info")
        assert f"{site}:4" in text and "unknown key 'hots'" in text
        assert "Next:" in text
        await pilot.press("n")  # cannot leave Site without a site
        await pilot.pause()
        assert app.screen.id == "step-site"


@sync
async def test_create_a_site_file_from_the_form(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no ./site.yaml: the wizard offers to create one
    out = tmp_path / "new" / "site.yaml"
    out.parent.mkdir()
    app = make_app()
    assert app.session.source is None
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        assert screen.query_one("#create").display
        screen.query_one("#create-path", Input).value = str(out)
        screen.query_one("#create-name", Input).value = "rack1"
        node = screen.query_one("#create-node", Input)
        node.focus()
        await pilot.press(*"node-a=root@10.99.9.10", "enter")
        await pilot.pause()
        assert [r[0] for r in cells(screen.query_one("#site-nodes", DataTable))] == ["node-a"]
        await pilot.click("#write")
        await pilot.pause()
        assert out.exists()
        assert app.session.site is not None and app.session.site.name == "rack1"
        assert not screen.query_one("#create").display


@sync
async def test_unknown_host_key_is_shown_and_needs_confirmation() -> None:
    from strixwizard.discovery import DiscoveredNode
    from strixwizard.model import HostReport
    from strixwizard.tui.messages import SshTested

    app = make_app(demo=True)
    async with app.run_test(size=SIZE) as pilot:
        error = ("unknown host key for 10.99.2.10: ssh-ed25519 SHA256:AbCdEf0123456789+/xyz; if that is "
                 "the node's key, trust it with --trust-new-hosts (it is added to known_hosts), or add it "
                 "yourself: ssh-keyscan -p 22 10.99.2.10 >> known_hosts")
        node = DiscoveredNode(HostReport("node-x", "root@10.99.2.10", "ssh", reachable=False,
                                         error=error), None)
        app.post_message(SshTested([node], None))
        await pilot.pause()
        modal = app.screen
        assert isinstance(modal, ConfirmationModal)
        assert "SHA256:AbCdEf0123456789+/xyz" in modal.question and "ssh-ed25519" in modal.question
        assert "--trust-new-hosts" not in modal.question
        shown = app.session.of(SiteState).ssh["node-x"].text  # the wizard's own action, not a flag
        assert "--trust-new-hosts" not in shown and "trust or refuse (press 1, then s)" in shown
        await pilot.press("n")
        await pilot.pause()
        assert not isinstance(app.screen, ConfirmationModal)
        assert "not trusted" in app.session.of(SiteState).ssh["node-x"].text


@sync
async def test_cancel_discovery_keeps_the_screen_responsive() -> None:
    import threading

    release = threading.Event()

    class Slow(Services):
        def discover(self, source: SiteSource, on_node: OnNode | None) -> Diagnosis:
            release.wait(10)
            return super().discover(source, on_node)

    app = make_app(Slow(demo_seconds=0.3), demo=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press(key_of("discover"))
        await pilot.pause()
        assert app.busy("discover")
        assert "Probing" in notice_text(app, "#discover-status")
        await pilot.press("escape")
        await pilot.pause()
        assert not app.busy("discover")
        assert "cancelled" in notice_text(app, "#discover-status")
        release.set()
        await settle(app, pilot)
        assert discovery_of(app) is None  # the abandoned run's result is ignored
        await pilot.press("r")
        await settle(app, pilot)
        assert discovery_of(app) is not None


@sync
async def test_an_engine_crash_is_a_reason_not_a_traceback() -> None:
    class Broken(Services):
        def discover(self, source: SiteSource, on_node: OnNode | None) -> Diagnosis:
            raise RuntimeError("boom")

    app = make_app(Broken(), demo=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press(key_of("discover"))
        await settle(app, pilot)
        text = notice_text(app, "#discover-status")
        assert "internal error: RuntimeError('boom')" in text and "Next:" in text
        await pilot.press(key_of("links"))
        await pilot.pause()
        assert "No discovery" in str(app.screen.query_one("#links-status", Notice).border_title)


@sync
async def test_command_palette_offers_the_steps() -> None:
    app = make_app(demo=True)
    async with app.run_test(size=SIZE) as pilot:
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert f"Step {BY_ID['links'].number}: Links" in titles and "Discover again" in titles
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*f"Step {BY_ID['report'].number}", "enter")
        await settle(app, pilot)
        assert app.screen.id == "step-report"


@sync
async def test_light_theme_and_a_large_terminal() -> None:
    app = make_app(demo=True)
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.press("ctrl+t")
        await pilot.press(key_of("discover"))
        await settle(app, pilot)
        assert app.theme == "textual-light"
        assert app.screen.query_one("#nodes", DataTable).row_count == 2


@sync
async def test_fix_on_the_demo_is_a_dry_run_that_verifies_and_rolls_back(state_home: Path) -> None:
    app = make_app(demo=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press(key_of("fix"))
        await settle(app, pilot)
        discovery = discovery_of(app)
        assert discovery is not None and discovery.plan is not None
        if not discovery.plan.changes:
            pytest.skip("the demo plans no change")
        assert "DRY RUN" in notice_text(app, "#fix-status")
        await pilot.press("a")
        await wait_for_modal(app, pilot)
        await pilot.press("n")  # no: nothing is applied
        await settle(app, pilot)
        assert app.session.of(FixState).applied is None and not isinstance(app.screen, ConfirmationModal)
        await pilot.press("a")
        modal = await wait_for_modal(app, pilot)
        assert "COPIES of the snapshots" in modal.question
        await pilot.press("y")
        await settle(app, pilot)
        applied = app.session.of(FixState).applied
        assert applied is not None and applied.report.dry_run
        assert applied.dry_run_copies is not None
        assert applied.dry_run_copies.is_relative_to(state_home)
        assert applied.report.verification
        assert "DRY RUN" in notice_text(app, "#fix-run")
        await pilot.press("u")  # the rollback asks first, like the apply
        modal = await wait_for_modal(app, pilot)
        assert modal.title_text == "Roll back" and applied.report.run_id in modal.question
        await pilot.press("n")  # no: nothing is rolled back, the run stays
        await settle(app, pilot)
        assert app.session.of(FixState).applied is applied
        assert app.session.of(FixState).rolled_back is None
        await pilot.press("u")
        await wait_for_modal(app, pilot)
        await pilot.press("y")
        await settle(app, pilot)
        rolled_back = app.session.of(FixState).rolled_back
        assert rolled_back is not None and rolled_back.startswith("rolled back")


@sync
async def test_cancel_the_tests_closes_the_stream() -> None:
    from collections.abc import Iterator

    from strixwizard.live.demo import demo_rdma_latency
    from strixwizard.live.results import Measurement
    from strixwizard.services.measure import Cancel

    closed: list[bool] = []

    class Stalling(Services):
        def live_tests(self, found: Diagnosis, demo: bool, cancel: Cancel
                       ) -> Iterator[Measurement]:
            site = found.site
            try:
                yield demo_rdma_latency(site.thresholds)
                cancel.wait(10)  # a measurement in flight, until its programs are stopped
                yield demo_rdma_latency(site.thresholds)
                yield demo_rdma_latency(site.thresholds)
            finally:
                closed.append(True)

    app = make_app(Stalling(), demo=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press(key_of("test"))
        await settle(app, pilot)
        await pilot.press("r")
        for _ in range(50):
            await pilot.pause(0.05)
            if live_state(app).results:
                break
        assert app.busy("tests") and len(live_state(app).results) == 1
        assert panel(app, "node-a-node-b:latency:rdma").view.status is Status.PASS
        await pilot.press("escape")
        await wait_for_tests(app, pilot, 15)
        assert closed == [True]
        assert live_state(app).outcome == "cancelled"
        assert len(live_state(app).results) == 1  # what came after the cancel is not shown
        assert "Tests cancelled" in str(app.screen.query_one("#test-status", Notice).border_title)


@sync
async def test_a_cancelled_test_run_has_no_verdict_and_the_last_complete_run_is_reported() -> None:
    from collections.abc import Iterator

    from strixwizard.live.demo import demo_rdma_latency
    from strixwizard.live.results import Measurement
    from strixwizard.services.measure import Cancel

    calls: list[int] = []

    class SecondRunStalls(Services):
        def live_tests(self, found: Diagnosis, demo: bool, cancel: Cancel
                       ) -> Iterator[Measurement]:
            site = found.site
            calls.append(1)
            yield demo_rdma_latency(site.thresholds)
            if len(calls) > 1:
                cancel.wait(10)

    async def cancelled_run(app: WizardApp, pilot: Pilot[int]) -> None:
        await pilot.press("r")
        for _ in range(50):
            await pilot.pause(0.05)
            if live_state(app).results:
                break
        await pilot.press("escape")
        await wait_for_tests(app, pilot, 15)
        assert live_state(app).outcome == "cancelled"

    async def live_section(app: WizardApp, pilot: Pilot[int]) -> tuple[dict[str, Any], str]:
        await pilot.press(key_of("report"))
        await settle(app, pilot)
        await pilot.pause()
        body = str(app.screen.query_one("#report-body", Static).render())
        return json.loads(app.session.saved["json"].read_text())["live_tests"], body

    # only a cancelled run: no verdict, never PASS
    calls.append(1)  # the first call of this app already counts as a second run: it stalls
    app = make_app(SecondRunStalls(), demo=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press(key_of("test"))
        await settle(app, pilot)
        await cancelled_run(app, pilot)
        live, body = await live_section(app, pilot)
        assert (live["status"], live["exit_code"], live["outcome"]) == ("error", 2, "cancelled")
        assert "no verdict" in live["error"] and "no verdict" in body and "PASS" not in body

    # a complete run, then a cancelled one: the complete run stays the one reported
    calls.clear()
    app = make_app(SecondRunStalls(), demo=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press(key_of("test"))
        await settle(app, pilot)
        await pilot.press("r")
        await wait_for_tests(app, pilot)
        assert live_state(app).outcome == "done"
        await cancelled_run(app, pilot)
        live, body = await live_section(app, pilot)
        assert (live["status"], live["exit_code"], live["outcome"]) == ("pass", 0, "done")
        assert "cancelled" in live["note"] and "last complete run" in body


@sync
async def test_a_refused_deploy_is_a_screen_with_the_reason() -> None:

    from strixwizard.services.deploy import DeployPreview

    class Refusing(Services):
        def plan_deploy(self, found: Diagnosis) -> DeployPreview:
            return DeployPreview(None, "node-a and node-b share no RDMA link: only thunderbolt-net (TCP)")

    app = make_app(Refusing(), demo=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press(key_of("deploy"))
        await settle(app, pilot)
        await settle(app, pilot)
        notice = app.screen.query_one("#deploy-status", Notice)
        assert notice.border_title == "Deploy refused"
        text = str(notice.render())
        assert "share no RDMA link" in text and "Next:" in text
        assert not app.screen.query_one("#deploy-plan").display


@sync
async def test_a_deploy_planning_crash_is_a_reason_not_a_traceback() -> None:

    from strixwizard.services.deploy import DeployPreview

    class Broken(Services):
        def plan_deploy(self, found: Diagnosis) -> DeployPreview:
            raise RuntimeError("boom")

    app = make_app(Broken(), demo=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press(key_of("deploy"))
        await settle_until(app, pilot, lambda: "boom" in notice_text(app, "#deploy-status"))
        text = notice_text(app, "#deploy-status")
        assert "RuntimeError('boom')" in text and "Next:" in text


class HeldTests(Services):
    """The real demo run, held before its first result until the test lets it go: the demo's
    recorded run is instant, and "cancel" is offered only while tests run."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()

    def live_tests(self, found: Diagnosis, demo: bool, cancel: Any) -> Any:
        stream = super().live_tests(found, demo, cancel)

        def held() -> Any:
            self.gate.wait(30)
            yield from stream
        return held()


@sync
async def test_palette_has_the_test_and_deploy_commands() -> None:
    services = HeldTests()
    app = make_app(services, demo=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press(key_of("deploy"))
        await settle(app, pilot)
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert "Run the live tests" in titles
        # nothing runs: no "Cancel …" is offered
        assert "Cancel the live tests" not in titles and "Cancel discovery" not in titles
        assert "Plan the deploy again" in titles
        assert "Apply the deploy" not in titles  # the demo is plan only
        run = next(c for c in app.get_system_commands(app.screen) if c.title == "Run the live tests")
        run.callback()
        await pilot.pause()
        await pilot.pause()
        assert app.screen.id == "step-test" and app.busy("tests")
        assert "Cancel the live tests" in [c.title for c in app.get_system_commands(app.screen)]
        services.gate.set()
        await wait_for_tests(app, pilot)
        assert live_state(app).outcome == "done"


@sync
async def test_the_wizard_reaches_nodes_through_an_injected_session(tmp_path: Path) -> None:
    """A site of two SSH nodes, read through a replay connector: no network, no patching."""
    from strixwizard.node.replay import ReplayConnector

    app = replayed_ssh_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press(key_of("discover"))
        await settle(app, pilot)
        discovery = discovery_of(app)
        assert discovery is not None
        assert [h.reachable for h in discovery.report.hosts] == [True, True]
        connector = app.services.connector
        assert isinstance(connector, ReplayConnector) and sorted(connector.sessions) == ["node-a", "node-b"]
        rows = cells(app.screen.query_one("#nodes", DataTable))
        assert any("AI Max+ 395" in row for row in rows)  # shortened at 80 columns
        details = str(app.screen.query_one("#nodes-details", Static).render())
        assert "SKU Ryzen AI Max+ 395" in details  # the selected row in full

"""Pilot tests: walk the demo from Site to Report with the keyboard, resume, cancel, failures."""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable, Input, Sparkline, Static

from strixwizard.model import Status
from strixwizard.targets import Progress
from strixwizard.tui.app import WizardApp
from strixwizard.tui.jobs import SiteSource
from strixwizard.tui.screens.links import LinkCard
from strixwizard.tui.widgets.confirm import ConfirmationModal
from strixwizard.tui.widgets.notice import Notice
from strixwizard.tui.widgets.testpanel import TestPanel, panel_id

SIZE = (80, 24)


def sync(test: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., None]:
    """Run an async test with asyncio.run (no pytest-asyncio in the dependencies)."""

    @functools.wraps(test)
    def run(*args: Any, **kwargs: Any) -> None:
        asyncio.run(test(*args, **kwargs))

    return run


@pytest.fixture(autouse=True)
def state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(home))
    return home


async def settle(app: WizardApp, pilot: Pilot[int]) -> None:
    await app.workers.wait_for_complete()
    await pilot.pause()
    await pilot.pause()


def cells(table: DataTable[object]) -> list[list[str]]:
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


def notice_text(app: WizardApp, selector: str) -> str:
    return str(app.screen.query_one(selector, Notice).render())


@pytest.fixture(autouse=True)
def short_demo_tests(monkeypatch: pytest.MonkeyPatch) -> None:
    from strixwizard.tui import live_jobs

    monkeypatch.setattr(live_jobs, "DEMO_SECONDS", 0.3)


async def wait_for_tests(app: WizardApp, pilot: Pilot[int], limit_s: float = 60.0) -> None:
    for _ in range(int(limit_s / 0.1)):
        if not app.session.testing:
            break
        await pilot.pause(0.1)
    await settle(app, pilot)


def panel(app: WizardApp, key: str) -> TestPanel:
    return app.screen.query_one(f"#{panel_id(key)}", TestPanel)


async def run_the_tests(app: WizardApp, pilot: Pilot[int]) -> None:
    """r on the Test step: the panels fill from the stream and reach a verdict."""
    assert "r runs the live tests" in notice_text(app, "#test-status")
    await pilot.press("r")
    await pilot.pause()
    assert app.session.testing
    await wait_for_tests(app, pilot)
    assert app.session.test_outcome == "done" and app.session.test_error is None
    rdma = panel(app, "node-a-node-b:latency:rdma")
    tcp = panel(app, "node-a-node-b:latency:tcp")
    assert rdma.view.status is Status.PASS and "PASS" in str(rdma.query_one(".verdict").render())
    assert "5.19 µs" in str(rdma.query_one(".verdict").render())
    assert rdma.border_subtitle == "replayed recording" and tcp.border_subtitle == "measured"
    assert tcp.view.status in (Status.PASS, Status.FAIL)
    assert "≤ 150 µs one-way" in str(tcp.query_one(".details").render())
    assert panel(app, "node-a-node-b:bandwidth:rdma").view.status is Status.FAIL  # the recording: 51%
    assert panel(app, "rccl").view.status is Status.PASS
    assert len(rdma.query_one(Sparkline).data or []) >= 5
    ratio = str(app.screen.query_one("#ratio-node-a-node-b", Static).render())
    assert "like for like" in ratio and "ratio" in ratio


@sync
async def test_walk_the_demo_from_site_to_report(state_home: Path) -> None:
    app = WizardApp(demo=True)
    async with app.run_test(size=SIZE) as pilot:
        assert app.screen.id == "step-site"
        rows = cells(app.screen.query_one("#site-nodes", DataTable))
        assert [r[0] for r in rows] == ["node-a", "node-b"]

        await pilot.press("n")
        await settle(app, pilot)
        assert app.screen.id == "step-discover"
        nodes = cells(app.screen.query_one("#nodes", DataTable))
        assert [r[0] for r in nodes] == ["node-a", "node-b"]
        assert all("gfx1151" in r for r in nodes)
        ports = cells(app.screen.query_one("#ports", DataTable))
        assert any("thunderbolt0" in r for r in ports)

        await pilot.press("n")
        await pilot.pause()
        assert app.screen.id == "step-links"
        cards = list(app.screen.query(LinkCard))
        report = app.session.discovery.report if app.session.discovery else None
        assert report is not None and len(cards) == len(report.links)
        thunderbolt = [c for c in cards if "thunderbolt-net" in str(c.render())]
        assert all(c.has_class("warning") for c in thunderbolt)
        assert all("TCP only" in str(c.render()) for c in thunderbolt)

        await pilot.press("n")
        await pilot.pause()
        assert app.screen.id == "step-fix"
        problems = [r for r in report.checks if r.status in (Status.FAIL, Status.WARN, Status.ERROR)]
        assert ("problems" in notice_text(app, "#fix-status")) == bool(problems)

        await pilot.press("n")
        await settle(app, pilot)
        assert app.screen.id == "step-deploy"
        assert "PLAN ONLY" in notice_text(app, "#deploy-status")
        assert "applying needs real nodes" in notice_text(app, "#deploy-status")
        env = str(app.screen.query_one("#deploy-env").render())
        assert "NCCL_IB_GID_INDEX=1" in env
        assert "/sys/class/infiniband/rocep194s0/ports/1/gid_attrs/types/1 = RoCE v2" in env
        await pilot.press("a")  # apply is refused on snapshots: no modal
        await pilot.pause()
        assert not isinstance(app.screen, ConfirmationModal)

        await pilot.press("n")
        await pilot.pause()
        assert app.screen.id == "step-test"
        await run_the_tests(app, pilot)

        await pilot.press("n")
        await pilot.pause()
        assert app.screen.id == "step-report"
        saved = app.session.saved
        assert set(saved) == {"json", "md", "html"}
        document = json.loads(saved["json"].read_text())
        live, deploy = document.pop("live_tests"), document.pop("deploy")
        assert document == json.loads(json.dumps(report.to_json()))
        assert deploy["status"] == "plan-only" and deploy["variables"]["node-a"]["NCCL_IB_GID_INDEX"] == "1"
        assert live["demo"] is True and {r["source"] for r in live["results"]} == {
            "measured", "replayed recording"}
        assert "## Live tests" in saved["md"].read_text() and "## Deploy" in saved["md"].read_text()
        assert saved["json"].parent == state_home / "strixwizard" / "demo"
        assert "# strixwizard report: site demo" in saved["md"].read_text()
        assert "<html" in saved["html"].read_text()
        assert "failed" in str(app.screen.query_one("#report-verdict").render())

        await pilot.press("b")
        await pilot.pause()
        assert app.screen.id == "step-test"
        await pilot.press("1")
        await pilot.pause()
        assert app.screen.id == "step-site"


@sync
async def test_report_json_validates_against_the_doctor_schema(report_schema: dict[str, object]) -> None:
    from tests.conftest import validate_report

    app = WizardApp(demo=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("6")
        await settle(app, pilot)
        await pilot.press("r")
        await wait_for_tests(app, pilot)
        await pilot.press("5")
        await settle(app, pilot)
        await pilot.press("7")
        await settle(app, pilot)
        await pilot.pause()
        assert "live_tests" in json.loads(app.session.saved["json"].read_text())
        validate_report(json.loads(app.session.saved["json"].read_text()), report_schema)


@sync
async def test_reopening_resumes_at_the_same_step(state_home: Path) -> None:
    app = WizardApp(demo=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("3")
        await settle(app, pilot)
        assert app.screen.id == "step-links"
    saved = json.loads((state_home / "strixwizard" / "demo-state.json").read_text())
    assert saved["step"] == "links"

    again = WizardApp(demo=True)
    async with again.run_test(size=SIZE) as pilot:
        await settle(again, pilot)
        assert again.screen.id == "step-links"
        assert again.session.discovery is not None  # discovered again on resume
        assert again.screen.query(LinkCard)


@sync
async def test_site_file_progress_is_saved_beside_it(tmp_path: Path) -> None:
    from strixwizard.tui.state import STATE_FILE_NAME

    site = tmp_path / "lab" / "site.yaml"
    site.parent.mkdir()
    demo = Path(__file__).resolve().parent.parent / "strixwizard" / "demo"
    site.write_text(
        "site: copy\nnodes:\n"
        f"  - name: node-a\n    snapshot: {demo / 'snapshots' / 'node-a.tar.gz'}\n"
        f"  - name: node-b\n    snapshot: {demo / 'snapshots' / 'node-b.tar.gz'}\n"
    )
    app = WizardApp(site_file=site)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n")
        await settle(app, pilot)
        assert app.screen.id == "step-discover"
    state = json.loads((site.parent / STATE_FILE_NAME).read_text())
    assert state["step"] == "discover"
    assert state["site_file"] == str(site.resolve())


@sync
async def test_a_bad_site_file_shows_the_reason_and_the_next_step(tmp_path: Path) -> None:
    site = tmp_path / "site.yaml"
    site.write_text("site: broken\nnodes:\n  - name: a\n    hots: x\n")
    app = WizardApp(site_file=site)
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
    app = WizardApp()
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
    from strixwizard.engine import Node
    from strixwizard.model import HostReport
    from strixwizard.tui.messages import SshTested

    app = WizardApp(demo=True)
    async with app.run_test(size=SIZE) as pilot:
        error = ("unknown host key for 10.99.2.10: ssh-ed25519 SHA256:AbCdEf0123456789+/xyz; if that is "
                 "the node's key, trust it with --trust-new-hosts")
        node = Node(HostReport("node-x", "root@10.99.2.10", "ssh", reachable=False, error=error), None)
        app.post_message(SshTested([node], None))
        await pilot.pause()
        modal = app.screen
        assert isinstance(modal, ConfirmationModal)
        assert "SHA256:AbCdEf0123456789+/xyz" in modal.question and "ssh-ed25519" in modal.question
        await pilot.press("n")
        await pilot.pause()
        assert not isinstance(app.screen, ConfirmationModal)
        assert "not trusted" in app.session.ssh["node-x"].text


@sync
async def test_cancel_discovery_keeps_the_screen_responsive(monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    from strixwizard.tui import jobs

    release = threading.Event()
    real = jobs.discover

    def slow(source: SiteSource, progress: Progress | None) -> jobs.Discovery:
        release.wait(10)
        return real(source, progress)

    monkeypatch.setattr(jobs, "discover", slow)
    app = WizardApp(demo=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n")
        await pilot.pause()
        assert app.session.discovering
        assert "Probing" in notice_text(app, "#discover-status")
        await pilot.press("escape")
        await pilot.pause()
        assert not app.session.discovering
        assert "cancelled" in notice_text(app, "#discover-status")
        release.set()
        await settle(app, pilot)
        assert app.session.discovery is None  # the abandoned run's result is ignored
        await pilot.press("r")
        await settle(app, pilot)
        assert app.session.discovery is not None


@sync
async def test_an_engine_crash_is_a_reason_not_a_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    from strixwizard.tui import jobs

    def broken(source: SiteSource, progress: Progress | None) -> jobs.Discovery:
        raise RuntimeError("boom")

    monkeypatch.setattr(jobs, "discover", broken)
    app = WizardApp(demo=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n")
        await settle(app, pilot)
        text = notice_text(app, "#discover-status")
        assert "internal error: RuntimeError('boom')" in text and "Next:" in text
        await pilot.press("n")
        await pilot.pause()
        assert "No discovery" in str(app.screen.query_one("#links-status", Notice).border_title)


@sync
async def test_command_palette_offers_the_steps() -> None:
    app = WizardApp(demo=True)
    async with app.run_test(size=SIZE) as pilot:
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert "Step 3: Links" in titles and "Discover again" in titles
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"Step 7", "enter")
        await settle(app, pilot)
        assert app.screen.id == "step-report"


@sync
async def test_light_theme_and_a_large_terminal() -> None:
    app = WizardApp(demo=True)
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.press("ctrl+t")
        await pilot.press("2")
        await settle(app, pilot)
        assert app.theme == "textual-light"
        assert app.screen.query_one("#nodes", DataTable).row_count == 2


@sync
async def test_fix_on_the_demo_is_a_dry_run_that_verifies_and_rolls_back(state_home: Path) -> None:
    app = WizardApp(demo=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("4")
        await settle(app, pilot)
        discovery = app.session.discovery
        assert discovery is not None and discovery.plan is not None
        if not discovery.plan.changes:
            pytest.skip("the demo plans no change")
        assert "DRY RUN" in notice_text(app, "#fix-status")
        await pilot.press("a")
        await pilot.pause()
        modal = app.screen
        assert isinstance(modal, ConfirmationModal) and "COPIES of the snapshots" in modal.question
        await pilot.press("y")
        await settle(app, pilot)
        applied = app.session.applied
        assert applied is not None and applied.report.dry_run
        assert applied.dry_run_copies is not None
        assert applied.dry_run_copies.is_relative_to(state_home)
        assert applied.report.verification
        assert "DRY RUN" in notice_text(app, "#fix-run")
        await pilot.press("u")
        await settle(app, pilot)
        assert app.session.rolled_back is not None and app.session.rolled_back.startswith("rolled back")


@sync
async def test_cancel_the_tests_closes_the_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    from collections.abc import Iterator, Sequence

    from strixwizard.engine import Node
    from strixwizard.live.demo import demo_rdma_latency
    from strixwizard.site import Site
    from strixwizard.tui import live_jobs

    closed: list[bool] = []

    def stream(site: Site, nodes: Sequence[Node], demo: bool, stopper: live_jobs.Stopper
               ) -> Iterator[object]:
        try:
            yield demo_rdma_latency(site.thresholds)
            stopper.stopped.wait(10)  # a measurement in flight, until its programs are stopped
            yield demo_rdma_latency(site.thresholds)
            yield demo_rdma_latency(site.thresholds)
        finally:
            closed.append(True)

    monkeypatch.setattr(live_jobs, "test_stream", stream)
    app = WizardApp(demo=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("6")
        await settle(app, pilot)
        await pilot.press("r")
        for _ in range(50):
            await pilot.pause(0.05)
            if app.session.test_results:
                break
        assert app.session.testing and len(app.session.test_results) == 1
        assert panel(app, "node-a-node-b:latency:rdma").view.status is Status.PASS
        await pilot.press("escape")
        await wait_for_tests(app, pilot, 15)
        assert closed == [True]
        assert app.session.test_outcome == "cancelled"
        assert len(app.session.test_results) == 1  # what came after the cancel is not shown
        assert "Tests cancelled" in str(app.screen.query_one("#test-status", Notice).border_title)


@sync
async def test_a_refused_deploy_is_a_screen_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    from strixwizard.tui import deploy_jobs

    def refused(*args: object, **kwargs: object) -> deploy_jobs.DeployPreview:
        return deploy_jobs.DeployPreview(None, "node-a and node-b share no RDMA link: only "
                                         "thunderbolt-net (TCP)")

    monkeypatch.setattr(deploy_jobs, "plan_deploy", refused)
    app = WizardApp(demo=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("5")
        await settle(app, pilot)
        await settle(app, pilot)
        notice = app.screen.query_one("#deploy-status", Notice)
        assert notice.border_title == "Deploy refused"
        text = str(notice.render())
        assert "share no RDMA link" in text and "Next:" in text
        assert not app.screen.query_one("#deploy-plan").display


@sync
async def test_a_deploy_planning_crash_is_a_reason_not_a_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    from strixwizard.tui import deploy_jobs

    def broken(*args: object, **kwargs: object) -> deploy_jobs.DeployPreview:
        raise RuntimeError("boom")

    monkeypatch.setattr(deploy_jobs, "plan_deploy", broken)
    app = WizardApp(demo=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("5")
        await settle(app, pilot)
        await settle(app, pilot)
        text = notice_text(app, "#deploy-status")
        assert "RuntimeError('boom')" in text and "Next:" in text


@sync
async def test_palette_has_the_test_and_deploy_commands() -> None:
    app = WizardApp(demo=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("5")
        await settle(app, pilot)
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert "Run the live tests" in titles and "Cancel the live tests" in titles
        assert "Plan the deploy again" in titles
        assert "Apply the deploy" not in titles  # the demo is plan only
        run = next(c for c in app.get_system_commands(app.screen) if c.title == "Run the live tests")
        run.callback()
        await pilot.pause()
        await pilot.pause()
        assert app.screen.id == "step-test" and app.session.testing
        await wait_for_tests(app, pilot)
        assert app.session.test_outcome == "done"

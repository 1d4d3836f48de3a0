"""The wizard under Textual's Pilot, for the tests: the app with its services injected, waits
that end when the wizard's jobs have (bounded), and the texts and cells a test reads off a step.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from textual.pilot import Pilot
from textual.screen import Screen
from textual.widgets import DataTable

from strixwizard.services.discover import Diagnosis, SiteSource
from strixwizard.services.facade import Services
from strixwizard.tui.app import WizardApp
from strixwizard.tui.screens.discover import DiscoverState
from strixwizard.tui.screens.measure import MeasurementState
from strixwizard.tui.steps import STEPS, key_of
from strixwizard.tui.widgets.confirm import ConfirmationModal
from strixwizard.tui.widgets.measurement import MeasurementPanel, panel_id
from strixwizard.tui.widgets.notice import Notice
from strixwizard.tui.widgets.sections import Section

SIZE = (80, 24)


def sync(test: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., None]:
    """Run an async test with asyncio.run (no pytest-asyncio in the dependencies)."""

    @functools.wraps(test)
    def run(*args: Any, **kwargs: Any) -> None:
        asyncio.run(test(*args, **kwargs))

    return run


async def settle(app: WizardApp, pilot: Pilot[int]) -> None:
    await app.workers.wait_for_complete()
    await pilot.pause()
    await pilot.pause()


async def next_to(app: WizardApp, pilot: Pilot[int], step_id: str) -> None:
    """Press `n` (Next) until the wizard shows `step_id`: a walk that holds with any number of
    steps in between (a new step changes no walk)."""
    for _ in STEPS:
        await pilot.press("n")
        await settle(app, pilot)
        if app.screen.id == f"step-{step_id}":
            return
    raise AssertionError(f"Next never reached {step_id}: stopped at {app.screen.id}")


async def settle_until(app: WizardApp, pilot: Pilot[int], done: Callable[[], bool],
                       seconds: float = 60) -> None:
    """Settle until `done()` holds: a step whose job starts another job (discover, then plan)
    needs as many rounds as the chain is long, more on a loaded machine."""
    from textual.worker import WorkerFailed

    deadline = time.monotonic() + seconds
    while True:
        with contextlib.suppress(WorkerFailed):  # a job that fails on purpose is still awaited
            await settle(app, pilot)
        if done() or time.monotonic() > deadline:
            return
        await asyncio.sleep(0.05)


async def still(pilot: Pilot[Any], step_id: str, seconds: float = 30,
                on_top: type[Screen[Any]] | None = None) -> None:
    """Wait until the wizard shows `step_id` (or an `on_top` dialog over it) at rest: no job
    pending or running, no table with a resize pending, no toast, and the same picture for
    four looks in a row (bounded). A picture taken sooner can catch a job's result on its way
    to the screen, or a table before it sized its columns (on an Idle event a loaded machine
    delays)."""
    from textual.worker import WorkerState

    app = pilot.app

    def arrived() -> bool:
        screens = app.screen_stack
        if on_top is not None:
            return isinstance(screens[-1], on_top) and len(screens) > 1 and \
                screens[-2].id == f"step-{step_id}"
        return app.screen.id == f"step-{step_id}"

    deadline = time.monotonic() + seconds
    last, same = "", 0
    while time.monotonic() < deadline:
        await pilot.pause(0.05)
        app.clear_notifications()
        busy = any(w.state in (WorkerState.PENDING, WorkerState.RUNNING) for w in app.workers)
        sizing = any(t._require_update_dimensions for t in app.screen.query(DataTable))
        if busy or sizing or not arrived():
            last, same = "", 0
            continue
        picture = app.export_screenshot(simplify=True)
        same = same + 1 if picture == last else 0
        last = picture
        if same >= 3:
            return
    raise AssertionError(f"the wizard did not come to rest on {step_id} in {seconds:.0f} s "
                         f"(at {app.screen.id})")


def svg_lines(svg: str) -> list[str]:
    """A snapshot's text, row by row (what a reader of the failure wants to see differ)."""
    import html
    import re

    rows: dict[float, list[str]] = {}
    for match in re.finditer(r'<text[^>]*\by="([\d.]+)"[^>]*>(.*?)</text>', svg):
        rows.setdefault(float(match.group(1)), []).append(html.unescape(match.group(2)))
    return ["".join(parts).replace("\xa0", " ").rstrip() for _, parts in sorted(rows.items())]


def cells(table: DataTable[object]) -> list[list[str]]:
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


def notice_text(app: WizardApp, selector: str) -> str:
    return str(app.screen.query_one(selector, Notice).render())


QUICK = Services(demo_seconds=0.3)  # the demo's loopback TCP loops, kept short


def make_app(services: Services | None = None, **kwargs: Any) -> WizardApp:
    """The wizard with the services injected (short demo tests unless told otherwise)."""
    return WizardApp(services=services or QUICK, **kwargs)


def replayed_ssh_app(tmp_path: Path) -> WizardApp:
    """The wizard on a site of two SSH nodes (lab addresses) answered by the demo's snapshots
    through a replay connector: the SSH code path, no network, no patching."""
    from strixwizard.node.replay import ReplayConnector
    from strixwizard.probe.snapshot import SnapshotProbe

    demo = Path(__file__).resolve().parents[2] / "strixwizard" / "demo" / "snapshots"
    site_file = tmp_path / "site.yaml"
    site_file.write_text("site: replayed\nnodes:\n  - name: node-a\n    host: 10.99.250.1\n"
                         "  - name: node-b\n    host: 10.99.250.2\n")
    connector = ReplayConnector(probes={name: SnapshotProbe.load(demo / f"{name}.tar.gz")
                                        for name in ("node-a", "node-b")})
    return make_app(Services(connector=connector), source=SiteSource(site_file=site_file), resume=False)


def live_state(app: WizardApp) -> MeasurementState:
    return app.session.of(MeasurementState)


def discovery_of(app: WizardApp) -> Diagnosis | None:
    return app.session.of(DiscoverState).discovery


async def wait_for_tests(app: WizardApp, pilot: Pilot[int], limit_s: float = 60.0) -> None:
    for _ in range(int(limit_s / 0.1)):
        if not app.busy("tests"):
            break
        await pilot.pause(0.1)
    await settle(app, pilot)


async def wait_for_modal(app: WizardApp, pilot: Pilot[int], limit_s: float = 10.0) -> ConfirmationModal:
    """The services ask from their worker: wait (bounded) for the question to be shown."""
    for _ in range(int(limit_s / 0.05)):
        if isinstance(app.screen, ConfirmationModal):
            return app.screen
        await pilot.pause(0.05)
    raise AssertionError("no confirmation was asked")


def panel(app: WizardApp, key: str) -> MeasurementPanel:
    return app.screen.query_one(f"#{panel_id(key)}", MeasurementPanel)


async def discovered(app: WizardApp, pilot: Pilot[int]) -> None:
    """Wait (bounded, 60 s) until the discovery the Discover step started has finished."""
    for _ in range(600):
        await settle(app, pilot)
        if app.session.of(DiscoverState).discovery is not None and not app.busy("discover"):
            return
        await pilot.pause(0.1)
    raise AssertionError("discovery did not finish within 60 s")


async def after_the_tests(app: WizardApp, pilot: Pilot[int]) -> None:
    """On the Test step with the demo's tests run (every figure replayed from the recordings)."""
    await pilot.press(key_of("test"))
    await settle(app, pilot)
    await pilot.press("r")
    await wait_for_tests(app, pilot)
    await settle(app, pilot)


async def replanned(app: WizardApp, pilot: object) -> None:
    """Settle through the Deploy step's re-plan (a pick starts a plan, the plan a redraw)."""
    for _ in range(3):
        await settle(app, pilot)  # type: ignore[arg-type]


def node_boxes(app: WizardApp) -> str:
    """What the Deploy step says about each node, one box after the other."""
    return "\n".join(str(box.render()) for box in app.screen.query("#deploy-nodes Static"))


def step_sections(app: WizardApp, selector: str) -> list[Section]:
    """The foldable sections the step shows under `selector`."""
    return list(app.screen.query(selector).results(Section))

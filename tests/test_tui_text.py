"""Text from outside in the wizard (strixwizard/tui/text.py, issue 22), on a hostile demo
variant: a node's words (kernel release, NIC firmware, hostname) are markup and escape
sequences. Every step draws without a crash, clicking every cell of every table runs no action
and writes no file, and the words are shown as they are; dialogs show hostile titles and keys as
text."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest
from textual.coordinate import Coordinate
from textual.widgets import DataTable

from strixwizard.node.replay import ReplayConnector
from strixwizard.probe.snapshot import SnapshotProbe
from strixwizard.services.discover import SiteSource
from strixwizard.services.facade import Services
from strixwizard.tui.app import WizardApp
from strixwizard.tui.screens.discover import DiscoverState
from strixwizard.tui.screens.links import LinkCard
from strixwizard.tui.steps import BY_ID
from tests.support.hostile.bundles import hostile_snapshot
from tests.support.hostile.strings import contains_control

STEPS = ("site", "discover", "links", "fix", "deploy", "test", "report")


def _files(root: Path) -> set[Path]:
    return {p for p in root.rglob("*")}


def _hostile_app(tmp_path: Path, trap: Path) -> WizardApp:
    click = f"[@click=app.screenshot('owned.conf','{trap}')]4.91[/]"
    kernel = "6.1.0[/]\x1b[2J\x1b]52;c;cHduZWQ=\x07"
    probes = {}
    for name in ("node-a", "node-b"):
        root = hostile_snapshot(name, tmp_path / "snapshots", kernel=kernel, firmware=click)
        probes[name] = SnapshotProbe.load(root)
    site_file = tmp_path / "site.yaml"
    site_file.write_text("site: hostile\nnodes:\n  - name: node-a\n    host: 10.99.250.1\n"
                         "  - name: node-b\n    host: 10.99.250.2\n")
    services = Services(connector=ReplayConnector(probes=probes), demo_seconds=0.3)
    return WizardApp(services=services, source=SiteSource(site_file=site_file), resume=False)


@pytest.fixture(autouse=True)
def state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(home))
    return home


async def _click_every_cell(pilot: Any, table: DataTable[object]) -> int:
    clicked = 0
    for row in range(table.row_count):
        for column in range(len(table.ordered_columns)):
            table.move_cursor(row=row, column=column)
            await pilot.pause()
            region = table._get_cell_region(Coordinate(row, column))
            x = region.x - int(table.scroll_x) + 1
            y = region.y - int(table.scroll_y) + table.header_height
            if 0 <= x < table.size.width and 0 <= y < table.size.height:
                await pilot.click(table, offset=(x, y))
                clicked += 1
    return clicked


def test_clicking_every_cell_of_a_hostile_node_runs_no_action(tmp_path: Path) -> None:
    trap = tmp_path / "trap"
    trap.mkdir()
    app = _hostile_app(tmp_path, trap)
    actions: list[str] = []
    run_action = app.run_action

    async def watched(action: Any, *args: Any, **kwargs: Any) -> bool:
        actions.append(str(action))
        return await run_action(action, *args, **kwargs)

    app.run_action = watched  # type: ignore[method-assign]
    screenshots: list[object] = []
    app.action_screenshot = lambda *a, **k: screenshots.append(a)  # type: ignore[method-assign]
    before = _files(tmp_path)

    async def run() -> None:
        async with app.run_test(size=(400, 80)) as pilot:
            await pilot.pause()
            await pilot.press(BY_ID["discover"].key)
            await pilot.pause()
            await pilot.press("r")
            for _ in range(200):  # bounded: 20 s
                if app.session.of(DiscoverState).discovery is not None and not app.busy("discover"):
                    break
                await pilot.pause(0.1)
            await app.workers.wait_for_complete()
            await pilot.pause()
            clicked = 0
            shown: list[str] = []
            for step in STEPS:
                await pilot.press(BY_ID[step].key)
                await app.workers.wait_for_complete()
                await pilot.pause()
                await pilot.pause()
                for table in app.screen.query(DataTable):
                    if table.display and table.row_count:
                        shown += [str(c) for i in range(table.row_count) for c in table.get_row_at(i)]
                        clicked += await _click_every_cell(pilot, table)
                for card in app.screen.query(LinkCard):
                    await pilot.click(card)
            assert clicked > 20, "the hostile site's tables were not drawn"
            app.screen.notify("[@click=app.quit]x[/] [/] \x1b]0;PWNED\x07", markup=True)  # an error's words
            await pilot.pause()
            await pilot.pause()
            last = list(app._notifications)[-1]
            assert not last.markup and last.message.endswith("[/] \\x1b]0;PWNED\\x07")
            for toast in app.screen.query("Toast"):
                await pilot.click(toast)
            joined = "\n".join(shown)
            assert "[@click=app.screenshot(" in joined  # the firmware version, shown as it is
            assert "6.1.0[/]\\x1b[2J" in joined  # the kernel release, escapes spelled out
            assert not any(contains_control(cell) for cell in shown)

    asyncio.run(run())
    assert not screenshots
    assert not [a for a in actions if "screenshot" in a or "quit" in a]
    assert not list(trap.iterdir())
    own = (".strixwizard-state.json", "strixwizard-report-hostile.")  # the wizard's progress and report
    written = {p for p in _files(tmp_path) - before
               if not p.is_relative_to(tmp_path / "state") and not p.name.startswith(own)}
    assert not written, written
    assert not (Path(os.getcwd()) / "owned.conf").exists()


def test_dialogs_show_hostile_titles_and_keys_as_text(tmp_path: Path) -> None:
    """The confirm and host-key dialogs: a title, question and key line that are markup and
    escapes are drawn as they are; clicking them runs nothing."""
    from textual.app import App
    from textual.widgets import Checkbox, Static

    from strixwizard.tui.hostkeys import UnknownHostKey
    from strixwizard.tui.widgets.confirm import ConfirmationModal
    from strixwizard.tui.widgets.hostkeys import HostKeysModal

    hostile = "[@click=app.quit]run[/] [/] \x1b]0;PWNED\x07"
    key = UnknownHostKey(node="node-a", host=hostile, key_type="ssh-ed25519",
                         fingerprint="SHA256:[@click=app.quit]x[/]")
    actions: list[str] = []

    class Host(App[None]):
        async def run_action(self, action: Any, *args: Any, **kwargs: Any) -> bool:
            actions.append(str(action))
            return await super().run_action(action, *args, **kwargs)

    async def run() -> None:
        app = Host()
        async with app.run_test(size=(120, 40)) as pilot:
            for modal in (ConfirmationModal(hostile, hostile), HostKeysModal([key], hostile)):
                app.push_screen(modal)
                await pilot.pause()
                shown = [str(s.render()) for s in modal.query(Static)]
                shown += [str(c.label) for c in modal.query(Checkbox)]
                assert any("[@click=app.quit]run[/] [/] \\x1b]0;PWNED\\x07" in s for s in shown), shown
                for widget in [*modal.query(Static), *modal.query(Checkbox)]:
                    if widget.id not in ("yes", "no"):
                        await pilot.click(widget)
                modal.dismiss(False)
                await pilot.pause()

    asyncio.run(run())
    assert not [a for a in actions if "quit" in a], actions

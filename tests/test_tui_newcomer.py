"""The wizard as a newcomer meets it at 80 by 24: tables that fit, a headline that names the cause,
results kept when the nodes are read again, no "Cancel …" with nothing running, the theme kept."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import DataTable, Static

from strixwizard.live.results import Measurement, cause
from strixwizard.model import Status
from strixwizard.tui.fit import Column, fitting, short_kernel, short_sku, short_state
from strixwizard.tui.screens.discover import NODE_COLUMNS
from strixwizard.tui.steps import key_of
from tests.support.wizard import (
    cells,
    make_app,
    notice_text,
    replayed_ssh_app,
    settle,
    sync,
    wait_for_tests,
)


@pytest.fixture(autouse=True)
def state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(home))
    return home


def test_columns_are_left_out_by_their_rank_until_the_rest_fit() -> None:
    columns = [Column("node", 0), Column("a", 1), Column("b", 3), Column("c", 2)]
    rows = [("node-a", "x" * 10, "y" * 10, "z" * 10)]
    assert fitting(columns, rows, 100) == [0, 1, 2, 3]
    assert fitting(columns, rows, 30) == [0, 2]
    assert fitting(columns, rows, 5) == [0]  # the node column always stays
    assert short_kernel("6.18.5-200.fc43.x86_64") == "6.18.5-200.fc43"
    assert short_sku("AMD Ryzen AI Max+ 395") == "AI Max+ 395"
    assert short_state("✗ unknown host key for 10.99.2.10: ssh-ed25519 SHA256:abc") == "✗ host key?"


@sync
async def test_discover_at_80_columns_fits_and_shows_the_rest_for_the_selected_row() -> None:
    app = make_app(demo=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(key_of("discover"))
        await settle(app, pilot)
        for table_id in ("nodes", "ports"):
            table = app.screen.query_one(f"#{table_id}", DataTable)
            assert table.virtual_size.width <= table.size.width, table_id  # no sideways scrolling
            details = str(app.screen.query_one(f"#{table_id}-details", Static).render())
            assert details and app.screen.query_one(f"#{table_id}-details").display
        nodes = app.screen.query_one("#nodes", DataTable)
        assert len(nodes.columns) < len(NODE_COLUMNS)
        assert "kernel 6.18.5-200.fc43.x86_64" in str(app.screen.query_one("#nodes-details", Static).render())
        nodes.focus()
        await pilot.press("down")
        await pilot.pause()
        assert str(app.screen.query_one("#nodes-details", Static).render()).startswith("node-b")
        assert "1 links" not in notice_text(app, "#discover-status")
    wide = make_app(demo=True)
    async with wide.run_test(size=(200, 40)) as pilot:
        await pilot.press(key_of("discover"))
        await settle(wide, pilot)
        nodes = wide.screen.query_one("#nodes", DataTable)
        assert len(nodes.columns) == len(NODE_COLUMNS)
        assert any("Ryzen AI Max+ 395" in row for row in cells(nodes))
        assert not wide.screen.query_one("#nodes-details").display


def _m(status: Status, summary: str, transport: str = "tcp", kind: str = "latency",
       figure: float | None = 1.0) -> Measurement:
    return Measurement(kind, transport, "t", ("node0", "node1"), status, summary, figure=figure)


def test_the_headline_names_the_cause() -> None:
    broken = [_m(Status.PASS, "ok"), _m(Status.ERROR, "mpirun is not installed on node0", "rdma", "rccl",
                                        None)]
    assert cause(broken).startswith("mpirun is not installed on node0 (node0-node1 RDMA rccl")
    assert cause([_m(Status.PASS, "ok"), _m(Status.FAIL, "RDMA: 12 µs, over", "rdma")]).startswith(
        "RDMA: 12 µs, over (node0-node1 RDMA latency")
    never = [_m(Status.PASS, "ok"), _m(Status.SKIP, "RDMA not measured: no link", "rdma", figure=None)]
    assert cause(never).startswith("RDMA was never measured")
    assert cause([_m(Status.PASS, "ok")]).startswith("every judged figure within its limit")


@sync
async def test_test_step_keeps_its_results_when_the_nodes_are_read_again() -> None:
    app = make_app(demo=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(key_of("test"))
        await settle(app, pilot)
        assert "Cancel the live tests" not in [c.title for c in app.get_system_commands(app.screen)]
        await pilot.press("r")
        await pilot.pause()
        await wait_for_tests(app, pilot)
        results = len(app.session.of(type(app.session.states["test"])).results)  # type: ignore[arg-type]
        headline = notice_text(app, "#test-status").splitlines()[0]  # the demo's x4 slots cap it:
        assert results and headline.startswith("WARN: 50.64 Gb/s is 51% of the 100 Gb/s link rate")
        assert "capped by the PCIe link" in headline
        await pilot.press(key_of("discover"))
        await settle(app, pilot)
        await pilot.press("r")
        await settle(app, pilot)
        await pilot.press(key_of("test"))
        await settle(app, pilot)
        text = notice_text(app, "#test-status")
        assert "Measured before the nodes were discovered again" in text, text
        assert len(app.session.states["test"].results) == results  # type: ignore[attr-defined]


@sync
async def test_the_theme_is_remembered_privately(state_home: Path) -> None:
    app = make_app(demo=True)
    async with app.run_test(size=(80, 24)) as pilot:
        assert app.theme == "textual-dark"
        await pilot.press("ctrl+t")
        await pilot.pause()
        assert app.theme == "textual-light"
    saved = state_home / "strixwizard" / "wizard-preferences.json"
    assert saved.stat().st_mode & 0o777 == 0o600
    again = make_app(demo=True)
    async with again.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert again.theme == "textual-light"


def _refused(node: str, address: str, fingerprint: str) -> object:
    from strixwizard.checking.engine import Node
    from strixwizard.model import HostReport

    error = (f"unknown host key for {address}: ssh-ed25519 {fingerprint}; if that is the node's key, "
             "trust it with --trust-new-hosts (it is added to known_hosts)")
    return Node(HostReport(node, f"root@{address}", "ssh", reachable=False, error=error), None)


@sync
async def test_every_new_host_key_is_in_one_dialog_with_a_choice_per_key() -> None:
    from textual.widgets import Checkbox

    from strixwizard.tui.messages import SshTested
    from strixwizard.tui.screens.site import SiteState
    from strixwizard.tui.widgets.hostkeys import HostKeysModal

    app = make_app(demo=True)
    async with app.run_test(size=(80, 24)) as pilot:
        app.post_message(SshTested([_refused("node-x", "10.99.2.10", "SHA256:AAAA"),  # type: ignore[list-item]
                                    _refused("node-y", "10.99.2.11", "SHA256:BBBB")], None))
        await pilot.pause()
        modal = app.screen
        assert isinstance(modal, HostKeysModal)
        assert "SHA256:AAAA" in modal.question and "SHA256:BBBB" in modal.question
        assert "--trust-new-hosts" not in modal.question
        modal.query_one("#key-1", Checkbox).value = False  # node-y's key is not trusted
        await pilot.press("y")
        await pilot.pause()
        assert not isinstance(app.screen, HostKeysModal)
        ssh = app.session.of(SiteState).ssh
        assert "not trusted" in ssh["node-y"].text
        assert "not trusted" not in ssh["node-x"].text  # tested again with its confirmed key


@sync
async def test_a_bad_site_file_keeps_the_site_that_is_open(tmp_path: Path) -> None:
    from strixwizard.services.discover import SiteSource
    from strixwizard.tui.messages import OpenSite

    bad = tmp_path / "bad.yaml"
    bad.write_text("site: x\nnodes: [\n")
    app = make_app(demo=True)
    async with app.run_test(size=(80, 24)) as pilot:
        app.post_message(OpenSite(SiteSource(site_file=bad)))
        await pilot.pause()
        assert app.session.site is not None and app.session.site.name == "demo"
        assert app.session.source is not None and app.session.source.demo


@sync
async def test_the_site_hint_says_what_ssh_reached(tmp_path: Path) -> None:
    app = replayed_ssh_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        hint = app.screen.query_one("#site-hint", Static)
        assert str(hint.render()).startswith("s tests SSH")
        await pilot.press("s")
        await settle(app, pilot)
        await settle(app, pilot)
        assert str(hint.render()).startswith("SSH reaches 2 of 2 remote nodes"), str(hint.render())


def test_a_pair_without_a_fabric_link_is_titled_as_measured_over_management() -> None:
    from strixwizard.tui.screens.test import link_title

    tcp = Measurement("latency", "tcp", "strixwizard tcp ping-pong", ("node2", "node1"), Status.PASS, "ok",
                      path="node1 -> node2 10.99.2.12 (management network: no fabric link found)")
    assert link_title("node1-node2", [tcp]) == ("node1-node2: no fabric link; TCP measured over the "
                                                "management network")
    assert link_title("node0-node1", [tcp]) == "link node0-node1"


@sync
async def test_home_reaches_the_top_and_the_applied_panel_scrolls_into_view() -> None:
    from textual.containers import VerticalScroll

    from tests.support.wizard import wait_for_modal

    app = make_app(demo=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(key_of("fix"))
        await settle(app, pilot)
        body = app.screen.query_one("#body", VerticalScroll)
        await pilot.press("end")
        await pilot.pause()
        assert body.scroll_y > 0
        await pilot.press("home")
        await pilot.pause()
        assert body.scroll_y == 0
        await pilot.press("end")
        await pilot.pause()
        await pilot.press("a")
        modal = await wait_for_modal(app, pilot)
        assert modal is app.screen
        await pilot.press("y")
        for _ in range(100):  # bounded: the dry run ends in a second or two
            await settle(app, pilot)
            if not app.busy("fix"):
                break
        await settle(app, pilot)
        run = app.screen.query_one("#fix-run")
        assert "Applied" in str(run.border_title or "")
        assert body.scroll_y <= run.virtual_region.y, (body.scroll_y, run.virtual_region)


@sync
async def test_the_site_form_answers_inside_the_form_never_under_a_toast(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from textual.widgets import Input

    monkeypatch.chdir(tmp_path)  # no ./site.yaml: the form is shown
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        node = screen.query_one("#create-node", Input)
        node.focus()
        await pilot.press(*"just-a-name", "enter")
        await pilot.pause()
        said = str(screen.query_one("#create-said", Static).render())
        assert "expected NAME=[USER@]HOST[:PORT]" in said
        await pilot.press("escape")
        app.set_focus(None)
        await pilot.press("n")
        await pilot.pause()
        assert "open or create a site first" in str(screen.query_one("#create-said", Static).render())
        assert len(app._notifications) == 0


@sync
async def test_report_lines_wrap_under_their_start_at_80_columns() -> None:
    app = make_app(demo=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(key_of("report"))
        await settle(app, pilot)
        body = app.screen.query_one("#report-body")
        lines = ["".join(s.text for s in body.render_line(y)).rstrip() for y in range(body.size.height)]
        at = next(i for i, line in enumerate(lines) if line.startswith("  node-a: Ryzen AI Max+ 395"))
        assert lines[at + 1].startswith("    ") and lines[at + 1].strip() == "125.4 GiB", lines[at:at + 2]
        problem = next(i for i, line in enumerate(lines) if "node node-b: dcb.pause_and_pfc" in line)
        assert lines[problem + 1].startswith(" " * 10) and lines[problem + 1][10] != " "


@pytest.mark.parametrize("count", [3, 6, 12])
def test_the_matrix_fits_80_columns_and_no_cell_is_cut(count: int) -> None:
    from strixwizard.tui.fit import cell_width
    from strixwizard.tui.screens.test import matrix_view

    nodes = [f"strix-node{i}" for i in range(count)]
    tcp = {a: {b: 123.4 for b in nodes if b != a} for a in nodes}
    rdma = {a: {b: 5.19 for b in nodes if b != a} for a in nodes}
    title, labels, rows = matrix_view(nodes, {"tcp_latency_us": tcp, "rdma_latency_us": rdma}, 76)
    widths = [cell_width(label, [r[i] for r in rows]) for i, label in enumerate(labels)]
    assert sum(widths) <= 76 or count == 12  # 12 numbered columns still need their width
    assert all("5.19" in cell for row in rows for cell in row[1:] if cell != "—")  # whole figures
    if count == 3:
        assert "TCP / RDMA" in title and rows[0][2] == "123.4 / 5.19"
    else:
        assert "TCP: in the panels above" in title

"""The wizard's Test step (the live tests) on the demo: results are kept when the nodes are read
again, a pair without a fabric link is titled as measured over the management network, and the
latency matrix fits 80 columns with no cell cut."""

from __future__ import annotations

from pathlib import Path

import pytest

from strixwizard.live.results import Measurement
from strixwizard.model import Status
from strixwizard.tui.steps import key_of
from tests.support.wizard import make_app, notice_text, settle, sync, wait_for_tests


@pytest.fixture(autouse=True)
def state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(home))
    return home


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


def test_a_pair_without_a_fabric_link_is_titled_as_measured_over_management() -> None:
    from strixwizard.tui.panels import link_title

    tcp = Measurement("latency", "tcp", "strixwizard tcp ping-pong", ("node2", "node1"), Status.PASS, "ok",
                      path="node1 -> node2 10.99.2.12 (management network: no fabric link found)")
    assert link_title("node1-node2", [tcp]) == ("node1 ⇄ node2: no fabric link; TCP measured over the "
                                                "management network")
    # the pair as every screen names it, before any result arrives too
    assert link_title("node-a-node-b", [tcp], [("node-b", "node-a")]) == "link node-a ⇄ node-b"


@pytest.mark.parametrize("count", [3, 6, 12])
def test_the_matrix_fits_80_columns_and_no_cell_is_cut(count: int) -> None:
    from strixwizard.tui.fit import cell_width
    from strixwizard.tui.screens.measure import matrix_view

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


@sync
async def test_the_test_steps_notice_is_short_at_80x24_and_i_shows_the_details() -> None:
    from strixwizard.tui.widgets.notice import Notice

    app = make_app(demo=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(key_of("test"))
        await settle(app, pilot)
        notice = app.screen.query_one("#test-status", Notice)
        assert notice.outer_size.height <= 6, notice.outer_size  # the step's panels get the rest
        short = notice_text(app, "#test-status")
        assert "r runs the live tests" in short and "i: details" in short and "Limits" not in short
        await pilot.press("i")
        await settle(app, pilot)
        full = notice_text(app, "#test-status")
        assert "Limits: RDMA" in full and "Sparklines" in full and "Demo:" in full
        await pilot.press("i")
        await settle(app, pilot)
        assert "Limits" not in notice_text(app, "#test-status")

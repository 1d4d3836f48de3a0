"""The wizard on a real site: three lab nodes reached over SSH, a real TCP matrix between them.

The lab's nodes are not Strix Halo machines and have no RDMA, so RDMA cells stay empty and the
discovery says so; TCP is measured for real between the namespaces (short, bounded runs).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import DataTable

from strixwizard.live.tcp import TcpSettings
from strixwizard.model import Status
from strixwizard.services.facade import Services
from strixwizard.tui.app import WizardApp
from strixwizard.tui.steps import key_of
from strixwizard.tui.widgets.notice import Notice
from tests.support.lab import Lab, lab_fixture
from tests.support.wizard import cells, discovered, live_state, settle, sync, wait_for_tests

tuilab3 = lab_fixture(3, name="tuilab3")


#: Each measurement kept to a fraction of a second (the defaults run several seconds), injected.
SHORT_TESTS = Services(tcp=TcpSettings(seconds=0.3, round_trips=2000, warmup=100, references=False))


@sync
async def test_discover_and_test_a_three_node_site_over_ssh(tuilab3: Lab, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    site = tuilab3.write_site_yaml(tmp_path / "site.yaml")
    app = WizardApp(site_file=site, services=SHORT_TESTS)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("n")
        await discovered(app, pilot)
        assert app.screen.id == "step-discover"
        rows = cells(app.screen.query_one("#nodes", DataTable))
        assert [r[0] for r in rows] == ["node0", "node1", "node2"]
        assert all(r[1].startswith("✓") for r in rows), rows  # every node read over SSH

        await pilot.press(key_of("test"))
        await settle(app, pilot)
        assert app.screen.id == "step-test"
        await pilot.press("r")
        await pilot.pause()
        await wait_for_tests(app, pilot, limit_s=120)
        assert live_state(app).outcome == "done", live_state(app).error

        tcp = [m for m in live_state(app).results
               if m.transport == "tcp" and m.role != "reference" and m.kind == "latency"]
        assert sorted(tuple(sorted(m.pair)) for m in tcp) == [
            ("node0", "node1"), ("node0", "node2"), ("node1", "node2")]
        assert all(m.status is Status.PASS for m in tcp), [m.summary for m in tcp]
        # node2 has no fabric veth: its panels say the TCP baseline went over the management network
        from textual.widgets import Static

        title = str(app.screen.query_one("#title-node0-node2", Static).render())
        assert title == "node0 ⇄ node2: no fabric link; TCP measured over the management network", title
        assert str(app.screen.query_one("#title-node0-node1", Static).render()) == "link node0 ⇄ node1"

        grid = app.screen.query_one("#test-matrix", DataTable)
        assert grid.display
        table = cells(grid)
        assert [r[0] for r in table] == ["node0", "node1", "node2"]
        for i, row in enumerate(table):
            for j, cell in enumerate(row[1:]):
                if i == j:
                    assert cell == "—"
                else:  # a measured TCP figure; no RDMA on the lab: its half stays open
                    tcp_part, rdma_part = cell.split(" / ")
                    assert float(tcp_part) > 0 and rdma_part == "…", cell

        # the run went into the test history, as `strixwizard test` runs do; a second run is
        # compared with it
        history = tmp_path / "state" / "strixwizard" / "history.sqlite"
        status = str(app.screen.query_one("#test-status", Notice).render())
        assert f"Stored in the test history {history}" in status, status
        assert "no earlier good run to compare with" in status
        await pilot.press("r")
        await pilot.pause()
        await wait_for_tests(app, pilot, limit_s=120)
        status = str(app.screen.query_one("#test-status", Notice).render())
        assert "compared with the last good run" in status or "worse than the last good run" in status


@sync
async def test_deploy_on_a_site_without_rdma_is_refused_by_the_engine(tuilab3: Lab, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch
                                                                     ) -> None:
    """No stand-in: the real deploy engine refuses the lab (veth is plain Ethernet, no RDMA)."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    site = tuilab3.write_site_yaml(tmp_path / "site.yaml", hosts=tuilab3.hosts[:2])
    app = WizardApp(site_file=site)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("n")
        await discovered(app, pilot)
        await pilot.press(key_of("deploy"))
        # the screen starts the planning worker once it is mounted: wait (bounded) for its answer
        notice = app.screen.query_one("#deploy-status", Notice)
        for _ in range(200):
            await settle(app, pilot)
            if notice.border_title not in ("Deploy", "Planning the deploy"):
                break
            await pilot.pause(0.05)
        text = str(notice.render())
        assert notice.border_title == "Deploy refused", text
        assert "Ethernet" in text and "node0" in text and "node1" in text, text
        assert "Nothing is deployed" in text and "pick the TCP transport above" in text
        assert "--transport" not in text and "--nodes" not in text, text  # the wizard's words, not flags
        assert not app.screen.query_one("#deploy-plan").display


@sync
async def test_an_unknown_host_key_is_trusted_in_a_modal_not_with_a_flag(tuilab3: Lab, tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch
                                                                        ) -> None:
    """A node whose key is not in known_hosts: SSH is refused with the key's fingerprint, the
    wizard asks in a modal (never pointing at --trust-new-hosts), and trusting it reaches the node
    and adds exactly that key."""
    from strixwizard.tui.screens.site import SiteState
    from strixwizard.tui.widgets.confirm import ConfirmationModal
    from tests.support.wizard import wait_for_modal

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    known = tmp_path / "known_hosts"
    site = tuilab3.write_site_yaml(tmp_path / "site.yaml", hosts=tuilab3.hosts[:1], known_hosts=known)
    app = WizardApp(site_file=site, services=SHORT_TESTS)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("s")
        modal = await wait_for_modal(app, pilot, 60)
        assert "SHA256:" in modal.question and "--trust-new-hosts" not in modal.question
        ssh = app.session.of(SiteState).ssh["node0"]
        assert ssh.event == "failed" and "--trust-new-hosts" not in ssh.text, ssh.text
        await pilot.press("y")
        for _ in range(600):  # bounded: the second SSH test, with the confirmed key
            await settle(app, pilot)
            if app.session.of(SiteState).ssh["node0"].event == "done":
                break
            await pilot.pause(0.1)
        assert app.session.of(SiteState).ssh["node0"].event == "done"
        assert not isinstance(app.screen, ConfirmationModal)
        assert len(known.read_text().splitlines()) == 1

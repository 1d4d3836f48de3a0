"""The wizard's Site step: it never sends a newcomer to `init` (the form on the step creates a
site), the form answers inside the form and never under a toast, a bad site file keeps the site
that is open, the hint says what SSH reached, and every new host key is asked in one dialog with
a choice per key."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Static

from tests.support.wizard import (
    make_app,
    notice_text,
    replayed_ssh_app,
    settle,
    sync,
)


@pytest.fixture(autouse=True)
def state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(home))
    return home


@sync
async def test_the_site_step_never_sends_a_newcomer_to_init(tmp_path: Path) -> None:
    app = make_app(site_file=tmp_path / "missing.yaml")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        text = notice_text(app, "#site-info")
        assert "no such site file" in text and "strixwizard init" not in text
        assert "create one with the form on step 1, Site" in text


def _refused(node: str, address: str, fingerprint: str) -> object:
    from strixwizard.discovery import DiscoveredNode
    from strixwizard.model import HostReport

    error = (f"unknown host key for {address}: ssh-ed25519 {fingerprint}; if that is the node's key, "
             "trust it with --trust-new-hosts (it is added to known_hosts)")
    return DiscoveredNode(HostReport(node, f"root@{address}", "ssh", reachable=False, error=error), None)


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
async def test_a_text_field_shows_its_way_out_and_escape_leaves_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In a field the step's letters type into it; the footer then offers Escape (leave the
    field, its text kept) and Ctrl+Q (quit), and after Escape the letters are keys again."""
    from textual.widgets import Input

    monkeypatch.chdir(tmp_path)
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        node = app.screen.query_one("#create-node", Input)
        node.focus()
        await pilot.pause()

        def shown() -> set[str]:
            return {b.binding.key for b in app.active_bindings.values() if b.binding.show}

        assert {"escape", "ctrl+q"} <= shown() and "q" not in shown()
        await pilot.press("q", "d")
        assert node.value == "qd"
        await pilot.press("escape")
        await pilot.pause()
        assert app.focused is None and node.value == "qd"
        assert "q" in shown() and "escape" not in shown()
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code is not None or not app.is_running


@sync
async def test_the_site_form_writes_become_sudo_for_nodes_added_with_the_switch_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The form's sudo switch: the nodes added while it is on are reached as their user through
    `sudo -n` (`become: sudo` in the file, `(sudo)` in the table); the others as they are."""
    from textual.widgets import Checkbox, DataTable, Input

    from strixwizard.site import load_site

    monkeypatch.chdir(tmp_path)
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot)
        screen = app.screen
        node = screen.query_one("#create-node", Input)
        node.focus()
        await pilot.press(*"a=root@10.0.0.11", "enter")
        await pilot.pause()
        switch = screen.query_one("#create-sudo", Checkbox)
        switch.focus()
        await pilot.press("enter")  # a keyboard toggles it, as a user does
        await pilot.pause()
        assert switch.value
        node.focus()
        await pilot.press(*"b=alice@10.0.0.12", "enter")
        await pilot.pause()
        table = screen.query_one("#site-nodes", DataTable)
        assert [str(table.get_row_at(i)[1]) for i in range(table.row_count)] == [
            "root@10.0.0.11", "alice@10.0.0.12 (sudo)"]
        app.set_focus(None)
        await pilot.press("w")
        await settle(app, pilot)
    site = load_site(tmp_path / "site.yaml")
    assert [(n.name, n.user, n.become) for n in site.nodes] == [
        ("a", "root", None), ("b", "alice", "sudo")]

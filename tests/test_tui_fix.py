"""The wizard's Fix step on the demo at 80x24: while a question is open the step waits for the
answer (not "Running"), its sections fold and keep their folds, `f` shows only the failing
findings, Home reaches the top and the Applied panel scrolls into view."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Static
from textual.widgets._collapsible import CollapsibleTitle

from strixwizard.tui.screens.fix import FixGroupView, FixState
from strixwizard.tui.steps import key_of
from strixwizard.tui.widgets.notice import Notice
from tests.support.wizard import make_app, notice_text, settle, step_sections, sync, wait_for_modal


@pytest.fixture(autouse=True)
def state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(home))
    return home


@sync
async def test_while_a_question_is_open_its_step_waits_for_the_answer_not_running() -> None:
    app = make_app(demo=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(key_of("fix"))
        await settle(app, pilot)
        fix_run = app.screen.query_one("#fix-run", Notice)
        await pilot.press("a")
        await wait_for_modal(app, pilot)
        await pilot.pause()
        assert fix_run.display and fix_run.border_title is not None
        assert str(fix_run.border_title) == "Waiting for your answer", fix_run.border_title
        await pilot.press("y")
        await settle(app, pilot)
        assert app.session.of(FixState).applied is not None
        await pilot.press("u")  # the rollback question: the Applied panel is not "Running" behind it
        await wait_for_modal(app, pilot)
        await pilot.pause()
        assert str(fix_run.border_title) == "Waiting for your answer", fix_run.border_title
        await pilot.press("n")
        await settle(app, pilot)
        assert str(fix_run.border_title) == "Applied"


@sync
async def test_fix_sections_fold_and_f_shows_only_the_failing_findings() -> None:
    app = make_app(demo=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(key_of("fix"))
        await settle(app, pilot)
        sections = step_sections(app, ".fix-section")
        assert {s.key for s in sections} >= {"fix node node-a", "fix node node-b"}
        everything = "\n".join(str(s.query_one(Static).render()) for s in sections)
        assert "WARN" in everything and "FAIL" in everything
        first = sections[0]
        first.query_one(CollapsibleTitle).focus()
        await pilot.press("enter")  # folds it, and the fold is kept when the step is drawn again
        await settle(app, pilot)
        assert first.collapsed and app.session.folds[first.key] is True
        await pilot.press(key_of("links"), key_of("fix"))
        await settle(app, pilot)
        assert next(s for s in step_sections(app, ".fix-section") if s.key == first.key).collapsed
        assert "f" in {b.key for (_, b, on, _) in app.active_bindings.values() if b.show and on}
        app.screen.focus_next()  # the key works wherever the focus is on the step
        await pilot.press("f")
        await settle(app, pilot)
        assert "FAIL and ERROR rows only" in notice_text(app, "#fix-status")
        shown = "\n".join(str(s.query_one(FixGroupView).render()) for s in step_sections(app, ".fix-section"))
        assert "FAIL" in shown and "! WARN" not in shown
        assert "fabric.counters" not in shown  # a warning only: filtered out
        await pilot.press("f")
        await settle(app, pilot)
        assert "fabric.counters" in "\n".join(
            str(s.query_one(FixGroupView).render()) for s in step_sections(app, ".fix-section"))


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


def shown_rows(app: object) -> str:
    return "\n".join(str(s.query_one(FixGroupView).render()) for s in step_sections(app, ".fix-section"))


@sync
async def test_after_a_dry_run_fix_marks_what_the_copy_cured_and_offers_no_second_apply() -> None:
    from strixwizard.tui.screens.deploy import DeployState

    app = make_app(demo=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(key_of("fix"))
        await settle(app, pilot)
        assert "cured on the dry-run copy" not in shown_rows(app)
        await pilot.press("a")
        await wait_for_modal(app, pilot)
        await pilot.press("y")
        for _ in range(100):  # bounded: the dry run ends in a second or two
            await settle(app, pilot)
            if not app.busy("fix"):
                break
        await settle(app, pilot)
        status = notice_text(app, "#fix-status")
        assert "DRY RUN" in status and "unchanged" in status, status
        assert "4 of the 10 problems" in status and "link.mtu" in status, status
        assert "a applies" not in status
        shown_keys = {b.key for (_, b, on, _) in app.active_bindings.values() if b.show and on}
        assert "a" not in shown_keys and "u" in shown_keys  # the same plan is not offered again
        rows = shown_rows(app)
        # each cured row is marked where it is listed; the rows the run left alone are not
        for check in ("link.mtu", "dcb.pause_and_pfc", "dcb.fw_lldp ", "rdma.active_mtu"):
            row = rows[rows.index(check):]
            assert row.splitlines()[1].strip().startswith("✓ cured on the dry-run copy"), row[:200]
        row = rows[rows.index("node.rdma_core_version"):]
        assert "cured" not in row.splitlines()[1]
        assert "applied on the dry-run copy" in rows
        await pilot.press(key_of("deploy"))
        for _ in range(100):
            await settle(app, pilot)
            if app.session.of(DeployState).preview is not None:
                break
        await settle(app, pilot)
        deploy = notice_text(app, "#deploy-status")
        assert "MTU differs" in deploy  # the demo's snapshots still have it ...
        assert "dry run cured" in deploy and "i: each warning in full" in deploy, deploy
        await pilot.press("i")  # ... and, in full, says why
        await settle(app, pilot)
        deploy = notice_text(app, "#deploy-status")
        assert "dry run cured" in deploy and "unchanged" in deploy, deploy
        assert "i: one line each" in deploy, deploy
        await pilot.press(key_of("fix"), "u")
        await wait_for_modal(app, pilot)
        await pilot.press("y")
        for _ in range(100):
            await settle(app, pilot)
            if not app.busy("fix"):
                break
        await settle(app, pilot)
        assert "a applies them as a DRY RUN" in notice_text(app, "#fix-status")  # rolled back: Apply again
        assert "cured on the dry-run copy" not in shown_rows(app)


@sync
async def test_fix_shows_a_systemd_unit_as_the_clis_diff_not_an_escaped_string() -> None:
    app = make_app(demo=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press(key_of("fix"))
        await settle(app, pilot)
        rows = shown_rows(app)
        assert "\\n" not in rows
        lines = [line.strip() for line in rows.splitlines()]
        assert "--- (absent)" in lines
        assert "+[Unit]" in lines and "+[Service]" in lines and "+Type=oneshot" in lines
        assert "+ExecStart=ethtool -A enp194s0np0 rx off tx off" in lines
        assert any(line.startswith("@@ -0,0 +1,") for line in lines)

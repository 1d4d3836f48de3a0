"""The wizard as a newcomer meets it, round two (issue 29, finding 11 and the help, filter and
folding it asks for): each test pins one thing a newcomer tripped over at 80x24 on the demo."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.content import Content
from textual.geometry import Region
from textual.widget import Widget
from textual.widgets import Checkbox, DataTable, Input, Select, Static
from textual.widgets._collapsible import CollapsibleTitle

from strixwizard.services.facade import Services
from strixwizard.tui.app import WizardApp
from strixwizard.tui.screens.fix import FixGroupView, FixState
from strixwizard.tui.steps import key_of
from strixwizard.tui.widgets.decode import DecodePanel
from strixwizard.tui.widgets.hanging import hang_lines
from strixwizard.tui.widgets.notice import Notice
from tests.support.wizard import (
    after_the_tests,
    make_app,
    notice_text,
    settle,
    step_sections,
    sync,
    wait_for_modal,
)


@pytest.fixture(autouse=True)
def state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(home))
    return home


def screen_lines(widget: Widget) -> list[str]:
    """What the widget shows, line by line, without its border and padding."""
    region = widget.content_region
    width, height = widget.size.width, widget.size.height
    strips = widget.render_lines(Region(0, 0, width, height))
    left = region.x - widget.region.x
    return [strip.text[left:left + region.width].rstrip() for strip in strips][
        region.y - widget.region.y:region.y - widget.region.y + region.height]


def unhung(widget: Widget) -> list[str]:
    """Screen lines that continue a wrapped line yet start at the left edge, level with the
    lines that begin an item."""
    starts = [line.strip(" \u00a0") for line in str(widget.render()).split("\n")]
    wrong = []
    for line in screen_lines(widget):
        text = line.strip(" \u00a0")
        if text and line[:1] not in (" ", "\u00a0") and not any(s.startswith(text) for s in starts):
            wrong.append(line)
    return wrong


def test_hang_lines_keep_each_line_under_its_own_start() -> None:
    content = Content("title\n\u00a0\u00a0\u00a0\u00a0one two three four five six seven")
    assert [line.plain for line in hang_lines(content, 22)] == [
        "title", "\u00a0\u00a0\u00a0\u00a0one two three four", "      five six seven"]
    assert [line.plain for line in hang_lines(Content("a b"), 10)] == ["a b"]
    # a link card's second end ("⇄ node-b …") wraps as its first ("  node-a …") does
    ends = Content("\u00a0\u00a0node-a eth0 10.0.0.1\n⇄\u00a0node-b eth0 10.0.0.2")
    assert [line.plain for line in hang_lines(ends, 18)] == [
        "\u00a0\u00a0node-a eth0", "    10.0.0.1", "⇄\u00a0node-b eth0", "    10.0.0.2"]


@sync
async def test_wrapped_lines_keep_their_indent_in_links_fix_deploy_and_report() -> None:
    app = make_app(demo=True)
    async with app.run_test(size=(80, 24)) as pilot:
        for step, selector in (("links", ".link-card"), ("fix", ".fix-group"),
                               ("deploy", ".deploy-box"), ("report", "#report-body")):
            await pilot.press(key_of(step))
            await settle(app, pilot)
            widgets = [w for w in app.screen.query(selector) if w.display and isinstance(w, Static)]
            assert widgets, step
            wrapped = 0
            for widget in widgets:
                shown = screen_lines(widget)
                wrapped += len(shown) - len(str(widget.render()).split("\n"))
                assert not unhung(widget), (step, unhung(widget))
            assert wrapped > 0, f"{step}: nothing wrapped at 80 columns, the test shows nothing"
        # a notice's list items ("! doctor FAILs …" on Deploy) wrap under their text, not their mark
        await pilot.press(key_of("deploy"))
        await settle(app, pilot)
        notice = app.screen.query_one("#deploy-status", Notice)
        sources = str(notice.render()).split("\n")
        items = [line for line in sources if line.startswith("! ")]
        assert items and any(len(line) > 76 for line in items)  # some item wraps at 80 columns
        for line in unhung(notice):
            assert not any(line.strip() in item for item in items), line


@sync
async def test_the_decode_table_fits_80_columns_and_the_wizard_picks_the_model() -> None:
    app = make_app(demo=True, services=Services(demo_seconds=0.3))
    async with app.run_test(size=(80, 24)) as pilot:
        await after_the_tests(app, pilot)
        panel = app.screen.query_one(DecodePanel)
        table = panel.query_one(DataTable)
        assert table.row_count and table.virtual_size.width <= table.size.width  # nothing cut off
        note = str(panel.query_one(".decode-note", Static).render())
        assert "--model" not in note and "strixwizard test decode" not in note  # no CLI-only advice
        assert "strixwizard advise" not in note and "every way is in the table above" in note
        chooser = panel.query_one("#decode-model", Select)
        assert chooser.value == "Llama-3.1-70B"
        chooser.value = "Llama-3.1-8B"
        await settle(app, pilot)
        assert str(panel.query_one(".decode-head", Static).render()).startswith("Llama-3.1-8B")


def test_command_line_advice_is_said_as_the_wizard_step_or_key() -> None:
    from strixwizard.tui.cliwords import in_wizard_terms

    refused = ("switch the NICs to RoCE v2 (`strixwizard fix`; `strixwizard doctor` names the cure "
               "under link.transport)")
    assert in_wizard_terms(refused) == ("switch the NICs to RoCE v2 (step 4, Fix; step 2, Discover "
                                        "names the cure under link.transport)")
    assert "strixwizard" not in in_wizard_terms("set one MTU (`strixwizard fix --only link.mtu`)")
    assert "--nodes" not in in_wizard_terms("deploy on the nodes that share one with --nodes A,B")
    assert in_wizard_terms("(`strixwizard doctor` with the same site file says why)") == (
        "(step 2, Discover says why)")
    assert in_wizard_terms("advice: layer split 1.52 vs tensor split 1.71 tok/s at best (llama.cpp; "
                           "`strixwizard advise` for every way)").endswith(
        "(llama.cpp; every way is in the table above)")


@sync
async def test_the_site_step_never_sends_a_newcomer_to_init(tmp_path: Path) -> None:
    app = make_app(site_file=tmp_path / "missing.yaml")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        text = notice_text(app, "#site-info")
        assert "no such site file" in text and "strixwizard init" not in text
        assert "create one with the form on step 1, Site" in text


@sync
async def test_deploy_speaks_of_its_fields_and_keys_not_flags() -> None:
    app = make_app(demo=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(key_of("deploy"))
        await settle(app, pilot)
        screen = app.screen
        labels = [str(box.label) for box in screen.query(Checkbox)]
        assert labels and not any("--" in label for label in labels), labels
        shown = "\n".join(str(w.render()) for w in screen.query(".deploy-box"))
        assert "deploy --rollback" not in shown and "5, u rolls back" in shown
        assert "pass --model" not in shown and "Model field above" in shown
        model = screen.query_one("#deploy-model", Input)
        assert model.placeholder.startswith("vLLM model")
        screen.query_one("#deploy-stack", Select).value = "llama-rpc"
        await settle(app, pilot)
        assert model.placeholder == "GGUF file path on the head"  # not the vLLM stack's words


def footer_keys(app: WizardApp) -> set[str]:
    """The actions the footer offers on the current screen."""
    return {binding.action for (_, binding, enabled, _) in app.active_bindings.values()
            if binding.show and enabled}


@sync
async def test_the_last_step_offers_no_next_and_the_first_no_back() -> None:
    app = make_app(demo=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(key_of("site"))
        await settle(app, pilot)
        assert "next_step" in footer_keys(app) and "prev_step" not in footer_keys(app)
        await pilot.press(key_of("report"))
        await settle(app, pilot)
        assert "next_step" not in footer_keys(app) and "prev_step" in footer_keys(app)
        await pilot.press("n")  # still a no-op, not an error
        await settle(app, pilot)
        assert app.session.state.step == "report"


@sync
async def test_the_report_says_what_the_counters_found_not_no_figure() -> None:
    app = make_app(demo=True, services=Services(demo_seconds=0.3))
    async with app.run_test(size=(120, 40)) as pilot:
        await after_the_tests(app, pilot)
        await pilot.press(key_of("report"))
        await settle(app, pilot)
        body = str(app.screen.query_one("#report-body", Static).render())
        assert "no figure" not in body and "FABRIC" not in body
        assert "fabric counters: the fabric is lossy" in body


def test_usb4_latency_is_said_one_way_everywhere() -> None:
    from strixwizard.tui.views import TRANSPORT_NOTES
    from strixwizard.vendors.usb4net import TCP_LATENCY, TCP_ONLY

    assert TCP_LATENCY in TRANSPORT_NOTES["thunderbolt-net"] and TCP_LATENCY in TCP_ONLY
    assert "50-130" not in TRANSPORT_NOTES["thunderbolt-net"]


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
async def test_question_mark_opens_help_with_keys_steps_verdicts_and_files() -> None:
    from strixwizard.tui.steps import STEPS
    from strixwizard.tui.widgets.help import HelpScreen

    app = make_app(demo=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(key_of("fix"))
        await settle(app, pilot)
        assert "help" in footer_keys(app)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        text = str(app.screen.query_one("#help-text", Static).render())
        for step in STEPS:
            assert f"{step.number} {step.title}" in text
        for said in ("Apply fixes: the planned changes", "only the failing rows", "PASS", "WARN", "FAIL",
                     "ERROR", "SKIP", "demo-state.json", "journal", "dry-runs", "/etc/strixwizard"):
            assert said in text, said
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, HelpScreen) and app.session.state.step == "fix"


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
async def test_discover_lists_every_check_in_folded_sections_and_f_filters_them() -> None:
    app = make_app(demo=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(key_of("discover"))
        await settle(app, pilot)
        sections = step_sections(app, ".check-section")
        assert [s.key for s in sections] == ["discover node node-a", "discover node node-b",
                                             "discover links", "discover site demo"]
        assert all(s.collapsed for s in sections)  # folded until opened: the tables stay on screen
        assert "✗ 2 FAIL" in str(sections[1].query_one(CollapsibleTitle).render())
        sections[1].collapsed = False
        await settle(app, pilot)
        lines = str(sections[1].query_one(".check-lines", Static).render())
        assert "✓ PASS" in lines and "✗ FAIL" in lines
        await pilot.press("f")
        await settle(app, pilot)
        sections = step_sections(app, ".check-section")
        assert [s.key for s in sections] == ["discover node node-b", "discover links"]  # failing only
        assert not sections[0].collapsed  # opened before: still open
        lines = str(sections[0].query_one(".check-lines", Static).render())
        assert "✗ FAIL" in lines and "PASS" not in lines and "WARN" not in lines
        assert "FAIL and ERROR rows only" in notice_text(app, "#discover-status")


@sync
async def test_the_reports_decode_chart_follows_the_model_picked_on_the_test_step() -> None:
    app = make_app(demo=True, services=Services(demo_seconds=0.3))
    async with app.run_test(size=(80, 24)) as pilot:
        await after_the_tests(app, pilot)
        app.screen.query_one("#decode-model", Select).value = "Llama-3.1-8B"
        await settle(app, pilot)
        await pilot.press(key_of("report"))
        await settle(app, pilot)
        saved = app.session.saved["json"].read_text()
        assert '"name": "Llama-3.1-8B"' in saved and "Llama-3.1-70B" not in saved

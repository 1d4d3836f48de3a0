"""The wizard says what the command line says, in its own words (Textual Pilot on the demo): the
Fix step counts the problems as `strixwizard fix` does, the Test step shows the advice of
`strixwizard advise` without sending anyone to a command, command-line advice is said as the
wizard's step or key, and the Deploy step speaks of its fields and keys, not of flags."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest
from textual.widgets import Checkbox, DataTable, Input, Select, Static

from strixwizard.services.facade import Services
from strixwizard.tui.steps import key_of
from strixwizard.tui.widgets.decode import DecodePanel
from tests.support.cli import invoke
from tests.support.wizard import after_the_tests, make_app, notice_text, settle, sync


@pytest.fixture(autouse=True)
def state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(home))
    return home


def command_words() -> re.Pattern[str]:
    """`strixwizard COMMAND` for each command the CLI has (read off its parser)."""
    from strixwizard.cli.main import _parser

    parser = _parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return re.compile(r"strixwizard (" + "|".join(sorted(map(re.escape, sub.choices))) + r")\b")


def shown_text(widgets: list[Static]) -> str:
    return "\n".join(str(w.render()) for w in widgets if w.display)


@sync
async def test_the_fix_step_counts_the_problems_as_fix_does() -> None:
    done = invoke("fix", "--demo", "--json")
    assert done.rc == 0, done.stderr
    summary = done.json()["summary"]
    assert summary["problems"] == (summary["cured_by_plan"] + summary["by_hand"]
                                   + summary["not_planned"])
    assert summary["cured_by_plan"] and summary["by_hand"] and summary["not_planned"]  # all three said
    app = make_app(demo=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(key_of("fix"))
        await settle(app, pilot)
        said = " ".join(notice_text(app, "#fix-status").split())
    counts = re.search(r"finds (\d+) problems \((\d+) failed, (\d+) warnings\): the (\d+) changes "
                       r"planned below \(on node-b\) would cure (\d+) of them.*?; (\d+) to do by hand.*?; "
                       r"(\d+) with no plan here", said)
    assert counts is not None, said
    assert [int(n) for n in counts.groups()] == [
        summary["problems"], summary["failed"], summary["warnings"], summary["changes"],
        summary["cured_by_plan"], summary["by_hand"], summary["not_planned"]]
    assert "above" not in said and not command_words().search(said)  # the plans are below it here


@sync
async def test_the_test_step_shows_every_way_and_names_no_command() -> None:
    app = make_app(demo=True, services=Services(demo_seconds=0.3))
    async with app.run_test(size=(80, 24)) as pilot:
        await after_the_tests(app, pilot)
        panel = app.screen.query_one(DecodePanel)
        text = shown_text(list(app.screen.query(Static)))
        assert "advice:" in text and not command_words().search(text), command_words().findall(text)
        note = " ".join(str(panel.query_one(".decode-note", Static).render()).split())
        assert "advice: layer split" in note and "every way is in the table above" in note
        ways: DataTable[object] = panel.query_one("#decode-ways", DataTable)
        rows = [[str(c) for c in ways.get_row_at(i)] for i in range(ways.row_count)]
        advice = panel_advice(panel)
        assert [(r[0], int(r[1]), r[2], float(r[3])) for r in rows] == [
            (p["split"], p["nodes"], p["interconnect"] or "-", round(p["tok_s"], 2))
            for p in advice["predictions"]]
        assert {r[0] for r in rows} == {"single", "layer", "tensor", "vllm-tp"}
        assert {r[2] for r in rows} == {"-", "rdma", "tcp"}  # one node, and each transport measured
        assert ways.virtual_size.width <= ways.size.width  # fits 80 columns, nothing cut off


def panel_advice(panel: DecodePanel) -> dict[str, object]:
    """The advice the panel was drawn from: the same document `test decode` reports."""
    from strixwizard.decode.fabric import fabric_document

    document = fabric_document(panel.results, panel.shape, panel.nodes)
    advice = document["advice"]
    assert isinstance(advice, dict)
    return advice


def test_the_command_line_keeps_its_own_pointer() -> None:
    from strixwizard.decode.advise import advice_lines

    rec = {"split": "tensor", "nodes": 2, "interconnect": "rdma", "tok_s": 1.7, "reason": "r",
           "rdma_reason": "yes", "layer_vs_tensor": "layer split 1.52 vs tensor split 1.71 tok/s at best"}
    assert advice_lines({"recommendation": rec})[-1].endswith(
        "(llama.cpp; `strixwizard advise` for every way)")


def test_the_fix_steps_words_follow_the_counts() -> None:
    from strixwizard.services.fix import Tally
    from strixwizard.tui.screens.fix import tally_words

    one = Tally(0, 1, 0, (), (), ("nic.pcie_link",))
    assert tally_words(one, 0, (), None) == (
        "Discover finds 1 problem (1 warning): no planned change cures any of them; 1 with no plan "
        "here (nic.pcie_link), each with the reason it matters below.")
    assert tally_words(Tally(0, 0, 0, (), (), ()), 2, ("node-b",), None) == (
        "Discover finds no problem, yet the fix engine has 2 changes planned below (on node-b), "
        "each as before → after.")
    assert tally_words(one, 0, (), "planning the fixes failed: X").endswith("; no plan: planning "
                                                                          "the fixes failed: X.")


def test_the_fix_commands_tally_names_each_id_with_its_count_as_the_wizard_does() -> None:
    """`fix`'s tally line and the Fix step both say `id: N` for an id that raised N problems,
    so the ids add up to the count before them."""
    from strixwizard.services.fix import Tally, tally_line
    from strixwizard.tui.screens.fix import tally_words

    counted = Tally(1, 2, 0, ("link.mtu",), (), ("nic.pcie_link", "nic.pcie_link"))
    line = tally_line(counted, 2)
    assert "2 with no plan here (nic.pcie_link: 2)" in line, line
    assert "(nic.pcie_link: 2)" in tally_words(counted, 2, ("node-b",), None)


@sync
async def test_a_demo_test_run_is_stored_in_the_demos_history_as_test_demo_stores_it(
        state_home: Path) -> None:
    """`strixwizard test --demo` stores its runs in demo-history.sqlite; the Test step's runs on
    the demo go to the same file, and the Report's History panel says so. What the demo measures
    on this machine is its soak (loopback); its replayed recordings are never stored."""
    from tests.support.wizard import wait_for_tests

    app = make_app(demo=True, services=Services(demo_seconds=0.3, soak_bytes=8 << 20))
    async with app.run_test(size=(80, 24)) as pilot:
        await after_the_tests(app, pilot)
        await pilot.press("s")  # the soak dialog, then its default: for real on loopback
        await pilot.pause()
        await pilot.press("s")
        await pilot.pause()
        await wait_for_tests(app, pilot, 90)
        await pilot.press(key_of("report"))
        await settle(app, pilot)
        history_panel = " ".join(str(app.screen.query_one("#report-history").render()).split())
    assert "the demo's runs are stored in the demo's own history" in history_panel
    done = invoke("history", "--demo", "--json", env={"XDG_STATE_HOME": str(state_home)})
    assert done.rc == 0, done.stderr
    document = done.json()
    assert document["history"] == str(state_home / "strixwizard" / "demo-history.sqlite")
    links = document["links"]
    assert links and {link["kind"] for link in links} == {"soak"}  # no recording stored as a run
    assert all(len(link["points"]) == 1 for link in links)  # one run, each link's figure once
    assert not (state_home / "strixwizard" / "history.sqlite").exists()  # never a real site's


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
async def test_deploy_speaks_of_its_fields_and_keys_not_flags() -> None:
    app = make_app(demo=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(key_of("deploy"))
        await settle(app, pilot)
        screen = app.screen
        labels = [str(box.label) for box in screen.query(Checkbox)]
        assert labels and not any("--" in label for label in labels), labels
        shown = "\n".join(str(w.render()) for w in screen.query(".deploy-box"))
        assert "deploy --rollback" not in shown and "u on this step rolls them back" in shown
        assert "pass --model" not in shown and "Model field above" in shown
        model = screen.query_one("#deploy-model", Input)
        assert model.placeholder.startswith("vLLM model")
        screen.query_one("#deploy-stack", Select).value = "llama-rpc"
        await settle(app, pilot)
        assert model.placeholder == "GGUF file path on the head"  # not the vLLM stack's words

"""The Test step's panel "what this fabric buys you" renders on the demo (Textual Pilot); at 80
columns its table fits and the wizard picks the model, with no command-line-only advice."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from textual.widgets import DataTable, Select, Static

from strixwizard.services.facade import Services
from strixwizard.tui.app import WizardApp
from strixwizard.tui.steps import key_of
from strixwizard.tui.widgets.decode import TITLE, DecodePanel
from tests.support.wizard import after_the_tests, make_app, settle, sync


@pytest.fixture(autouse=True)
def state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(home))
    return home


async def _walk() -> None:
    app = WizardApp(demo=True, resume=False, services=Services(demo_seconds=0.3))
    async with app.run_test(size=(120, 60)) as pilot:
        await pilot.press(key_of("test"))
        await app.workers.wait_for_complete()
        await pilot.pause()
        panel = app.screen.query_one(DecodePanel)
        assert not panel.display  # nothing measured yet
        await pilot.press("r")
        for _ in range(600):
            await pilot.pause(0.1)
            if not app.busy("tests"):
                break
        await app.workers.wait_for_complete()
        await pilot.pause()
        await pilot.pause()
        panel = app.screen.query_one(DecodePanel)
        assert panel.display and panel.border_title == TITLE
        table: DataTable[str] = panel.query_one(DataTable)
        rows = {str(table.get_row_at(i)[0]): [str(c) for c in table.get_row_at(i)]
                for i in range(table.row_count)}
        # the demo's TCP is the recording's (never this machine's loopback beside it)
        assert set(rows) == {"rdma", "tcp"}
        assert len(table.columns) == 3  # transport, all-reduce µs, source: the predictions are the ways'
        assert float(rows["rdma"][1]) < float(rows["tcp"][1])
        head = str(panel.query_one(".decode-head", Static).render())
        assert "Llama-3.1-70B" in head and "16 KiB per all-reduce" in head
        note = str(panel.query_one(".decode-note", Static).render())
        assert "rdma: recorded" in note and "tcp: estimated" in note  # each row's source
        assert "rdma: RCCL all_reduce_perf" in note and "(recorded)" in note and "llm-tracker.info" in note
        # the advice of `strixwizard advise`, from the figures this run measured
        assert "advice: fastest is " in note and " on 2 node(s)" in note and "advice: does RDMA help?" in note


def test_the_fabric_panel_renders_on_the_demo() -> None:
    asyncio.run(_walk())


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


@sync
async def test_the_model_picker_takes_a_quant_and_a_model_file(tmp_path: Path) -> None:
    """A catalog model's quantization and a GGUF or config.json path, each read by the service
    `advise --model` uses: the panel predicts for the same shape the command line reads; a file
    that cannot be read keeps the model shown and says why, its words shown as they are."""
    from strixwizard.decode.gguf_header import TensorInfo
    from strixwizard.decode.quants import Q4_K
    from strixwizard.services.advise import model_shape
    from tests.support.gguf_file import write_gguf

    app = make_app(demo=True, services=Services(demo_seconds=0.3))
    async with app.run_test(size=(80, 24)) as pilot:
        await after_the_tests(app, pilot)
        panel = app.screen.query_one(DecodePanel)
        quant = panel.query_one("#decode-quant", Select)
        assert quant.value == "checkpoint" and "BF16" in panel.shape.precision
        quant.value = "Q4_K_M"
        await settle(app, pilot)
        assert panel.shape == model_shape("Llama-3.1-70B", "Q4_K_M")
        assert str(panel.query_one(".decode-head", Static).render()).startswith("Llama-3.1-70B Q4_K_M")
        panel.query_one("#decode-model", Select).value = "Qwen3-30B-A3B"
        await settle(app, pilot)
        assert quant.value == "checkpoint" and panel.shape == model_shape("Qwen3-30B-A3B")
        assert "Q3_K_M" in [value for _label, value in quant._options]

        tensors = [TensorInfo(f"blk.{i}.attn_q.weight", Q4_K, (4096, 4096)) for i in range(32)]
        meta = {"general.architecture": "llama", "general.name": "mine[/b] \x1b[31m",
                "llama.block_count": 32, "llama.embedding_length": 4096}
        gguf = write_gguf(tmp_path / "mine.gguf", meta, tensors)
        field = panel.query_one("#decode-file")
        field.focus()
        field.value = str(gguf)  # type: ignore[attr-defined]
        await pilot.press("enter")
        await settle(app, pilot)
        assert panel.shape == model_shape(str(gguf))
        head = str(panel.query_one(".decode-head", Static).render())
        assert head.startswith("mine[/b] \\x1b[31m")  # the file's words as they are, no control char
        assert "\x1b" not in head

        (tmp_path / "broken.json").write_text("{not json", encoding="utf-8")
        field.value = str(tmp_path / "broken.json")  # type: ignore[attr-defined]
        await pilot.press("enter")
        await settle(app, pilot)
        assert panel.shape == model_shape(str(gguf))  # kept
        said = str(panel.query_one(".decode-file-note", Static).render())
        assert said.startswith("not read: --model") and "broken.json" in said

"""The Test step's panel "what this fabric buys you": predicted decode tokens/s of a model on
one node and with tensor parallelism over each measured transport, with the share of each
token spent communicating and where every figure comes from (see strixwizard.decode)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Input, Select, Static

from strixwizard.decode.advise import advice_lines
from strixwizard.decode.catalog import DEFAULT_MODEL, entry_of, from_catalog, names, quants_of
from strixwizard.decode.collectives import CollectivePoint, curves
from strixwizard.decode.fabric import fabric_document
from strixwizard.errors import UsageError
from strixwizard.live.results import Measurement
from strixwizard.tui.cliwords import in_wizard_terms
from strixwizard.tui.text import lines, outside
from strixwizard.tui.widgets.table import TextTable

TITLE = "What this fabric buys you"
#: The quant picker's entry for a catalog model at its checkpoint's own precision.
CHECKPOINT = "checkpoint"
FILE_HINT = "or a model file: /path/model.gguf or config.json (Enter)"


def quant_options(model: str) -> list[tuple[str, str]]:
    """The llama.cpp quantizations the catalog has for `model`, after its checkpoint."""
    return [("checkpoint precision", CHECKPOINT),
            *((q.name, q.name) for q in quants_of(entry_of(model)))]
BATCH = 1  # one sequence: the latency a user of a chat sees


#: Over the table of every way to run the model (the advice's predictions, as the advisor lists them).
WAYS_HEAD = ("Every way to run it: one node, llama.cpp layer or tensor split, vLLM TP, over each "
             "transport measured (ms per token):")


def show_ways(head: Static, table: TextTable, advice: dict[str, Any] | None) -> None:
    """The advice's predictions, one row per way: the advisor's table, in the wizard."""
    table.clear(columns=True)
    head.display = table.display = advice is not None
    if advice is None:
        head.update("")
        return
    head.update(outside(WAYS_HEAD))
    table.add_columns("split", "nodes", "over", "tok/s", "t_comp", "t_comm", "fits")
    for way in advice["predictions"]:
        table.add_row(way["split"], str(way["nodes"]), way["interconnect"] or "-", f"{way['tok_s']:.2f}",
                      f"{way['t_comp_ms']:.1f}", f"{way['t_comm_ms']:.1f}", "yes" if way["fits"] else "NO")


class DecodePanel(Vertical):
    DEFAULT_CSS = """
    DecodePanel { border: round $primary; padding: 0 1; height: auto; margin: 1 0; }
    DecodePanel .decode-note { color: $text-muted; }
    DecodePanel .decode-ways-head { margin: 1 0 0 0; }
    DecodePanel DataTable { height: auto; }
    DecodePanel #decode-pick { height: auto; }
    DecodePanel #decode-model { width: 34; }
    DecodePanel #decode-quant { width: 26; }
    DecodePanel #decode-file { width: 1fr; margin: 0 0 1 0; }
    DecodePanel .decode-file-note { color: $warning; }
    """

    def __init__(self, model: str = DEFAULT_MODEL, nodes: int = 2, id: str | None = None) -> None:
        super().__init__(id=id)
        self.shape = from_catalog(model)
        self.catalog_model = self.shape.name  # the catalog entry the pickers show
        self.nodes = max(2, nodes)
        self.results: list[Measurement] = []

    def compose(self) -> ComposeResult:
        with Horizontal(id="decode-pick"):
            yield Select([(name, name) for name in names()], value=self.shape.name, allow_blank=False,
                         compact=True, id="decode-model")
            yield Select(quant_options(self.shape.name), value=CHECKPOINT, allow_blank=False,
                         compact=True, id="decode-quant")
        yield Input(placeholder=FILE_HINT, compact=True, id="decode-file")
        yield Static(classes="decode-file-note")
        yield Static(classes="decode-head")
        yield TextTable(cursor_type="none", zebra_stripes=True, id="decode-tp")
        yield Static(classes="decode-ways-head")
        yield TextTable(cursor_type="none", zebra_stripes=True, id="decode-ways")
        yield Static(classes="decode-note")

    def on_mount(self) -> None:
        self.border_title = TITLE
        self._draw()

    @on(Select.Changed, "#decode-model")
    def _model_chosen(self, event: Select.Changed) -> None:
        """Another model from the catalog: its decode sizes, predicted from the same tests, at
        its checkpoint's precision until a quantization is picked."""
        if isinstance(event.value, str) and event.value != self.catalog_model:
            self.catalog_model = event.value
            quant = self.query_one("#decode-quant", Select)
            with quant.prevent(Select.Changed):
                quant.set_options(quant_options(event.value))
                quant.value = CHECKPOINT
            self._read(event.value, None)

    @on(Select.Changed, "#decode-quant")
    def _quant_chosen(self, event: Select.Changed) -> None:
        """A llama.cpp quantization of the catalog model: the bytes a token reads follow that
        file's tensor types, as `advise --model NAME --quant Q`."""
        if isinstance(event.value, str):
            self._read(self.catalog_model, None if event.value == CHECKPOINT else event.value)

    @on(Input.Submitted, "#decode-file")
    def _file_given(self, event: Input.Submitted) -> None:
        """A model file (GGUF or config.json), read as `advise --model FILE` reads it."""
        path = event.value.strip()
        if path:
            self._read(path, None)

    def _read(self, model: str, quant: str | None) -> None:
        """The shape through the service `advise --model` uses; a file that cannot be read
        keeps the model shown and says why."""
        from strixwizard.services.advise import model_shape

        note = self.query_one(".decode-file-note", Static)
        try:
            shape = model_shape(model, quant)
        except UsageError as error:
            note.update(outside(f"not read: {error}"))
            return
        note.update("")
        self.shape = shape
        self._draw()

    def show(self, results: Sequence[Measurement], nodes: int) -> None:
        self.results, self.nodes = list(results), max(2, nodes)
        if self.is_mounted:
            self._draw()

    def _draw(self) -> None:
        shape = self.shape
        document = fabric_document(self.results, shape, self.nodes)
        head = self.query_one(".decode-head", Static)
        note = self.query_one(".decode-note", Static)
        table = self.query_one("#decode-tp", TextTable)
        table.clear(columns=True)
        self.display = bool(self.results)
        points = document["collectives"]
        show_ways(self.query_one(".decode-ways-head", Static), self.query_one("#decode-ways", TextTable),
                  document.get("advice") if points else None)
        if not points:
            head.update(outside(f"{shape.name}: no all-reduce or latency figure yet: run the tests (r)."))
            note.update("")
            return
        message = shape.message_bytes(BATCH)
        head.update(outside(f"{shape.name}, batch {BATCH} ({message // 1024} KiB per all-reduce, "
                            f"2 x {shape.layers} per token), {document['mem_bandwidth_gbps']:g} GB/s "
                            "per node"))
        # what the predictions are read off: each transport's all-reduce at the decode size (the
        # one table of predictions is the ways' below: the rows the advice's "fastest" is chosen from)
        table.add_columns("transport", "all-reduce µs", "source")
        sources = []
        for curve in curves([CollectivePoint.from_json(p) for p in points]):
            loopback = any("loopback" in str(p.get("note", "")) for p in points
                           if p["transport"] == curve.transport)
            name = f"{curve.transport} (loopback)" if loopback else curve.transport
            table.add_row(name, f"{curve.two_ranks(message):.1f}", curve.source)
            sources.append(f"{name}: {curve.source}")
        notes = list(dict.fromkeys(f"{p['transport']}: {p['note']} ({p['source']})"
                                   for p in points if p.get("note")))
        advice = [in_wizard_terms(line) for line in advice_lines(document["advice"])
                  ] if document.get("advice") else []
        note.update(lines([*sources, *advice, *notes, f"memory bandwidth: {document['mem_bandwidth_source']}",
                           "the model above sets the decode sizes; the figures are read off the "
                           "tests' all-reduce and latency at those sizes"]))

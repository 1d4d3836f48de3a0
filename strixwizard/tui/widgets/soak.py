"""The Test step's soak: the dialog that chooses pairs and duration, and the panel that shows
each pair's progress, then its verdict per direction (strixwizard.live.soak)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, RadioButton, RadioSet, Static

from strixwizard.live.results import Measurement, cause, overall_status
from strixwizard.live.schedule import in_rounds
from strixwizard.live.soak import SoakProgress
from strixwizard.model import Status, pair_text
from strixwizard.tui.text import lines, outside
from strixwizard.tui.widgets.table import TextTable

#: What the soak proves and how it judges, in the dialog and the panel.
RULE = ("Both directions at once; every 256 KiB block carries its position and a BLAKE2 digest, so "
        "a flipped, dropped, duplicated or reordered byte is found and located. FAIL: a block "
        "arrived wrong. WARN: every byte right, but the links' error counters grew (frames "
        "damaged below TCP). PASS otherwise. Esc stops it; nothing stays on the nodes.")
#: The dialog's shorter words (it must fit 80x24 with every choice and its buttons)
SHORT_RULE = ("Both ways at once, every block checked. FAIL: a byte arrived wrong; WARN: error "
              "counters grew; PASS otherwise. Esc stops it, leaving nothing on the nodes.")
BAR = 24


@dataclass(frozen=True)
class SoakChoice:
    pairs: list[tuple[str, str]]
    seconds: float


def duration_label(seconds: float) -> str:
    return f"{seconds / 60:g} min" if seconds >= 60 else f"{seconds:g} s"


class SoakModal(ModalScreen[SoakChoice | None]):
    """Which pair (or every pair, in rounds of disjoint pairs) and for how long; s starts."""

    DEFAULT_CSS = """
    SoakModal { align: center middle; }
    SoakModal > Vertical {
        width: 80; max-width: 95%; height: auto; max-height: 95%; overflow-y: auto;
        border: thick $primary; background: $surface; padding: 0 2;
    }
    SoakModal RadioSet { width: 100%; }
    SoakModal #soak-seconds { layout: horizontal; }
    SoakModal #soak-seconds RadioButton { width: auto; margin-right: 2; }
    SoakModal .soak-rule { color: $text-muted; }
    SoakModal .soak-label { margin-top: 1; text-style: bold; }
    SoakModal Horizontal { height: auto; align-horizontal: right; }
    SoakModal Button { margin-left: 2; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("s", "start", "Start the soak"),
        Binding("escape", "cancel", "Cancel"),
    ]

    def __init__(self, pairs: Sequence[tuple[str, str]], nodes: Sequence[str],
                 durations: Sequence[float]) -> None:
        super().__init__()
        self.pairs = list(pairs)
        self.rounds = len(in_rounds(self.pairs, nodes))
        self.durations = list(durations)

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(outside("Soak: check every byte of a link, both ways at once", "bold"))
            yield Static(outside(SHORT_RULE), classes="soak-rule")
            yield Static("Pair", classes="soak-label")
            with RadioSet(id="soak-pairs"):
                for i, (a, b) in enumerate(self.pairs):
                    yield RadioButton(outside(pair_text(a, b)), value=i == 0, id=f"soak-pair-{i}")
                if len(self.pairs) > 1:
                    yield RadioButton(id="soak-every-pair", label=outside(
                        f"every pair ({len(self.pairs)}), in {self.rounds} round(s) of disjoint "
                        "pairs: each round takes the duration below"))
            yield Static("Duration of each pair", classes="soak-label")
            with RadioSet(id="soak-seconds"):
                for i, seconds in enumerate(self.durations):
                    default = " (default)" if i == 0 else ""
                    yield RadioButton(outside(duration_label(seconds) + default), value=i == 0,
                                      id=f"soak-seconds-{i}")
            with Horizontal():
                yield Button("Cancel (Esc)", id="soak-cancel")
                yield Button("Start (s)", id="soak-start", variant="primary")

    def on_mount(self) -> None:
        self.query_one("#soak-start", Button).focus()

    def choice(self) -> SoakChoice:
        pair = self.query_one("#soak-pairs", RadioSet).pressed_index
        when = self.query_one("#soak-seconds", RadioSet).pressed_index
        pairs = self.pairs if pair >= len(self.pairs) else [self.pairs[max(pair, 0)]]
        return SoakChoice(pairs, self.durations[max(when, 0)])

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "soak-start":
            self.action_start()
        else:
            self.action_cancel()

    def action_start(self) -> None:
        self.dismiss(self.choice())

    def action_cancel(self) -> None:
        self.dismiss(None)


def progress_line(progress: SoakProgress) -> str:
    filled = round(progress.fraction * BAR)
    return f"{'█' * filled}{'░' * (BAR - filled)} {progress.text}"


def direction_rows(results: Sequence[Measurement]) -> list[list[str]]:
    """One row per direction of every soaked pair: what arrived, and what was wrong with it."""
    rows = []
    for m in results:
        if m.kind != "soak":
            continue
        verdict = m.status.value.upper() if m.status else "?"
        for d in m.detail.get("directions", []):
            rows.append([f"{d['from']} -> {d['to']}", f"{int(d['bytes']) / 2**20:,.0f}",
                         str(d["blocks"]), str(d["corrupted"]), str(d["dropped"]),
                         str(d["duplicated"]), verdict])
        if not m.detail.get("directions"):
            rows.append([m.pair_label, "", "", "", "", "", verdict])
    return rows


def verdict_line(results: Sequence[Measurement]) -> str:
    """The soak's verdict and what decided it; a pass says how much was checked, how fast."""
    status = overall_status(results)
    soaks = [m for m in results if m.kind == "soak"]
    if status is Status.PASS and soaks:
        rates = ", ".join(f"{m.pair_label} {m.figure:.2f} {m.unit}" for m in soaks
                          if m.figure is not None)
        return (f"Soak PASS: every block of {len(soaks)} pair(s) arrived right, both ways at "
                f"once ({rates})")
    return f"Soak {status.value.upper()}: {cause(results)}"


class SoakPanel(Vertical):
    """Hidden until a soak runs; then a bar per pair, then the verdict and a row per direction."""

    DEFAULT_CSS = """
    SoakPanel { border: round $primary; padding: 0 1; height: auto; margin: 1 0; }
    SoakPanel .soak-note { color: $text-muted; }
    SoakPanel DataTable { height: auto; }
    """

    def compose(self) -> ComposeResult:
        yield Static(classes="soak-head")
        yield Static(classes="soak-progress")
        yield TextTable(cursor_type="none", zebra_stripes=True)
        yield Static(classes="soak-note")

    def on_mount(self) -> None:
        self.border_title = "Soak"

    def show(self, pairs: Sequence[tuple[str, str]], seconds: float,
             progress: dict[tuple[str, str], SoakProgress], results: Sequence[Measurement],
             outcome: str | None, running: bool, notes: Sequence[str] = ()) -> None:
        """`notes`: where the soak was stored in the test history, or that it came from an
        earlier session's report."""
        self.display = True
        head = self.query_one(".soak-head", Static)
        bars = self.query_one(".soak-progress", Static)
        note = self.query_one(".soak-note", Static)
        table = self.query_one(TextTable)
        each = duration_label(seconds)
        if running or outcome is None:
            head.update(outside(f"Soaking {len(pairs)} pair(s), {each} each: "
                                f"{sum(1 for m in results if m.kind == 'soak')} done"))
        elif outcome == "cancelled":
            head.update(outside("Soak cancelled: its programs were stopped; s soaks again.",
                                "bold"))
        else:
            head.update(outside(verdict_line(results), "bold"))
        done = {m.pair for m in results if m.kind == "soak"}
        bars.update(lines([progress_line(p) for pair, p in progress.items() if pair not in done]))
        table.clear(columns=True)
        rows = direction_rows(results)
        table.display = bool(rows)
        if rows:
            table.add_columns("direction", "MiB checked", "blocks", "corrupted", "dropped",
                              "duplicated", "pair verdict")
            for row in rows:
                table.add_row(*row)
        paths = [f"{m.pair_label} over {m.path}" for m in results if m.kind == "soak" and m.path]
        counters = [m.summary for m in results if m.kind != "soak" and m.summary]
        note.update(lines([*paths, *counters, *notes, RULE]))

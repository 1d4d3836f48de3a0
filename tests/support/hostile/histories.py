"""Hostile test histories for `strixwizard history` and `advise --history`: a real history
recorded through the history API (`tests/support/history.py`, as `strixwizard test` records
it), then one stored row changed in the SQLite file the way a corrupted disk, a hand edit or
an older version could leave it. Each once broke a reader (a traceback, `NaN` in JSON, a
negative speed advised)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.support.history import PAIR, store_run

#: The catalog model a stored calibration names (`advise --model` of the same name uses it).
CALIBRATED_MODEL = "Llama-3.1-8B"
_RDMA_LATENCY = "kind = 'latency' AND transport = 'rdma' AND run_id = 2"


def _recorded(path: Path) -> sqlite3.Connection:
    store_run(path, 1, rdma=5.0, tcp=25.0, gbps=90.0)
    store_run(path, 2, rdma=5.5, tcp=26.0, gbps=88.0)
    return sqlite3.connect(path)


def _set_document(path: Path, change: Callable[[dict[str, Any]], str]) -> None:
    with _recorded(path) as db:
        (document,) = db.execute(f"SELECT document FROM results WHERE {_RDMA_LATENCY}").fetchone()
        db.execute(f"UPDATE results SET document = ? WHERE {_RDMA_LATENCY}",
                   (change(json.loads(document)),))


def _with(**fields: Any) -> Callable[[Path], None]:
    return lambda path: _set_document(path, lambda doc: json.dumps({**doc, **fields}))


def _median_nan(path: Path) -> None:
    def change(doc: dict[str, Any]) -> str:
        doc["latency_us"]["median"] = float("nan")
        return json.dumps(doc)  # writes NaN, as Python's encoder does unless told not to
    _set_document(path, change)


def _figure_column(value: object) -> Callable[[Path], None]:
    def build(path: Path) -> None:
        with _recorded(path) as db:
            db.execute(f"UPDATE results SET figure = ? WHERE {_RDMA_LATENCY}", (value,))
    return build


def _deep(path: Path) -> None:
    _set_document(path, lambda _doc: '{"a":' * 50_000 + "1" + "}" * 50_000)


def _calibration(tok_s: float) -> Callable[[Path], None]:
    """A `test decode --calibrate` row as an older version stored it, whatever the node said."""
    def build(path: Path) -> None:
        document = {"kind": "calibration", "transport": "none", "tool": "llama-server",
                    "pair": list(PAIR), "role": "verdict", "status": "pass", "summary": "",
                    "figure": 1.0, "unit": "ms/token", "source": "measured",
                    "detail": {"tok_s": tok_s, "model": CALIBRATED_MODEL, "node": PAIR[0]}}
        with _recorded(path) as db:
            db.execute("INSERT INTO results (run_id, pair_key, kind, transport, tool, status, figure, "
                       "unit, document) VALUES (2, ?, 'calibration', 'none', 'llama-server', 'pass', "
                       "1.0, 'ms/token', ?)", ("|".join(sorted(PAIR)), json.dumps(document)))
    return build


#: name -> builder of a history file at the path given
HISTORIES: dict[str, Callable[[Path], None]] = {
    "figure-infinite": _figure_column(float("inf")),
    "figure-column-text": _figure_column("fast"),
    "figure-negative": _figure_column(-3.0),
    "document-nested-deep": _deep,
    "document-not-json": lambda path: _set_document(path, lambda _doc: "{not json"),
    "document-number-overflow": lambda path: _set_document(
        path, lambda doc: json.dumps(doc).replace('"figure": 5.5', '"figure": 1e400')),
    "pair-of-one-node": _with(pair=[PAIR[0]]),
    "figure-text": _with(figure="fast"),
    "status-unknown": _with(status="splendid"),
    "median-nan": _median_nan,
    "calibration-negative": _calibration(-5.0),
    "calibration-huge": _calibration(1e300),
}

"""The test history read back (`strixwizard history`, `advise --history`): a stored row that
breaks the read-back rule (a figure of infinity, a document nested 50,000 deep, a pair of one
node, a median of NaN, a calibration of -5 tok/s) is skipped with a note, never fatal, and no
`NaN` or `Infinity` reaches a JSON document; and nothing non-finite is ever stored."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from strixwizard.live.history import HistoryError, record_run
from strixwizard.live.results import LatencyStats, Measurement
from strixwizard.model import Status
from tests.support.cli import invoke
from tests.support.history import PAIR
from tests.support.hostile.histories import CALIBRATED_MODEL, HISTORIES
from tests.support.strict_json import strict_loads


@pytest.fixture(params=sorted(HISTORIES))
def hostile_history(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, Path]:
    path = tmp_path / "history.sqlite"
    HISTORIES[request.param](path)
    return request.param, path


def _skipped(document: dict[str, Any], family: str) -> None:
    if family.startswith("calibration"):
        return  # a calibration is no series `history` shows; advise reads it
    assert document["skipped"] and "skipped a stored measurement of run #2" in document["skipped"][0]


def test_history_skips_the_bad_row_with_a_note_and_shows_the_rest(hostile_history: tuple[str, Path]
                                                                   ) -> None:
    family, path = hostile_history
    result = invoke("history", "--history", str(path), "--json")
    assert "Traceback" not in result.stderr and result.rc in (0, 1), (result.rc, result.stderr[-2000:])
    document = strict_loads(result.stdout)
    _skipped(document, family)
    rdma = next(link for link in document["links"]
                if link["transport"] == "rdma" and link["kind"] == "latency")
    assert rdma["points"][0]["figure"] == 5.0  # run 1 is untouched and still shown
    text = invoke("history", "--history", str(path))
    assert text.rc == result.rc and "Traceback" not in text.stderr
    if not family.startswith("calibration"):
        assert "note: skipped a stored measurement of run #2" in text.stderr


def test_advise_from_a_hostile_history_skips_the_row_and_writes_strict_json(
        hostile_history: tuple[str, Path]) -> None:
    _family, path = hostile_history
    result = invoke("advise", "--model", CALIBRATED_MODEL, "--history", str(path), "--json")
    assert result.rc == 0, (result.rc, result.stdout[-800:], result.stderr[-2000:])
    document = strict_loads(result.stdout)
    notes = " ".join(document["assumptions"]["notes"]) if "assumptions" in document else result.stdout
    assert "skipped a stored measurement" in notes
    assert "compute from the stored" not in notes  # no calibration of -5 or 1e300 tok/s is used
    assert all(p["tok_s"] >= 0 for p in document["predictions"])


def test_a_stored_calibration_in_range_is_used(tmp_path: Path) -> None:
    path = tmp_path / "history.sqlite"
    HISTORIES["calibration-negative"](path)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE results SET document = replace(document, '-5.0', '7.5') "
                   "WHERE kind = 'calibration'")
    result = invoke("advise", "--model", CALIBRATED_MODEL, "--history", str(path))
    assert result.rc == 0 and "compute from the stored `test decode --calibrate`" in result.stdout
    assert "7.50 tok/s" in result.stdout


@pytest.mark.parametrize("figure", [float("inf"), float("nan"), -1.0])
def test_a_non_finite_or_negative_figure_is_never_stored(tmp_path: Path, figure: float) -> None:
    path = tmp_path / "history.sqlite"
    good = Measurement("latency", "rdma", "ib_write_lat", PAIR, Status.PASS, "", figure=5.0, unit="µs")
    record_run("lab", "test latency", "2026-03-01T10:00:00+00:00", [good], path)
    bad = Measurement("rccl", "rdma", "all_reduce_perf", PAIR, Status.PASS, "", figure=figure,
                      unit="GB/s busbw")
    with pytest.raises(HistoryError, match="history not written"):
        record_run("lab", "test rccl", "2026-03-02T10:00:00+00:00", [good, bad], path)
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT count(*) FROM runs").fetchone() == (1,)


def test_a_non_finite_figure_inside_the_document_is_never_stored(tmp_path: Path) -> None:
    path = tmp_path / "history.sqlite"
    stats = LatencyStats(1.0, float("nan"), 1.0, 1.0, 1.0, 1.0)
    bad = Measurement("latency", "rdma", "ib_write_lat", PAIR, Status.PASS, "", figure=5.0, unit="µs",
                      latency=stats)
    with pytest.raises(HistoryError):
        record_run("lab", "test latency", "2026-03-01T10:00:00+00:00", [bad], path)
    calibration = Measurement("calibration", "none", "llama-server", PAIR, Status.PASS, "", figure=1.0,
                              unit="ms/token", detail={"tok_s": -5.0})
    with pytest.raises(HistoryError, match="tok_s"):
        record_run("lab", "test decode", "2026-03-01T10:00:00+00:00", [calibration], path)

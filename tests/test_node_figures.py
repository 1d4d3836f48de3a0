"""Figures a node prints are read back by the rule (`strixwizard/readback.py`): an
all_reduce_perf row of `inf` (text) or `Infinity` (the `-J` document) and a calibration's
`predicted_per_token_ms` of `true`, -5, 1e400 or 1e-300 are a named ERROR verdict with the
reason, never PASS, never a non-finite figure in JSON or in the test history."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from strixwizard.decode.calibrate import CalibrationSettings, calibration_of
from strixwizard.live.history import record_run
from strixwizard.live.rccl import rccl_measurement
from strixwizard.live.rccl_output import parse_collective_json
from strixwizard.model import Status
from strixwizard.readback import dumps
from tests.support.hostile.node_outputs import CALIBRATION_LINES, RCCL_JSONS, RCCL_TEXT, RCCL_TEXTS
from tests.support.strict_json import strict_loads

DEVICES = ["rocep194s0:1"]


def _stored_cleanly(m: object, tmp_path: Path) -> None:
    """The verdict's JSON is strict, and the history takes it (nothing non-finite in it)."""
    from strixwizard.live.results import Measurement

    assert isinstance(m, Measurement)
    strict_loads(dumps(m.to_json()))
    record_run("lab", "test", "2026-03-01T10:00:00+00:00", [m], tmp_path / "history.sqlite")


@pytest.mark.parametrize("name", sorted(RCCL_TEXTS))
def test_a_non_finite_rccl_row_is_an_error_not_a_pass(name: str, tmp_path: Path) -> None:
    m = rccl_measurement(("a", "b"), RCCL_TEXTS[name], DEVICES, "path", expected_ranks=2)
    assert m.status is Status.ERROR, m.summary
    assert "not a finite number" in m.summary and "GB/s" not in m.summary
    assert m.figure is None
    _stored_cleanly(m, tmp_path)


@pytest.mark.parametrize("name", sorted(RCCL_JSONS))
def test_a_non_finite_figure_in_the_j_document_is_an_error(name: str, tmp_path: Path) -> None:
    log = "\n".join(line for line in RCCL_TEXT.splitlines() if "NCCL INFO" in line)
    m = rccl_measurement(("a", "b"), log, DEVICES, "path", from_json=parse_collective_json(RCCL_JSONS[name]),
                         expected_ranks=2)
    assert m.status is Status.ERROR and "not a finite number" in m.summary, m.summary
    _stored_cleanly(m, tmp_path)


def test_the_real_run_still_passes() -> None:
    m = rccl_measurement(("a", "b"), RCCL_TEXT, DEVICES, "path", expected_ranks=2)
    assert m.status is Status.PASS and m.figure == pytest.approx(5.81)


SETTINGS = CalibrationSettings(model="/models/m.gguf")


@pytest.mark.parametrize("name", sorted(CALIBRATION_LINES))
def test_a_calibration_figure_that_is_no_speed_is_an_error_with_the_reason(name: str,
                                                                             tmp_path: Path) -> None:
    m = calibration_of("node-a", ("node-a", "node-b"), SETTINGS, CALIBRATION_LINES[name] + "\n", 0, "")
    assert m.status is Status.ERROR, m.summary
    assert "node-a: llama-server's timing is not a figure" in m.summary
    assert m.figure is None and not m.detail
    _stored_cleanly(m, tmp_path)


def test_a_calibration_in_range_passes_and_is_what_advise_takes() -> None:
    line = '{"event": "result", "predicted_n": 32, "predicted_per_token_ms": 40.0}'
    m = calibration_of("node-a", ("node-a", "node-b"), SETTINGS, line + "\n", 0, "")
    assert m.status is Status.PASS and m.detail["tok_s"] == 25.0 and math.isfinite(m.figure or 0)


def test_a_j_document_nested_thousands_deep_is_refused_not_a_traceback() -> None:
    from strixwizard.live.rccl_output import RcclOutputError

    with pytest.raises(RcclOutputError, match="not JSON"):
        parse_collective_json('{"results":' + "[" * 100_000 + "]" * 100_000 + "}")

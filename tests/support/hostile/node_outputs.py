"""Hostile node outputs: what a broken or hostile node could print where a figure is read
(all_reduce_perf's table and `-J` document, the calibration's result line). The RCCL ones are
the real published run in tests/data/live with one figure changed."""

from __future__ import annotations

from pathlib import Path

LIVE = Path(__file__).resolve().parents[2] / "data" / "live"
RCCL_TEXT = (LIVE / "all_reduce_perf_gfx1151_net_ib.txt").read_text()
RCCL_J = (LIVE / "all_reduce_perf_gfx1151_J_report.json").read_text()
_LAST_ROW = ("   134217728      33554432     float     sum      -1    23120    5.81    5.81      0    "
             "23098    5.81    5.81      0")


def _row(busbw: str) -> str:
    changed = _LAST_ROW.replace("5.81      0    23098", f"{busbw:>4}      0    23098")
    assert changed != _LAST_ROW
    return changed


#: name -> all_reduce_perf output (log and table), one figure changed
RCCL_TEXTS: dict[str, str] = {
    "busbw-inf": RCCL_TEXT.replace(_LAST_ROW, _row("inf")),
    "busbw-nan": RCCL_TEXT.replace(_LAST_ROW, _row("nan")),
    "average-inf": RCCL_TEXT.replace("# Avg bus bandwidth    : 2.54512", "# Avg bus bandwidth    : inf"),
}

def _last_busbw(value: str) -> str:
    head, _, tail = RCCL_J.rpartition('"bus_bw":5.810000')
    return f'{head}"bus_bw":{value}{tail}'


#: name -> the `-J` document, one figure changed (Python's decoder takes all three)
RCCL_JSONS: dict[str, str] = {
    "busbw-infinity": _last_busbw("Infinity"),
    "busbw-nan": _last_busbw("NaN"),
    "busbw-overflow": _last_busbw("1e400"),
}

#: name -> the calibration's result line as a node could print it
CALIBRATION_LINES: dict[str, str] = {
    "ms-true": '{"event": "result", "predicted_n": 32, "predicted_per_token_ms": true}',
    "ms-negative": '{"event": "result", "predicted_n": 32, "predicted_per_token_ms": -5}',
    "ms-overflow": '{"event": "result", "predicted_n": 32, "predicted_per_token_ms": 1e400}',
    "ms-tiny": '{"event": "result", "predicted_n": 32, "predicted_per_token_ms": 1e-300}',
    "ms-nan": '{"event": "result", "predicted_n": 32, "predicted_per_token_ms": NaN}',
    "ms-text": '{"event": "result", "predicted_n": 32, "predicted_per_token_ms": "12.5"}',
    "tokens-text": '{"event": "result", "predicted_n": "many", "predicted_per_token_ms": 12.5}',
}

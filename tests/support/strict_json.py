"""JSON as a strict parser reads it: `NaN`, `Infinity` and `-Infinity` are not JSON, and a
number no float holds (1e400) is not a figure."""

from __future__ import annotations

import json
import math
from typing import Any


def _constant(name: str) -> Any:
    raise AssertionError(f"{name} in JSON output (not JSON)")


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise AssertionError(f"{text} in JSON output (beyond a float)")
    return value


def strict_loads(text: str) -> Any:
    return json.loads(text, parse_constant=_constant, parse_float=_float)

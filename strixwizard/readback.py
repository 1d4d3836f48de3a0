"""One rule for what the tool reads back from a file it did not write this run (a model's
config.json, a GGUF header, the test history, the wizard's saved progress): typed where it is
read, finite, within the same ranges as the matching flag, bounded in nesting and size, and
a `ReadBackError` (a `UsageError`: exit 2, the reason named) instead of a traceback.

A flag and the value a file gives for it share one range: `Range` holds it, and both the
argparse check and the file reader call `Range.check`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from strixwizard.errors import UsageError

#: Deeper than any document the tool writes or reads (config.json nests 3 levels, the saved
#: wizard progress 6); Python's own JSON decoder gives up with a RecursionError near 1,000.
MAX_DEPTH = 64
#: The largest config.json of a real model is a few kB; a saved report is well under 1 MB.
MAX_JSON_BYTES = 16 << 20

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")


class ReadBackError(UsageError):
    """A file the tool reads back breaks the rule: what, where, and the allowed range."""


def nesting_depth(text: str) -> int:
    """How deep the JSON text's arrays and objects nest (strings left out), without parsing it."""
    depth = deepest = 0
    for bracket in _BRACKET.finditer(_STRING.sub('""', text)):
        depth += 1 if bracket.group() in "[{" else -1
        deepest = max(deepest, depth)
    return deepest


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e400: valid JSON, but no float holds it
        raise ValueError(f"{_short(text)} is beyond the range of a number")
    return value


def loads(text: str | bytes, what: str, max_depth: int = MAX_DEPTH,
          max_bytes: int = MAX_JSON_BYTES) -> Any:
    """JSON read back: at most `max_bytes`, nested at most `max_depth`, no NaN or Infinity
    (Python's decoder takes them; JSON has none) and no number too large for a float (1e400,
    which the decoder turns into infinity)."""
    if len(text) > max_bytes:
        raise ReadBackError(f"{what}: {len(text)} bytes, more than the {max_bytes} read back")
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as error:
            raise ReadBackError(f"{what}: not UTF-8 ({error.reason} at byte {error.start})") from error
    depth = nesting_depth(text)
    if depth > max_depth:
        raise ReadBackError(f"{what}: nested {depth} levels deep, more than {max_depth}")
    try:
        return json.loads(text, parse_constant=_no_constant, parse_float=_finite_float)
    except (ValueError, RecursionError) as error:
        raise ReadBackError(f"{what}: not valid JSON ({error})") from error


def dumps(document: Any, **options: Any) -> str:
    """JSON as the tool writes it: a non-finite number is an error here, never `NaN` in a file."""
    return json.dumps(document, allow_nan=False, **options)


@dataclass(frozen=True)
class Range:
    """The values a setting may take, whether it comes from a flag or from a file."""

    low: float
    high: float
    unit: str = ""

    def text(self) -> str:
        unit = f" {self.unit}" if self.unit else ""
        return f"{self.low:g} to {self.high:g}{unit}"

    def check(self, value: float, what: str) -> float:
        if not math.isfinite(value) or not self.low <= value <= self.high:
            raise ReadBackError(f"{what} {value:g}: give {self.text()}")
        return value


def integer(value: Any, what: str, bounds: Range) -> int:
    """A whole number in range: an int, or a float with no fraction (config.json writes 4096.0)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ReadBackError(f"{what}: {type(value).__name__} {_short(value)}, not a whole number")
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        raise ReadBackError(f"{what}: {value!r} is not a whole number")
    if not bounds.low <= value <= bounds.high:
        raise ReadBackError(f"{what} {_short(value)}: give {bounds.text()}")
    return int(value)


def number(value: Any, what: str, bounds: Range) -> float:
    """A finite number in range."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ReadBackError(f"{what}: {type(value).__name__} {_short(value)}, not a number")
    if (isinstance(value, float) and not math.isfinite(value)) \
            or not bounds.low <= value <= bounds.high:
        raise ReadBackError(f"{what} {_short(value)}: give {bounds.text()}")
    return float(value)


def optional_integer(mapping: Mapping[str, Any], key: str, what: str, bounds: Range) -> int | None:
    """The key's whole number, or None when it is absent or null (as Hugging Face writes it)."""
    value = mapping.get(key)
    return None if value is None else integer(value, f"{what} {key}", bounds)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."

"""Parse the TCP reference tools: `sockperf ping-pong` and `qperf ... tcp_lat`.

Both report one-way latency (half the round trip) in µs. sockperf colours some
lines with ANSI escapes; they are removed first. sockperf layouts:

- up to 3.7: `avg-latency=24.571 (std-dev=93.297)` (older: `avg-lat=`);
- 3.8 and later: `avg-latency=24.571 (std-dev=93.297, mean-ad=4.904, ...)`;
- `--full-rtt`: `avg-rtt=...` and round-trip percentiles, halved here;
- extremes as `<MAX> observation` or, in older releases, `MAX observation`.
"""

from __future__ import annotations

import re

from strixwizard.live.results import LatencyStats

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_SOCKPERF_AVG = re.compile(r"avg-(lat|latency|rtt)=\s*([\d.]+)\s*\(std-dev=([\d.]+)[,)]")
_SOCKPERF_PCT = re.compile(r"percentile\s+([\d.]+)\s*=\s*([\d.]+)")
_SOCKPERF_EXT = re.compile(r"<?(MAX|MIN)>? observation\s*=\s*([\d.]+)")
_SOCKPERF_COUNT = re.compile(r"Total (\d+) observations")
_QPERF_LAT = re.compile(r"^\s*latency\s*=\s*([\d.]+)\s*(ns|us|ms|sec|s)\b", re.MULTILINE)


class ToolOutputError(ValueError):
    """The tool's output holds no result; the message says what was there."""


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "(no output)"


def parse_sockperf(text: str) -> LatencyStats:
    clean = _ANSI.sub("", text)
    avg = _SOCKPERF_AVG.search(clean)
    if avg is None:
        raise ToolOutputError(f"sockperf printed no latency (last line: {_last_line(clean)!r})")
    half = 0.5 if avg.group(1) == "rtt" else 1.0  # --full-rtt prints round trips
    pct = {float(p): float(v) * half for p, v in _SOCKPERF_PCT.findall(clean)}
    ext = {k: float(v) * half for k, v in _SOCKPERF_EXT.findall(clean)}
    count = _SOCKPERF_COUNT.search(clean)
    return LatencyStats(
        min_us=ext.get("MIN"), median_us=pct.get(50.0), avg_us=float(avg.group(2)) * half,
        p99_us=pct.get(99.0), p999_us=pct.get(99.9), max_us=ext.get("MAX"),
        stdev_us=float(avg.group(3)) * half, samples=int(count.group(1)) if count else None,
    )


def parse_qperf_latency(text: str, test: str = "tcp_lat") -> float:
    """The `latency = X us` of one qperf test, in µs."""
    start = text.find(f"{test}:")
    if start < 0:
        raise ToolOutputError(f"qperf printed no {test} result (last line: {_last_line(text)!r})")
    section = text[start + len(test) + 1:]
    following = re.search(r"^\S+:\s*$", section, re.MULTILINE)
    if following:
        section = section[:following.start()]
    match = _QPERF_LAT.search(section)
    if match is None:
        raise ToolOutputError(f"qperf {test} gave no latency (last line: {_last_line(text)!r})")
    value, unit = float(match.group(1)), match.group(2)
    return value * {"ns": 1e-3, "us": 1.0, "ms": 1e3, "sec": 1e6, "s": 1e6}[unit]

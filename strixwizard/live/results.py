"""What a live test produces: latency statistics, measurements, and the run's verdict.

Every latency is *one-way* in microseconds, whatever the tool: perftest's
`*_lat` already reports half the round trip, sockperf's ping-pong and qperf's
`tcp_lat` too, and our own TCP ping-pong divides each round trip by two. The
same statistics are kept for all of them (min, median, average, p99, p99.9,
max), so RDMA and TCP are compared like for like, never an ICMP round trip
against a verbs one-way time.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from strixwizard import model
from strixwizard.model import Status
from strixwizard.readback import Range, ReadBackError, integer, number

#: Where a figure came from: measured now, or replayed from a recording (demo).
MEASURED = "measured"
REPLAYED = "replayed recording"


@dataclass(frozen=True)
class LatencyStats:
    """One-way latency in µs; fields a tool does not report are None."""

    min_us: float | None
    median_us: float | None  # perftest's t_typical
    avg_us: float | None
    p99_us: float | None
    p999_us: float | None
    max_us: float | None
    stdev_us: float | None = None
    samples: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "min": self.min_us, "median": self.median_us, "avg": self.avg_us, "p99": self.p99_us,
            "p99_9": self.p999_us, "max": self.max_us, "stdev": self.stdev_us, "samples": self.samples,
        }


def nearest_rank(ordered: Sequence[float], fraction: float) -> float:
    """perftest's percentile: the sample at index floor(n * fraction) of the sorted list."""
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]


def stats_from_samples(one_way_us: Iterable[float]) -> LatencyStats:
    """Statistics of one-way samples, computed the way perftest computes its own."""
    ordered = sorted(one_way_us)
    if not ordered:
        return LatencyStats(None, None, None, None, None, None, None, 0)
    n = len(ordered)
    avg = math.fsum(ordered) / n
    stdev = math.sqrt(math.fsum((x - avg) ** 2 for x in ordered) / n)
    return LatencyStats(
        min_us=ordered[0], median_us=nearest_rank(ordered, 0.5), avg_us=avg,
        p99_us=nearest_rank(ordered, 0.99), p999_us=nearest_rank(ordered, 0.999), max_us=ordered[-1],
        stdev_us=stdev, samples=n,
    )


@dataclass(frozen=True)
class Measurement:
    """One result of a live test, streamed as soon as it is known.

    `kind`: "latency", "bandwidth" or "rccl". `transport`: "rdma" or "tcp".
    `role`: "verdict" (judged against the site's thresholds, counts for the exit
    status) or "reference" (another tool measuring the same thing, for comparison).
    `status` is None for a reference. `figure` is the judged number in `unit`.
    """

    kind: str
    transport: str
    tool: str
    pair: tuple[str, str]
    status: Status | None
    summary: str
    role: str = "verdict"
    figure: float | None = None
    unit: str = ""
    threshold: str = ""
    latency: LatencyStats | None = None
    bandwidth_gbps: float | None = None
    link_rate_gbps: float | None = None
    path: str = ""  # what carried it: "10.99.3.1 -> 10.99.3.2 (fab0)", "rocep194s0:1 gid 1"
    source: str = MEASURED
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def pair_label(self) -> str:
        return model.pair_text(*self.pair)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "transport": self.transport,
            "tool": self.tool,
            "pair": list(self.pair),
            "role": self.role,
            "status": self.status.value if self.status else None,
            "summary": self.summary,
            "figure": self.figure,
            "unit": self.unit,
            "threshold": self.threshold,
            "latency_us": self.latency.to_json() if self.latency else None,
            "bandwidth_gbps": self.bandwidth_gbps,
            "link_rate_gbps": self.link_rate_gbps,
            "path": self.path,
            "source": self.source,
            "detail": self.detail,
        }

    @staticmethod
    def from_json(data: Any) -> Measurement:
        """A measurement read back (the test history, a saved report), held to the read-back
        rule (`strixwizard/readback.py`): every field typed, every figure a finite number in
        range, a pair of two nodes; `ReadBackError` names the field otherwise."""
        return measurement_from_json(data)


#: Every figure a test gives (µs, Gb/s, GB/s, ms per token) is finite and not negative.
FIGURE = Range(0, 1e15)
#: A measured decode speed: the range `advise --measured-tok-s` takes.
TOK_S = Range(0.01, 100000, "tok/s")
_STATS = ("min", "median", "avg", "p99", "p99_9", "max", "stdev")


def _text(data: dict[str, Any], key: str, default: str | None = None) -> str:
    value = data.get(key, default)
    if not isinstance(value, str):
        raise ReadBackError(f"measurement {key}: {type(value).__name__}, not text")
    return value


def _figure(data: dict[str, Any], key: str, what: str) -> float | None:
    value = data.get(key)
    return None if value is None else number(value, f"{what} {key}", FIGURE)


def _latency_from_json(data: Any) -> LatencyStats | None:
    if data is None:
        return None
    if not isinstance(data, dict):
        raise ReadBackError(f"measurement latency_us: {type(data).__name__}, not an object")
    low, median, avg, p99, p999, high, stdev = (_figure(data, key, "measurement latency_us")
                                                for key in _STATS)
    samples = data.get("samples")
    count = None if samples is None else integer(samples, "measurement latency_us samples",
                                                 Range(0, 1e12))
    return LatencyStats(low, median, avg, p99, p999, high, stdev, count)


def _detail_from_json(detail: Any) -> dict[str, Any]:
    """The free-form detail, with the fields other code computes with typed: RCCL's in-place
    times per size, a calibration's tok/s."""
    if detail is None:
        return {}
    if not isinstance(detail, dict):
        raise ReadBackError(f"measurement detail: {type(detail).__name__}, not an object")
    times = detail.get("in_place_us")
    if times is not None:
        if not isinstance(times, dict):
            raise ReadBackError("measurement detail in_place_us: not an object of size: µs")
        for size, us in times.items():
            if not str(size).isdigit():
                raise ReadBackError(f"measurement detail in_place_us: size {size!r} is not a byte count")
            number(us, f"measurement detail in_place_us {size}", FIGURE)
    if detail.get("tok_s") is not None:
        number(detail["tok_s"], "measurement detail tok_s", TOK_S)
    return detail


def measurement_from_json(data: Any) -> Measurement:
    """`Measurement.from_json`: see there."""
    if not isinstance(data, dict):
        raise ReadBackError(f"measurement: {type(data).__name__}, not an object")
    pair = data.get("pair")
    if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(n, str) and n for n in pair)):
        raise ReadBackError(f"measurement pair: {pair!r:.60}, not two node names")
    status = data.get("status")
    try:
        verdict = Status(status) if status else None
    except ValueError:
        raise ReadBackError(f"measurement status: {status!r:.40} is not a verdict") from None
    return Measurement(
        kind=_text(data, "kind"), transport=_text(data, "transport"), tool=_text(data, "tool"),
        pair=(pair[0], pair[1]), status=verdict, summary=_text(data, "summary", ""),
        role=_text(data, "role", "verdict"), figure=_figure(data, "figure", "measurement"),
        unit=_text(data, "unit", ""), threshold=_text(data, "threshold", ""),
        latency=_latency_from_json(data.get("latency_us")),
        bandwidth_gbps=_figure(data, "bandwidth_gbps", "measurement"),
        link_rate_gbps=_figure(data, "link_rate_gbps", "measurement"),
        path=_text(data, "path", ""), source=_text(data, "source", MEASURED),
        detail=_detail_from_json(data.get("detail")),
    )


def read_measurements(items: Any, where: str) -> tuple[list[Measurement], list[str]]:
    """The measurements of a list read back (a saved report's results): each one that breaks
    the read-back rule is left out, with a note that says which and why."""
    if not isinstance(items, list):
        return [], [f"{where}: the results are {type(items).__name__}, not a list: nothing restored"]
    kept: list[Measurement] = []
    skipped: list[str] = []
    for index, item in enumerate(items):
        try:
            kept.append(Measurement.from_json(item))
        except ReadBackError as error:
            skipped.append(f"{where}: result {index + 1} skipped ({error})")
    return kept, skipped


def verdicts(results: Iterable[Measurement]) -> list[Measurement]:
    return [r for r in results if r.role == "verdict" and r.status is not None]


def rdma_never_measured(results: Iterable[Measurement]) -> str | None:
    """Why a run that was asked to measure RDMA has no RDMA figure at all, or None.

    A run asked for RDMA (it has RDMA verdicts) and measured none of them judged
    nothing it was asked to judge: it has no verdict, whatever TCP gave. A run asked
    for TCP only (`--transport tcp`) has no RDMA verdict, so this never applies."""
    rdma = [r for r in verdicts(results) if r.transport == "rdma"]
    if not rdma or any(r.figure is not None or r.status in (Status.PASS, Status.WARN, Status.FAIL)
                       for r in rdma):
        return None
    reasons = list(dict.fromkeys(f"{r.pair_label}: {r.summary}" for r in rdma))
    return "RDMA was never measured (" + "; ".join(reasons) + ")"


def overall_status(results: Iterable[Measurement]) -> Status:
    """fail > error > warn > skip > pass; with nothing judged at all, skip; a run asked for
    RDMA that measured none has no verdict (error)."""
    results = list(results)
    judged = [r.status for r in verdicts(results) if r.status is not None]
    if not judged:
        return Status.SKIP
    worst = max(judged, key=lambda s: s.rank)
    if worst is not Status.FAIL and rdma_never_measured(results):
        return Status.ERROR
    return worst


def exit_code(results: Iterable[Measurement]) -> int:
    """0 pass, 1 at least one fail, 2 no verdict (nothing measured, an error and no fail, or
    RDMA asked for and never measured)."""
    results = list(results)
    statuses = [r.status for r in verdicts(results)]
    if Status.FAIL in statuses:
        return model.exit_code(False)
    if Status.ERROR in statuses or not any(s in (Status.PASS, Status.WARN) for s in statuses):
        return model.exit_code(None)
    if rdma_never_measured(results):
        return model.exit_code(None)
    return model.exit_code(True)


def no_verdict_reason(results: Iterable[Measurement]) -> str | None:
    """Why a run's exit status is 2 (no verdict), in words, or None when it has a verdict."""
    results = list(results)
    if exit_code(results) != 2:
        return None
    judged = verdicts(results)
    broken = [r for r in judged if r.status is Status.ERROR]
    if broken:
        first = broken[0]
        more = f" (and {len(broken) - 1} more)" if len(broken) > 1 else ""
        return f"{first.pair_label} {first.transport.upper()} {first.kind}: {first.summary}{more}"
    never = rdma_never_measured(results)
    if never:
        return never
    return "nothing was measured that could be judged"


def cause(results: Iterable[Measurement]) -> str:
    """What decided the run's verdict, in words: the first broken or failed result's own
    summary and where, why nothing was judged, or that every judged figure was within its limit."""
    results = list(results)
    judged = verdicts(results)

    def where(m: Measurement) -> str:
        return f"{m.pair_label} {m.transport.upper()} {m.kind}"

    for status in (Status.ERROR, Status.FAIL) if exit_code(results) == 2 else (Status.FAIL,):
        first = next((m for m in judged if m.status is status), None)
        if first is not None:
            count = sum(1 for m in judged if m.status is status)
            more = f"; {count - 1} more" if count > 1 else ""
            return f"{first.summary} ({where(first)}{more})"
    never = rdma_never_measured(results)
    if never:
        return never
    if exit_code(results) == 2:
        return "nothing was measured that could be judged"
    warned = next((m for m in judged if m.status is Status.WARN), None)
    if warned is not None:
        return f"{warned.summary} ({where(warned)})"
    return f"every judged figure within its limit ({len(judged)} of {len(results)} results judged)"

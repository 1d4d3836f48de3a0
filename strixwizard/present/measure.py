"""Text output of `strixwizard test`: one line per result as it arrives, then a summary with
the kind's own section (its declaration's `summary`: the matrix's grid, decode's table)."""

from __future__ import annotations

from typing import TextIO

from strixwizard.live.counters import KIND, delta_lines
from strixwizard.live.kinds import registry
from strixwizard.live.report import MeasurementReport, like_for_like
from strixwizard.live.results import MEASURED, Measurement, no_verdict_reason, rdma_never_measured
from strixwizard.model import pair_text

MARKS = {"pass": "PASS", "fail": "FAIL", "warn": "WARN", "skip": "skip", "error": "ERR "}


def _latency_line(m: Measurement) -> str:
    s = m.latency
    if s is None:
        return ""

    def f(value: float | None) -> str:
        return f"{value:.2f}" if value is not None else "-"

    return (f"      one-way µs: min {f(s.min_us)}  median {f(s.median_us)}  avg {f(s.avg_us)}  "
            f"p99 {f(s.p99_us)}  p99.9 {f(s.p999_us)}  max {f(s.max_us)}"
            + (f"  ({s.samples} samples)" if s.samples else ""))


def result_lines(m: Measurement) -> list[str]:
    mark = MARKS.get(m.status.value, "?") if m.status else "ref "
    label = f" [{m.source}]" if m.source not in ("", MEASURED) else ""
    lines = [f"  {mark}  {m.pair_label}  {m.transport.upper()} {m.kind}  {m.tool}{label}: {m.summary}"]
    latency = _latency_line(m)
    if latency:
        lines.append(latency)
    if m.path:
        lines.append(f"      path: {m.path}")
    note = m.detail.get("note") or m.detail.get("notes")
    if note:
        lines.append(f"      note: {note}")
    if m.kind == KIND:
        lines += [f"      {line}" for line in delta_lines(m)]
    return lines


def print_result(m: Measurement, out: TextIO) -> None:
    for line in result_lines(m):
        print(line, file=out, flush=True)


def print_summary(report: MeasurementReport, out: TextIO, tcp_only_command: str | None = None) -> None:
    """Comparisons, the kind's own section, history, then the verdict; `tcp_only_command` is this command
    with `--transport tcp`, suggested when RDMA was never measured."""
    comparisons = like_for_like(report.results)
    if comparisons:
        heading = ("Like for like, as recorded on the demo's two real nodes (one-way):" if report.demo
                   else "Like for like (one-way, median, same statistics):")
        print(f"\n{heading}", file=out)
        for c in comparisons:
            print(f"  {pair_text(*c.pair)}: {c.summary}", file=out)
    kind = registry().get(report.command)
    if kind is not None and kind.summary is not None:
        kind.summary(report, out)
    for comparison in report.comparisons:
        print(f"  history: {comparison.summary}", file=out)
    why = report.error or no_verdict_reason(report.results)
    if (report.exit_code == 2 or report.signal is not None) and why and not (
            report.export_error and not report.error):
        print(f"\nno verdict (exit {report.exit_code}): {why}", file=out)
        if not report.error and why == rdma_never_measured(report.results):
            print("  to judge the TCP baseline alone: "
                  + (tcp_only_command or "run again with --transport tcp"), file=out)
        return
    status = report.to_json()["status"]
    if report.export_error:
        print(f"\nverdict: {status}, but {report.export_error} (exit {report.exit_code})",
              file=out)
        return
    print(f"\nverdict: {status} (exit {report.exit_code})", file=out)

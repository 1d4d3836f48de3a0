"""The doctor report as text for a terminal: a short table, quiet when all is well."""

from __future__ import annotations

import os
from typing import TextIO

from strixwizard.engine import Report
from strixwizard.model import CheckResult, HostReport, LinkReport, Status

_COLOURS = {
    Status.PASS: "32",
    Status.WARN: "33",
    Status.FAIL: "31",
    Status.ERROR: "35",
    Status.SKIP: "2",
}


def use_colour(stream: TextIO) -> bool:
    """Colour only on a terminal, and never when NO_COLOR is set (no-color.org)."""
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    return hasattr(stream, "isatty") and stream.isatty()


class _Painter:
    def __init__(self, colour: bool) -> None:
        self.colour = colour

    def __call__(self, text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.colour else text

    def status(self, status: Status) -> str:
        return self(status.value.upper().ljust(5), _COLOURS[status])


def _host_line(host: HostReport) -> str:
    if not host.reachable:
        return f"{host.name}: unreachable: {host.error}"
    facts = host.facts
    parts = [
        facts.get("sku") or facts.get("cpu") or "unknown CPU",
        facts.get("gfx_target") or "no ROCm GPU",
        f"kernel {facts['kernel']}" if facts.get("kernel") else "kernel ?",
        f"{facts['memory_gib']} GiB" if facts.get("memory_gib") is not None else "memory ?",
    ]
    return f"{host.name}: " + " · ".join(str(p) for p in parts) + f"  ({host.source})"


def _link_line(link: LinkReport, paint: _Painter) -> str:
    """`node-a:enp194s0np0 <-> node-b:enp194s0np0  roce-v2 (RDMA)  FAIL`."""
    kind = f"{link.transport} ({'RDMA' if link.rdma else 'no RDMA'})"
    return f"  {paint.status(link.status)} {link.id}  {kind}"


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _result_lines(result: CheckResult, paint: _Painter, width: int) -> list[str]:
    lines = [f"  {paint.status(result.status)} {result.id.ljust(width)} {result.entity}"]
    if result.observed or result.expected:
        observed = result.observed or "?"
        want = f" (want {result.expected})" if result.expected and result.status != Status.PASS else ""
        lines.append(f"        {observed}{want}")
    if result.detail:
        lines.append(f"        {result.detail}")
    if result.fix is not None:
        reboot = ", needs a reboot" if result.fix.reboot else ""
        lines.append(f"        fix {result.fix.id}: {result.fix.summary}{reboot}")
    lines.append(f"        more: strixwizard explain {result.id}")
    return lines


def _unreachable_part(report: Report, paint: _Painter) -> str | None:
    """`2 of 3 nodes unreachable` in the summary line (`, allowed` with --allow-unreachable)."""
    down = len(report.unreachable)
    if not down:
        return None
    text = f"{down} of {_plural(len(report.hosts), 'node')} unreachable"
    return f"{text}, allowed" if report.allow_unreachable else paint(text, "31")


def render(report: Report, stream: TextIO, verbose: bool = False, strict: bool = False) -> None:
    paint = _Painter(use_colour(stream))
    reachable = [h for h in report.hosts if h.reachable]
    counts = report.summary
    shown = [
        r for r in report.checks
        if verbose or r.status in (Status.FAIL, Status.ERROR, Status.WARN)
    ]
    quiet = not shown and all(h.reachable for h in report.hosts) and report.checks
    if quiet:
        skipped = f", {counts['skip']} skipped (-v lists them)" if counts["skip"] else ""
        stream.write(
            paint("✓", "32")
            + f" {_plural(counts['pass'], 'check')} passed on {_plural(len(reachable), 'node')}"
            + f" of site {report.site}{skipped}\n"
        )
        return
    stream.write(f"site {report.site}: {_plural(len(report.hosts), 'node')}\n")
    for host in report.hosts:
        line = _host_line(host)
        stream.write(f"  {paint(line, '31') if not host.reachable else line}\n")
    if report.links:
        stream.write(f"links: {len(report.links)}\n")
        for link in report.links:
            stream.write(_link_line(link, paint) + "\n")
    if shown:
        stream.write("\n")
        width = max(len(r.id) for r in shown)
        order = sorted(shown, key=lambda r: (-r.status.rank, r.id, r.host or ""))
        for result in order:
            stream.write("\n".join(_result_lines(result, paint, width)) + "\n")
    stream.write("\n")
    parts = [
        paint(f"{counts['fail']} failed", "31") if counts["fail"] else "0 failed",
        paint(f"{counts['error']} errors", "35") if counts["error"] else None,
        paint(_plural(counts["warn"], "warning"), "33") if counts["warn"] else "0 warnings",
        f"{counts['pass']} passed",
        f"{counts['skip']} skipped" if counts["skip"] else None,
        _unreachable_part(report, paint),
    ]
    stream.write(" · ".join(p for p in parts if p) + "\n")
    if report.no_verdict is not None:
        stream.write(paint(f"{report.no_verdict}: no verdict\n", "31"))
    elif report.counts_unreachable:
        names = ", ".join(h.name for h in report.unreachable)
        stream.write(paint(f"not judged: {names}: the run is an error until every node is "
                           "reached (--allow-unreachable judges the reachable nodes alone)\n", "31"))
    elif strict and counts["warn"] and not counts["fail"]:
        stream.write("--strict: warnings count as failures\n")

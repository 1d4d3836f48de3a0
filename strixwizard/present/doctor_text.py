"""The doctor report as text for a terminal, quiet when all is well: by default the nodes, one
line per area (platform, NICs, links, lossless, versions, counters) with ✓/!/✗ and its counts,
each failure in full and each warning in one line; `-v` the full text (links, every check)."""

from __future__ import annotations

import os
import shlex
import shutil
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TextIO

from strixwizard.checking.engine import Report
from strixwizard.model import CheckResult, HostReport, LinkReport, Status, link_text
from strixwizard.present.terminal import paint, unpainted, visible, visible_stream

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
        return paint(text, code) if self.colour else text

    def status(self, status: Status) -> str:
        return self(status.value.upper().ljust(5), _COLOURS[status])


def _host_line(host: HostReport) -> str:
    if not host.reachable:
        return f"{visible(host.name)}: unreachable: {visible(host.error)}"
    facts = host.facts
    parts = [
        facts.get("sku") or facts.get("cpu") or "unknown CPU",
        facts.get("gfx_target") or "no ROCm GPU",
        f"kernel {facts['kernel']}" if facts.get("kernel") else "kernel ?",
        f"{facts['memory_gib']} GiB" if facts.get("memory_gib") is not None else "memory ?",
    ]
    return f"{visible(host.name)}: " + " · ".join(visible(p) for p in parts) + f"  ({visible(host.source)})"


def _link_line(link: LinkReport, paint: _Painter) -> str:
    """`FAIL node-a ⇄ node-b (enp194s0np0)  roce-v2 (RDMA)`."""
    kind = f"{visible(link.transport)} ({'RDMA' if link.rdma else 'no RDMA'})"
    return f"  {paint.status(link.status)} {visible(link_text(link.id))}  {kind}"


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def terminal_width(fallback: int = 100) -> int:
    """The terminal's width (COLUMNS first, as `shutil.get_terminal_size` reads it), at least 40."""
    return max(40, shutil.get_terminal_size((fallback, 24)).columns)


def wrap(line: str, width: int) -> list[str]:
    """One line wrapped at word boundaries within `width`, every part at the line's indent (a
    heading or list line's rest a little deeper, so it does not read as a line of its own)."""
    indent = line[:len(line) - len(line.lstrip(" "))]
    if len(unpainted(line)) <= width or not line.strip():
        return [line]
    hanging = indent + "    " if len(indent) <= 2 else indent  # a list line: its rest hangs under it
    return textwrap.wrap(line.strip(), width, initial_indent=indent, subsequent_indent=hanging,
                         break_long_words=False, break_on_hyphens=False) or [line]


@dataclass(frozen=True)
class Finding:
    """One finding as the text report shows it: identical results on several nodes are one."""

    result: CheckResult
    hosts: tuple[str, ...]
    entity: str  # the entity without its node, when it names one

    @property
    def where(self) -> str:
        if len(self.hosts) < 2:
            return link_text(self.result.entity)
        on = "on nodes " + ", ".join(self.hosts)
        return f"{self.entity} {on}" if self.entity else on


def _without_host(result: CheckResult) -> str:
    """`node-a/0000:c2:00.0` → `0000:c2:00.0`, `node-b:enp194s0np0` → `enp194s0np0`, `node-b` → ``."""
    host, entity = result.host, result.entity
    if not host or not entity.startswith(host):
        return entity
    rest = entity[len(host):]
    if rest and rest[0] in "/:":
        return rest[1:]
    return "" if not rest else entity


def group(results: Sequence[CheckResult]) -> list[Finding]:
    """Results that say the same thing (check, status, observed, expected, detail, fix) about the
    same kind of entity on different nodes become one finding listing the nodes."""
    groups: dict[tuple[object, ...], list[CheckResult]] = {}
    for result in results:
        entity = _without_host(result) if result.host else result.entity
        key: tuple[object, ...] = (result.id, result.status, entity if result.host else result.entity,
                                   result.observed, result.expected, result.detail, result.fix,
                                   result.host is None)
        groups.setdefault(key, []).append(result)
    findings = []
    for members in groups.values():
        first = members[0]
        hosts = tuple(dict.fromkeys(m.host for m in members if m.host))
        findings.append(Finding(first, hosts, _without_host(first) if first.host else first.entity))
    return findings


def finding_footer(result: CheckResult) -> list[str]:
    """Lines closing a finding's block: where to read more about it."""
    return [f"more: strixwizard explain {result.id}"]


def _result_lines(finding: Finding, paint: _Painter, width: int) -> list[str]:
    result = finding.result
    lines = [f"  {paint.status(result.status)} {result.id.ljust(width)} {visible(finding.where)}"]
    if result.observed or result.expected:
        observed = visible(result.observed or "?")
        want = (f" (want {visible(result.expected)})" if result.expected and result.status != Status.PASS
                else "")
        lines.append(f"        {observed}{want}")
    if result.detail:
        lines.append(f"        {visible(result.detail)}")
    if result.fix is not None:
        reboot = ", needs a reboot" if result.fix.reboot else ""
        lines.append(f"        fix {result.fix.id}: {visible(result.fix.summary)}{reboot}")
    lines += [f"        {line}" for line in finding_footer(result)]
    return lines


def next_command(report: Report, site_options: Sequence[str] | None) -> str | None:
    """The one command to run next, with the options that chose this site; None when there is
    none to suggest (no verdict, or snapshots given with --snapshot, which `fix` cannot take)."""
    if site_options is None or report.no_verdict is not None:
        return None
    import shlex

    fixable = any(r.fix is not None and r.status in (Status.FAIL, Status.WARN, Status.ERROR)
                  for r in report.checks)
    if fixable:
        return shlex.join(["strixwizard", "fix", *site_options])
    if report.summary["fail"] or report.summary["error"] or len(report.hosts) < 2:
        return None
    kind = "latency" if len(report.hosts) == 2 else "matrix"
    return shlex.join(["strixwizard", "test", kind, *site_options])


def _unreachable_part(report: Report, paint: _Painter) -> str | None:
    """`2 of 3 nodes unreachable` in the summary line (`, allowed` with --allow-unreachable)."""
    down = len(report.unreachable)
    if not down:
        return None
    text = f"{down} of {_plural(len(report.hosts), 'node')} unreachable"
    return f"{text}, allowed" if report.allow_unreachable else paint(text, "31")


#: The areas of the at-a-glance view (`doctor` without -v), each a set of checks; a check not
#: named here is in the area of its id's prefix (`AREA_OF_PREFIX`), else "other".
AREAS = ("platform", "NICs", "links", "lossless", "versions", "counters", "llama")
AREA_OF_CHECK = {
    "node.rdma_core_version": "versions", "node.linux_firmware": "versions",
    "node.kernel_known_good": "versions", "nic.firmware_known_good": "versions",
    "link.pfc": "lossless", "link.trust": "lossless",
    "rdma.link_cross_check": "links", "site.rdma_path": "links",
    "fabric.counters": "counters",
}
AREA_OF_PREFIX = {"node": "platform", "nic": "NICs", "rdma": "NICs", "roce": "NICs", "usb4": "NICs",
                  "dcb": "lossless", "link": "links", "site": "links", "fabric": "counters",
                  "llama": "llama"}
MARKS = {Status.PASS: ("✓", "32"), Status.WARN: ("!", "33"), Status.FAIL: ("✗", "31"),
         Status.ERROR: ("✗", "35"), Status.SKIP: ("-", "2")}


def area_of(check_id: str) -> str:
    return AREA_OF_CHECK.get(check_id) or AREA_OF_PREFIX.get(check_id.split(".", 1)[0], "other")


def area_summary(report: Report) -> list[tuple[str, Status, dict[Status, int]]]:
    """Each area with checks in the report, in `AREAS` order: its worst judged status (SKIP
    when nothing was judged) and its count of each status."""
    by_area: dict[str, list[CheckResult]] = {}
    for result in report.checks:
        by_area.setdefault(area_of(result.id), []).append(result)
    summary = []
    for area in [*AREAS, *sorted(set(by_area) - set(AREAS))]:
        results = by_area.get(area, [])
        if not results:
            continue
        judged = [r for r in results if r.status != Status.SKIP]
        worst = max(judged, key=lambda r: r.status.rank).status if judged else Status.SKIP
        summary.append((area, worst, {status: sum(r.status == status for r in results)
                                      for status in Status}))
    return summary


def area_marks(report: Report) -> str:
    """The areas in one line (`✓ platform  ! NICs  ✗ links …`), as the wizard's headline."""
    return "  ".join(f"{MARKS[worst][0]} {area}" for area, worst, _ in area_summary(report))


def area_lines(report: Report, paint: _Painter) -> list[str]:
    """One line per area: ✓ all judged passed, ! a warning, ✗ a failure (or a check that
    broke), - nothing judged; then the counts."""
    summary = area_summary(report)
    width = max((len(area) for area, _, _ in summary), default=0)
    lines = []
    for area, worst, count in summary:
        mark, colour = MARKS[worst]
        parts = [
            f"{count[Status.FAIL]} failed" if count[Status.FAIL] else None,
            _plural(count[Status.ERROR], "error") if count[Status.ERROR] else None,
            _plural(count[Status.WARN], "warning") if count[Status.WARN] else None,
            f"{count[Status.PASS]} passed" if count[Status.PASS] else None,
            f"{count[Status.SKIP]} skipped" if count[Status.SKIP] else None,
        ]
        lines.append(f"  {paint(mark, colour)} {area.ljust(width)}  " + ", ".join(p for p in parts if p))
    return lines


def glance_lines(finding: Finding, paint: _Painter, width: int, columns: int = 100) -> list[str]:
    """A finding that is not a failure: its line, then its reason (what was seen against what
    is wanted) in one line cut to `columns` (`-v` shows its whole block)."""
    result = finding.result
    lines = [f"  {paint.status(result.status)} {result.id.ljust(width)} {finding.where}"]
    seen = visible(result.observed or result.detail or "")
    want = f" (want {visible(result.expected)})" if result.expected and seen else ""
    if seen:
        lines.append(fitted(f"        {seen}{want}", columns))
    return lines


def fitted(line: str, columns: int) -> str:
    """`line` cut to `columns` characters, an ellipsis marking the cut."""
    return line if len(line) <= columns else line[:max(columns - 1, 0)].rstrip() + "…"


def _at_a_glance(finding: Finding, verbose: bool) -> bool:
    """Whether the default view shows the finding in one line rather than its block."""
    return not verbose and finding.result.status not in (Status.FAIL, Status.ERROR)


def render(report: Report, stream: TextIO, verbose: bool = False, strict: bool = False,
           site_options: Sequence[str] | None = None, width: int | None = None,
           verbose_again: str | None = None) -> None:
    """The report for a terminal, wrapped within `width` (default: the terminal's); it ends with
    the one command to run next when there is one (see `next_command`). `verbose_again`: the
    command that was run with `-v` (every option that chose the nodes kept, a snapshot too)."""
    columns = width or terminal_width()
    stream = visible_stream(stream)  # the tool's own lines and colours; nothing else raw

    def write(text: str) -> None:
        for line in text.rstrip("\n").split("\n"):
            stream.write("\n".join(wrap(line, columns)) + "\n")

    paint = _Painter(use_colour(stream))
    reachable = [h for h in report.hosts if h.reachable]
    counts = report.summary
    following = next_command(report, site_options)
    shown = [
        r for r in report.checks
        if verbose or r.status in (Status.FAIL, Status.ERROR, Status.WARN)
    ]
    quiet = not shown and all(h.reachable for h in report.hosts) and report.checks
    if quiet:
        skipped = f", {counts['skip']} skipped (-v lists them)" if counts["skip"] else ""
        write(paint("✓", "32")
              + f" {_plural(counts['pass'], 'check')} passed on {_plural(len(reachable), 'node')}"
              + f" of site {visible(report.site)}{skipped}")
        if following:
            stream.write(f"next: {following}\n")  # a command to copy: never wrapped
        return
    write(f"site {visible(report.site)}: {_plural(len(report.hosts), 'node')}")
    for host in report.hosts:
        line = "  " + _host_line(host)
        write(paint(line, "31") if not host.reachable else line)
    if report.links and verbose:
        write(f"links: {len(report.links)}")
        for link in report.links:
            write(_link_line(link, paint))
    if not verbose:
        for line in area_lines(report, paint):
            write(line)
    if shown:
        stream.write("\n")
        findings = group(shown)
        id_width = max(len(f.result.id) for f in findings)
        order = sorted(findings, key=lambda f: (-f.result.status.rank, f.result.id, f.hosts))
        for finding in order:
            brief = _at_a_glance(finding, verbose)
            lines = (glance_lines(finding, paint, id_width, columns) if brief
                     else _result_lines(finding, paint, id_width))
            for line in lines:
                write(line)
        if any(_at_a_glance(f, verbose) for f in findings):
            again = verbose_again or shlex.join(["strixwizard", "doctor", *(site_options or ()), "-v"])
            write(f"  (warnings in short: `{again}` says what to do about each and lists "
                  "every check)")
    stream.write("\n")
    if report.no_verdict is not None:
        down = _unreachable_part(report, paint)
        if down:
            write(down)
        write(paint(f"{visible(report.no_verdict)}: no verdict", "31"))
        return
    parts = [
        paint(f"{counts['fail']} failed", "31") if counts["fail"] else "0 failed",
        paint(f"{counts['error']} errors", "35") if counts["error"] else None,
        paint(_plural(counts["warn"], "warning"), "33") if counts["warn"] else "0 warnings",
        f"{counts['pass']} passed",
        f"{counts['skip']} skipped" if counts["skip"] else None,
        _unreachable_part(report, paint),
    ]
    write(" · ".join(p for p in parts if p))
    if report.counts_unreachable:
        names = ", ".join(visible(h.name) for h in report.unreachable)
        write(paint(f"not judged: {names}: the run is an error until every node is "
                    "reached (--allow-unreachable judges the reachable nodes alone)", "31"))
    elif strict and counts["warn"] and not counts["fail"]:
        write("--strict: warnings count as failures")
    if following:
        stream.write(f"next: {following}\n")  # a command to copy: never wrapped

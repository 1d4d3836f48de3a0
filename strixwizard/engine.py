"""Run checks over nodes and assemble the report. No printing, no UI."""

from __future__ import annotations

import datetime
import difflib
import traceback
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from strixwizard import __version__
from strixwizard.checking import Check
from strixwizard.errors import UsageError
from strixwizard.facts import NodeFacts
from strixwizard.model import CheckResult, FixRef, HostReport, Status, worst
from strixwizard.probe import Probe
from strixwizard.site import Site

SCHEMA_VERSION = 1


@dataclass
class Node:
    """A host of the run: its report entry and, when reachable, its facts."""

    report: HostReport
    facts: NodeFacts | None


@dataclass
class Report:
    site: str
    hosts: list[HostReport]
    checks: list[CheckResult]
    links: list[dict[str, Any]] = field(default_factory=list)
    generated_at: str = field(
        default_factory=lambda: datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    )

    @property
    def status(self) -> Status:
        return worst([r.status for r in self.checks])

    @property
    def summary(self) -> dict[str, int]:
        counts = {status.value: 0 for status in Status}
        for result in self.checks:
            counts[result.status.value] += 1
        return counts

    def exit_code(self, strict: bool = False) -> int:
        """0 no fail, 1 a fail or a broken check (with --strict a warn too), 2 no verdict."""
        if not any(host.reachable for host in self.hosts):
            return 2
        bad = {Status.FAIL, Status.ERROR} | ({Status.WARN} if strict else set())
        return 1 if any(r.status in bad for r in self.checks) else 0

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "tool": {"name": "strixwizard", "version": __version__},
            "generated_at": self.generated_at,
            "site": self.site,
            "status": self.status.value,
            "summary": self.summary,
            "hosts": [h.to_json() for h in self.hosts],
            "checks": [r.to_json() for r in self.checks],
            "links": self.links,
        }


def select_checks(all_checks: Sequence[Check], only: Iterable[str], skip: Iterable[str]
                  ) -> tuple[Check, ...]:
    """Apply --only/--skip. An id may name one check or an area (`node` = every `node.*`)."""
    ids = [c.id for c in all_checks]

    def matches(check: Check, wanted: str) -> bool:
        return check.id == wanted or check.id.startswith(wanted + ".")

    for wanted in [*only, *skip]:
        if not any(matches(c, wanted) for c in all_checks):
            close = difflib.get_close_matches(wanted, ids, n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise UsageError(
                f"unknown check id {wanted!r}{hint} (`strixwizard doctor --list-checks` lists them)"
            )
    only = list(only)
    skip = list(skip)
    return tuple(
        c for c in all_checks
        if (not only or any(matches(c, w) for w in only)) and not any(matches(c, w) for w in skip)
    )


def host_facts_summary(facts: NodeFacts) -> dict[str, Any]:
    """The key facts shown for each host in the report; unknown values are null."""
    summary: dict[str, Any] = {}
    try:
        cpu = facts.cpu
        summary["cpu"] = cpu.model_name if cpu else None
        summary["strix_halo"] = cpu.is_strix_halo if cpu else None
        summary["sku"] = cpu.sku if cpu else None
    except Exception as error:  # a broken parser must not lose the report
        summary["cpu_error"] = repr(error)
    try:
        summary["gfx_target"] = facts.gpu.gfx_target
    except Exception as error:
        summary["gpu_error"] = repr(error)
    try:
        summary["kernel"] = facts.kernel.release
        summary["os"] = facts.kernel.os_name
    except Exception as error:
        summary["kernel_error"] = repr(error)
    try:
        total = facts.memory.total_gib
        summary["memory_gib"] = round(total, 1) if total is not None else None
    except Exception as error:
        summary["memory_error"] = repr(error)
    return summary


def run_check(check: Check, node: NodeFacts, site: Site, fixes: dict[str, FixRef]
              ) -> list[CheckResult]:
    fix = fixes.get(check.fix) if check.fix else None

    def result(status: Status, entity: str, observed: str = "", expected: str = "",
               detail: str = "") -> CheckResult:
        return CheckResult(
            id=check.id, title=check.title, host=node.name, entity=entity, status=status,
            severity=check.severity, observed=observed, expected=expected, detail=detail,
            why=check.why, fix=fix if status in (Status.FAIL, Status.WARN) else None,
        )

    try:
        findings = list(check.fn(node, site))
    except Exception as error:
        where = traceback.extract_tb(error.__traceback__)[-1]
        return [result(
            Status.ERROR, node.name,
            detail=f"check crashed: {error!r} at {where.filename}:{where.lineno}; "
            "please report it with `strixwizard capture`",
        )]
    if not findings:
        return [result(Status.SKIP, node.name, detail="nothing to check on this node")]
    return [result(f.status, f.entity, f.observed, f.expected, f.detail) for f in findings]


def run_doctor(site: Site, nodes: Sequence[Node], checks: Sequence[Check],
               fixes: dict[str, FixRef]) -> Report:
    results: list[CheckResult] = []
    for node in nodes:
        if node.facts is None:
            continue
        node.report.facts = host_facts_summary(node.facts)
        for check in checks:
            results.extend(run_check(check, node.facts, site, fixes))
    return Report(site=site.name, hosts=[n.report for n in nodes], checks=results)


def local_node(name: str, probe: Probe, address: str, source: str) -> Node:
    return Node(HostReport(name=name, address=address, source=source, reachable=True),
                NodeFacts(name, probe))

"""Run checks over one discovery (its nodes and the topology built once for it) and
assemble the report. No printing, no UI."""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from strixwizard.checking.declare import Check
from strixwizard.discovery import Discovery
from strixwizard.errors import UsageError
from strixwizard.facts import NodeFacts
from strixwizard.model import (
    CheckResult,
    FixRef,
    HostReport,
    LinkReport,
    Severity,
    Status,
    aliases_of,
    document_header,
    exit_code,
    worst,
)
from strixwizard.site import STACKS, Site
from strixwizard.topology import STACK_NAMES, Link, link_end


@dataclass
class Report:
    """The verdict of a run. One rule decides its status and exit code:

    - nothing reachable, or no check judged: no verdict (`error`, exit 2, `error` says why);
    - a node unreachable: at least `error` and exit 1, since a gate cannot pass with a node
      unjudged (`allow_unreachable`, `--allow-unreachable`, judges the reachable ones alone);
    - otherwise the worst check: exit 1 on a fail or a broken check (a warn too when strict).
    """

    site: str
    hosts: list[HostReport]
    checks: list[CheckResult]
    links: list[LinkReport] = field(default_factory=list)
    generated_at: str = field(
        default_factory=lambda: datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    )
    allow_unreachable: bool = False
    #: the stack the site runs ("": not said) and the checks left out as not used by it
    stack: str = ""
    left_out: tuple[str, ...] = ()

    @property
    def stack_note(self) -> str | None:
        """What judging for the site's stack left out, a sentence (None: no stack said)."""
        if not self.stack:
            return None
        label = STACKS[self.stack]
        if not self.left_out:
            return f"stack {self.stack}: every check selected concerns {label}"
        return (f"stack {self.stack}: left out {', '.join(self.left_out)} (not used by {label}; "
                "without a stack every check runs)")

    @property
    def unreachable(self) -> list[HostReport]:
        return [host for host in self.hosts if not host.reachable]

    @property
    def no_verdict(self) -> str | None:
        """Why the run has no verdict at all, or None when it has one."""
        if not any(host.reachable for host in self.hosts):
            reasons = "; ".join(f"{h.name}: {h.error or 'unreachable'}" for h in self.hosts)
            return "no node could be reached" + (f" ({reasons})" if reasons else "")
        if not self.checks:
            return "no check was judged: the selected checks (--only/--skip) apply to none " \
                   "of these nodes"
        return None

    @property
    def counts_unreachable(self) -> bool:
        """Unreachable nodes weigh on the verdict (they do unless explicitly allowed)."""
        return bool(self.unreachable) and not self.allow_unreachable

    @property
    def status(self) -> Status:
        if self.no_verdict is not None:
            return Status.ERROR
        judged = worst([r.status for r in self.checks])
        return worst([judged, Status.ERROR]) if self.counts_unreachable else judged

    @property
    def summary(self) -> dict[str, int]:
        counts = {status.value: 0 for status in Status}
        for result in self.checks:
            counts[result.status.value] += 1
        return counts

    def exit_code(self, strict: bool = False) -> int:
        """0 no fail, 1 a fail, a broken check or an unreachable node (with --strict a warn
        too), 2 no verdict."""
        if self.no_verdict is not None:
            return exit_code(None)
        bad = {Status.FAIL, Status.ERROR} | ({Status.WARN} if strict else set())
        return exit_code(not self.counts_unreachable and not any(r.status in bad for r in self.checks))

    def to_json(self) -> dict[str, Any]:
        reason = self.no_verdict
        return {
            **document_header(self.site, self.generated_at),
            "status": self.status.value,
            **({"error": reason} if reason is not None else {}),
            "unreachable": [host.name for host in self.unreachable],
            "allow_unreachable": self.allow_unreachable,
            "summary": self.summary,
            "hosts": [h.to_json() for h in self.hosts],
            "checks": [r.to_json() for r in self.checks],
            "links": [link.to_json() for link in self.links],
            **({"stack": {"name": self.stack, "label": STACKS[self.stack],
                          "left_out": list(self.left_out)}} if self.stack else {}),
        }


def for_stack(checks: Sequence[Check], stack: str) -> tuple[list[Check], list[Check]]:
    """The checks a site running `stack` depends on (each check declares its stacks), and the
    ones it does not ("": no stack said, every check runs)."""
    kept = [c for c in checks if c.concerns(stack)]
    return kept, [c for c in checks if not c.concerns(stack)]


def select_checks(all_checks: Sequence[Check], only: Iterable[str], skip: Iterable[str]
                  ) -> tuple[Check, ...]:
    """Apply --only/--skip. An id may name one check or an area (`node` = every `node.*`)."""
    ids = [c.id for c in all_checks]

    def matches(check: Check, wanted: str) -> bool:  # the id, its area, or an older id or area
        return any(name == wanted or name.startswith(wanted + ".")
                   for name in (check.id, *aliases_of(check.id)))

    for wanted in [*only, *skip]:
        if not any(matches(c, wanted) for c in all_checks):
            import difflib  # only for a mistyped id: doctor's start-up stays lean

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
        summary["nics"] = [f"{n.model} ({n.address})" for n in facts.nics if n.rdma_capable]
        summary["rdma_devices"] = [d.name for d in facts.rdma]
        summary["rocm"] = facts.rocm.version_text
    except Exception as error:
        summary["network_error"] = repr(error)
    try:
        total = facts.memory.total_gib
        summary["memory_gib"] = round(total, 1) if total is not None else None
    except Exception as error:
        summary["memory_error"] = repr(error)
    return summary


def _results(check: Check, args: tuple[Any, ...], host: str | None, entity: str,
             fixes: dict[str, FixRef]) -> list[CheckResult]:
    """Run one check on its arguments and turn its findings (or its crash) into results."""
    fix = fixes.get(check.fix) if check.fix else None

    def result(status: Status, entity: str, observed: str = "", expected: str = "",
               detail: str = "", fixable: bool = True) -> CheckResult:
        curable = fixable and status in (Status.FAIL, Status.WARN)
        return CheckResult(
            id=check.id, title=check.title, host=host, entity=entity, status=status,
            severity=check.severity, observed=observed, expected=expected, detail=detail,
            why=check.why, fix=fix if curable else None,
        )

    try:
        findings = list(check.fn(*args))
    except Exception as error:
        import traceback  # only when a check crashed

        where = traceback.extract_tb(error.__traceback__)[-1]
        return [result(
            Status.ERROR, entity,
            detail=f"check crashed: {error!r} at {where.filename}:{where.lineno}; "
            "please report it with `strixwizard capture`",
        )]
    if not findings:
        return [result(Status.SKIP, entity, detail=f"nothing to check on this {check.scope}")]
    return [result(f.status, f.entity, f.observed, f.expected, f.detail, f.fixable) for f in findings]


def run_check(check: Check, node: NodeFacts, site: Site, fixes: dict[str, FixRef]
              ) -> list[CheckResult]:
    return _results(check, (node, site), node.name, node.name, fixes)


def run_link_check(check: Check, link: Link, site: Site, fixes: dict[str, FixRef]
                   ) -> list[CheckResult]:
    return _results(check, (link, site), None, link.id, fixes)


def link_status(results: list[CheckResult]) -> Status:
    """Worst verdict of a link's checks; checks that do not apply (skip) count only if all do."""
    judged: list[Status] = [r.status for r in results if r.status != Status.SKIP]
    return worst(judged) if judged else Status.SKIP


def link_report(link: Link, results: list[CheckResult]) -> LinkReport:
    return LinkReport(link.id, (link_end(link.a), link_end(link.b)), link.transport, link.rdma,
                      link.evidence, link_status(results), tuple(results),
                      tuple(key for key in STACK_NAMES if link.carries(key)))


def link_json(link: Link, results: list[CheckResult]) -> dict[str, Any]:
    return link_report(link, results).to_json()


def run_doctor(found: Discovery, checks: Sequence[Check], fixes: dict[str, FixRef]) -> Report:
    """Run `checks` over one discovery: node checks on each reachable node, link checks on each
    link of its topology, site checks on the topology; `fixes` names the fix each result shows."""
    site, nodes = found.site, found.nodes
    checks, left_out = for_stack(checks, site.stack)
    stack, skipped_ids = site.stack, tuple(c.id for c in left_out)
    results: list[CheckResult] = []
    reachable: list[NodeFacts] = []
    for node in nodes:
        if node.facts is None:
            continue
        reachable.append(node.facts)
        node.report.facts = host_facts_summary(node.facts)
        for check in checks:
            if check.scope == "node":
                results.extend(run_check(check, node.facts, site, fixes))
    links: list[LinkReport] = []
    link_checks = [c for c in checks if c.scope == "link"]
    site_checks = [c for c in checks if c.scope == "site"]
    if reachable and (link_checks or site_checks):
        try:
            topology = found.topology
        except Exception as error:  # a broken fact must not lose the node results
            results.append(CheckResult(
                id="site.topology", title="Fabric links could be worked out", host=None,
                entity=site.name, status=Status.ERROR, severity=Severity.HIGH, observed="",
                expected="", detail=f"building the link topology crashed: {error!r}; please "
                "report it with `strixwizard capture`", why="", fix=None,
            ))
            return Report(site=site.name, hosts=[n.report for n in nodes], checks=results,
                          stack=stack, left_out=skipped_ids)
        for link in topology.links:
            link_results = [r for c in link_checks for r in run_link_check(c, link, site, fixes)]
            results.extend(link_results)
            links.append(link_report(link, link_results))
        for check in site_checks:
            results.extend(_results(check, (topology, site), None, site.name, fixes))
    return Report(site=site.name, hosts=[n.report for n in nodes], checks=results, links=links,
                  stack=stack, left_out=skipped_ids)

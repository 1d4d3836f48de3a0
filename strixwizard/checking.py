"""How a check is declared.

A check is a plain function from facts to findings, wrapped by `node_check`:

    @node_check("node.cpu", title="...", why="...", severity=Severity.CRITICAL)
    def cpu_is_strix_halo(node: NodeFacts, site: Site) -> Iterator[Finding]:
        yield passed(node.name, observed=..., expected=...)

It must be listed in `checks.ALL`. The engine turns its findings into results,
attaches the fix, and turns an exception into an `error` result for that check
alone. Checks do no I/O: everything comes from the facts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from strixwizard.model import Finding, Severity, Status

if TYPE_CHECKING:
    from strixwizard.facts import NodeFacts
    from strixwizard.site import Site

NodeCheckFn = Callable[["NodeFacts", "Site"], Iterable[Finding]]


@dataclass(frozen=True)
class Check:
    id: str  # "area.name", stable: scripts and --only depend on it
    title: str  # what a passing check means, in a few words
    why: str  # one line: why it matters for an RDMA Strix Halo cluster
    severity: Severity
    fix: str | None  # id of the fix in `fixes.ALL` that cures a failure
    scope: str  # "node" (later: "link")
    fn: NodeCheckFn

    @property
    def doc(self) -> str:
        return (self.fn.__doc__ or "").strip()


def node_check(
    check_id: str,
    *,
    title: str,
    why: str,
    severity: Severity,
    fix: str | None = None,
) -> Callable[[NodeCheckFn], Check]:
    def wrap(fn: NodeCheckFn) -> Check:
        return Check(check_id, title, why, severity, fix, "node", fn)

    return wrap


def passed(entity: str, observed: str = "", expected: str = "", detail: str = "") -> Finding:
    return Finding(Status.PASS, entity, observed, expected, detail)


def warned(entity: str, observed: str = "", expected: str = "", detail: str = "") -> Finding:
    return Finding(Status.WARN, entity, observed, expected, detail)


def failed(entity: str, observed: str = "", expected: str = "", detail: str = "") -> Finding:
    return Finding(Status.FAIL, entity, observed, expected, detail)


def skipped(entity: str, reason: str) -> Finding:
    return Finding(Status.SKIP, entity, detail=reason)

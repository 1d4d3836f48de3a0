"""How a check is declared.

A check is a plain function from facts to findings, wrapped by `node_check`:

    @node_check("node.cpu", title="...", why="...", severity=Severity.CRITICAL)
    def cpu_is_strix_halo(node: NodeFacts, site: Site) -> Iterator[Finding]:
        yield passed(node.name, observed=..., expected=...)

Three scopes exist:
- `node_check(fn(node, site))`: runs once per reachable node;
- `link_check(fn(link, site))`: runs once per link between two nodes (see
  `strixwizard.topology`), and judges both ends together;
- `site_check(fn(topology, site))`: runs once per run, over all nodes and links.

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
    from strixwizard.topology import Link, Topology

NodeCheckFn = Callable[["NodeFacts", "Site"], Iterable[Finding]]
LinkCheckFn = Callable[["Link", "Site"], Iterable[Finding]]
SiteCheckFn = Callable[["Topology", "Site"], Iterable[Finding]]
AnyCheckFn = Callable[..., Iterable[Finding]]


@dataclass(frozen=True)
class Check:
    id: str  # "area.name", stable: scripts and --only depend on it
    title: str  # what a passing check means, in a few words
    why: str  # one line: why it matters for an RDMA Strix Halo cluster
    severity: Severity
    fix: str | None  # id of the fix in `fixes.ALL` that cures a failure
    scope: str  # "node", "link" or "site"
    fn: AnyCheckFn

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


def link_check(
    check_id: str,
    *,
    title: str,
    why: str,
    severity: Severity,
    fix: str | None = None,
) -> Callable[[LinkCheckFn], Check]:
    def wrap(fn: LinkCheckFn) -> Check:
        return Check(check_id, title, why, severity, fix, "link", fn)

    return wrap


def site_check(
    check_id: str,
    *,
    title: str,
    why: str,
    severity: Severity,
    fix: str | None = None,
) -> Callable[[SiteCheckFn], Check]:
    def wrap(fn: SiteCheckFn) -> Check:
        return Check(check_id, title, why, severity, fix, "site", fn)

    return wrap


def passed(entity: str, observed: str = "", expected: str = "", detail: str = "") -> Finding:
    return Finding(Status.PASS, entity, observed, expected, detail)


def warned(entity: str, observed: str = "", expected: str = "", detail: str = "",
           fixable: bool = True) -> Finding:
    return Finding(Status.WARN, entity, observed, expected, detail, fixable)


def failed(entity: str, observed: str = "", expected: str = "", detail: str = "",
           fixable: bool = True) -> Finding:
    """A failure; `fixable=False` when the check's fix does not apply to this case."""
    return Finding(Status.FAIL, entity, observed, expected, detail, fixable)


def skipped(entity: str, reason: str) -> Finding:
    return Finding(Status.SKIP, entity, detail=reason)

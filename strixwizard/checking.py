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

Prologues many checks share come from the declaration, not from copies:
- `requires=(PCI_CAPTURED,)`: a `Requires` that does not hold on the node (or
  link) makes the check skip with its reason before the function runs;
- `per=ROCE_PORTS`: an `Each` picks what the check judges on a node (RoCE
  ports, RDMA NICs...); the function is then called once per item,
  `fn(node, site, item)`, and a node with none skips with the `Each`'s reason.
The shared `Requires` and `Each` values live in `checks/scope.py`.

It must be listed in `checks.ALL`. The engine turns its findings into results,
attaches the fix, and turns an exception into an `error` result for that check
alone. Checks do no I/O: everything comes from the facts.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

from strixwizard.model import Finding, Severity, Status

if TYPE_CHECKING:
    from strixwizard.facts import NodeFacts
    from strixwizard.site import Site
    from strixwizard.topology import Link, Topology

NodeCheckFn = Callable[["NodeFacts", "Site"], Iterable[Finding]]
LinkCheckFn = Callable[["Link", "Site"], Iterable[Finding]]
SiteCheckFn = Callable[["Topology", "Site"], Iterable[Finding]]
AnyCheckFn = Callable[..., Iterable[Finding]]
S = TypeVar("S")
T = TypeVar("T")


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


@dataclass(frozen=True)
class Requires(Generic[S]):
    """A precondition on a check's subject (a node or a link); unmet, the check skips."""

    holds: Callable[[S], bool]
    reason: str | Callable[[S], str]

    def unmet(self, subject: S) -> str | None:
        """The skip reason when the precondition does not hold, else None."""
        if self.holds(subject):
            return None
        return self.reason if isinstance(self.reason, str) else self.reason(subject)


@dataclass(frozen=True)
class Each(Generic[T]):
    """What a per-item node check judges on a node, and the skip reason when there is none."""

    select: Callable[[NodeFacts, Site], Sequence[T]]
    none: str


def _declared(check_id: str, title: str, why: str, severity: Severity, fix: str | None,
              scope: str, fn: AnyCheckFn, body: AnyCheckFn) -> Check:
    """A Check that runs `body`, named and documented by the declared function `fn`."""
    functools.update_wrapper(body, fn)
    return Check(check_id, title, why, severity, fix, scope, body)


def _first_unmet(requires: Sequence[Requires[S]], subject: S) -> str | None:
    return next((reason for r in requires if (reason := r.unmet(subject)) is not None), None)


@overload
def node_check(check_id: str, *, title: str, why: str, severity: Severity, fix: str | None = None,
               requires: Sequence[Requires[NodeFacts]] = ()) -> Callable[[NodeCheckFn], Check]: ...


@overload
def node_check(check_id: str, *, title: str, why: str, severity: Severity, fix: str | None = None,
               requires: Sequence[Requires[NodeFacts]] = (), per: Each[T]
               ) -> Callable[[Callable[[NodeFacts, Site, T], Iterable[Finding]]], Check]: ...


def node_check(
    check_id: str,
    *,
    title: str,
    why: str,
    severity: Severity,
    fix: str | None = None,
    requires: Sequence[Requires[NodeFacts]] = (),
    per: Each[Any] | None = None,
) -> Callable[[AnyCheckFn], Check]:
    def wrap(fn: AnyCheckFn) -> Check:
        def body(node: NodeFacts, site: Site) -> Iterator[Finding]:
            reason = _first_unmet(requires, node)
            if reason is not None:
                yield skipped(node.name, reason)
            elif per is None:
                yield from fn(node, site)
            elif not (items := per.select(node, site)):
                yield skipped(node.name, per.none)
            else:
                for item in items:
                    yield from fn(node, site, item)

        return _declared(check_id, title, why, severity, fix, "node", fn, body)

    return wrap


def link_check(
    check_id: str,
    *,
    title: str,
    why: str,
    severity: Severity,
    fix: str | None = None,
    requires: Sequence[Requires[Link]] = (),
) -> Callable[[LinkCheckFn], Check]:
    def wrap(fn: LinkCheckFn) -> Check:
        def body(link: Link, site: Site) -> Iterator[Finding]:
            reason = _first_unmet(requires, link)
            if reason is not None:
                yield skipped(link.id, reason)
            else:
                yield from fn(link, site)

        return _declared(check_id, title, why, severity, fix, "link", fn, body)

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

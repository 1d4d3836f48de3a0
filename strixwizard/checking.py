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
The shared `Requires` and `Each` values live in `checks/scope.py`
(`captured(fact, reason)` makes an `Each` of one fact that may be missing).

Findings: `passed`, `warned`, `failed`, `skipped`, and `verdict(ok, ...)` for
the usual "pass, or warn (fail) with this advice".

It must be listed in `checks.ALL`. The engine turns its findings into results,
attaches the fix, and turns an exception into an `error` result for that check
alone. Checks do no I/O: everything comes from the facts.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Required, TypedDict, TypeVar, Unpack, overload

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


class Declared(TypedDict, total=False):
    """What every check declares besides its id (see `Check`); `fix` may be left out."""

    title: Required[str]
    why: Required[str]
    severity: Required[Severity]
    fix: str | None


def _declare(check_id: str, scope: str, meta: Declared, entity: Callable[[Any], str],
             requires: Sequence[Requires[Any]] = (), per: Each[Any] | None = None
             ) -> Callable[[AnyCheckFn], Check]:
    """The decorator of every scope: `requires` and `per` run before the declared function."""

    def wrap(fn: AnyCheckFn) -> Check:
        def body(subject: Any, site: Site) -> Iterator[Finding]:
            reason = next((r for need in requires if (r := need.unmet(subject)) is not None), None)
            if reason is not None:
                yield skipped(entity(subject), reason)
            elif per is None:
                yield from fn(subject, site)
            elif not (items := per.select(subject, site)):
                yield skipped(entity(subject), per.none)
            else:
                for item in items:
                    yield from fn(subject, site, item)

        functools.update_wrapper(body, fn)
        return Check(check_id, meta["title"], meta["why"], meta["severity"], meta.get("fix"), scope,
                     body)

    return wrap


@overload
def node_check(check_id: str, *, requires: Sequence[Requires[NodeFacts]] = (),
               **meta: Unpack[Declared]) -> Callable[[NodeCheckFn], Check]: ...


@overload
def node_check(check_id: str, *, requires: Sequence[Requires[NodeFacts]] = (), per: Each[T],
               **meta: Unpack[Declared]
               ) -> Callable[[Callable[[NodeFacts, Site, T], Iterable[Finding]]], Check]: ...


def node_check(check_id: str, *, requires: Sequence[Requires[NodeFacts]] = (),
               per: Each[Any] | None = None, **meta: Unpack[Declared]
               ) -> Callable[[AnyCheckFn], Check]:
    return _declare(check_id, "node", meta, lambda node: node.name, requires, per)


def link_check(check_id: str, *, requires: Sequence[Requires[Link]] = (),
               **meta: Unpack[Declared]) -> Callable[[LinkCheckFn], Check]:
    return _declare(check_id, "link", meta, lambda link: link.id, requires)


def site_check(check_id: str, **meta: Unpack[Declared]) -> Callable[[SiteCheckFn], Check]:
    return _declare(check_id, "site", meta, lambda topology: "site")


def verdict(ok: bool, entity: str, observed: str, expected: str, detail: str,
            otherwise: Status = Status.WARN, fixable: bool = True) -> Finding:
    """A pass when `ok`; else a finding of status `otherwise` (a warning unless told) with `detail`."""
    if ok:
        return passed(entity, observed=observed, expected=expected)
    return Finding(otherwise, entity, observed, expected, detail, fixable)


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

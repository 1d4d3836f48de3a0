"""How a check is declared: how it runs in the code, what it says in the catalog.

A check is a plain function from facts to findings, wrapped by `node_check`:

    @node_check("node.cpu", per=CPU_CAPTURED)
    def cpu_is_strix_halo(node: NodeFacts, site: Site, cpu: CpuInfo) -> Iterator[Finding]:
        yield passed(node.name, observed=..., expected=...)

The decorator carries only how the check runs. What it says to a user (title,
severity, the fix that cures it, why it matters, what it reads, how to fix it by
hand, public sources) is its entry in `checks/catalog.yaml`, under the same id;
`strixwizard explain ID` and `doctor --list-checks --json` show it. A check
without an entry is an error at import that names the check.

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
- `stacks=(LLAMA_RPC,)`: the stacks (`strixwizard.site.STACKS`) that depend on what the check
  judges; `doctor --stack` (or the site's `stack:`) runs only the checks of its stack and says
  which it left out. None given: every stack depends on it.
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
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Generic, TypedDict, TypeVar, Unpack, overload

from strixwizard.files import package_text
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

#: Where the entries of the product's checks live (package `checks`, shipped in the wheel).
CATALOG = ("checks", "catalog.yaml")


class CatalogError(Exception):
    """The catalog and the declared checks disagree; the message says what to write where."""


@dataclass(frozen=True)
class Entry:
    """What a check says to a user: its catalog entry (every field is required there)."""

    title: str  # what a passing check means, in a few words
    severity: Severity
    fix: str | None  # id of the fix in `fixes.ALL` that cures a failure
    why: str  # one line: why it matters for an RDMA Strix Halo cluster
    reads: str  # what it reads on a node (files, commands), from the facts
    matters: str  # why it matters, with the numbers
    manual: str  # how to fix it by hand
    sources: tuple[str, ...]  # public URLs behind `matters` and `manual`


ENTRY_FIELDS = tuple(f.name for f in fields(Entry))


def _entry(check_id: str, raw: object, where: str) -> Entry:
    if not isinstance(raw, Mapping):
        raise CatalogError(f"{where}: entry {check_id!r} is not a mapping of fields")
    missing = [name for name in ENTRY_FIELDS if name not in raw]
    unknown = sorted(set(raw) - set(ENTRY_FIELDS))
    if missing or unknown:
        raise CatalogError(f"{where}: entry {check_id!r}: " + "; ".join(
            part for part in (f"missing {', '.join(missing)}" if missing else "",
                              f"unknown {', '.join(unknown)}" if unknown else "") if part))
    texts = {name: raw[name] for name in ENTRY_FIELDS if name not in ("severity", "fix", "sources")}
    bad = [name for name, value in texts.items() if not isinstance(value, str) or not value.strip()]
    sources = raw["sources"]
    if not isinstance(sources, list) or not all(isinstance(s, str) for s in sources):
        bad.append("sources")
    if raw["fix"] is not None and not isinstance(raw["fix"], str):
        bad.append("fix")
    try:
        severity = Severity(raw["severity"])
    except ValueError:
        bad.append("severity")
    if bad:
        raise CatalogError(f"{where}: entry {check_id!r}: {', '.join(bad)} must be "
                           "non-empty text (sources a list of URLs, severity one of "
                           f"{', '.join(s.value for s in Severity)})")
    return Entry(severity=severity, fix=raw["fix"], sources=tuple(sources),
                 **{name: str(value).strip() for name, value in texts.items()})


@functools.cache
def catalog() -> dict[str, Entry]:
    """The product's check entries by id, read once (with libyaml's parser when present)."""
    import yaml

    package, name = CATALOG
    text = package_text(package, name)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    raw = yaml.load(text, Loader=loader)
    where = "/".join(CATALOG)
    if not isinstance(raw, dict):
        raise CatalogError(f"{where}: not a mapping of check ids to entries")
    return {str(check_id): _entry(str(check_id), value, where) for check_id, value in raw.items()}


@dataclass(frozen=True)
class Requires(Generic[S]):
    """A precondition on a check's subject (a node or a link); unmet, the check skips."""

    holds: Callable[[S], bool]
    reason: str | Callable[[S], str]
    about: str = ""  # the reason in general, where `reason` depends on the subject

    @property
    def described(self) -> str:
        """The skip reason as a sentence about no subject in particular (explain pages)."""
        return self.reason if isinstance(self.reason, str) else self.about

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


@dataclass(frozen=True)
class Check(Entry):
    """A declared check: its catalog entry, and how it runs."""

    id: str  # "area.name", stable: scripts and --only depend on it
    scope: str  # "node", "link" or "site"
    fn: AnyCheckFn
    requires: tuple[Requires[Any], ...] = ()
    per: Each[Any] | None = None
    stacks: frozenset[str] = frozenset()  # the stacks that depend on it; empty: every stack

    def concerns(self, stack: str) -> bool:
        """Whether a site running `stack` ("": not said) depends on what this check judges."""
        return not stack or not self.stacks or stack in self.stacks

    @property
    def doc(self) -> str:
        return " ".join((self.fn.__doc__ or "").split())


class Legacy(TypedDict, total=False):
    """What a decorator carried before the catalog; only accepted to say where it goes now."""

    title: str
    why: str
    severity: Severity
    fix: str | None


def _yaml_stub(check_id: str, legacy: Legacy) -> str:
    severity = legacy.get("severity")
    lines = [f"{check_id}:", f"  title: {legacy.get('title', 'TITLE')}",
             f"  severity: {severity.value if severity else 'medium'}",
             f"  fix: {legacy.get('fix') or 'null'}", f"  why: {legacy.get('why', 'ONE LINE')}",
             "  reads: WHAT IT READS", "  matters: WHY, WITH THE NUMBERS",
             "  manual: HOW TO FIX IT BY HAND", "  sources:", "    - https://..."]
    return "\n".join(lines)


def _entry_for(check_id: str, fn: AnyCheckFn, entry: Entry | None, legacy: Legacy) -> Entry:
    """The check's entry: its own (a check outside the product, e.g. a test's), else the
    catalog's; a missing entry, or metadata still in the decorator, is an error naming it."""
    where = f"check {check_id!r} ({fn.__module__}.{fn.__qualname__})"
    if legacy:
        moved = ", ".join(f"{name}=" for name in legacy)
        raise CatalogError(f"{where} declares {moved} in its decorator: move them to "
                           f"{'/'.join(CATALOG)}, with the explain fields, and keep only how it "
                           f"runs (requires=, per=) in the decorator:\n{_yaml_stub(check_id, legacy)}")
    if entry is not None:
        return entry
    found = catalog().get(check_id)
    if found is None:
        raise CatalogError(f"{where} has no entry in {'/'.join(CATALOG)}: add one with "
                           f"{', '.join(ENTRY_FIELDS)}:\n{_yaml_stub(check_id, {})}")
    return found


def _declare(check_id: str, scope: str, entity: Callable[[Any], str],
             requires: Sequence[Requires[Any]] = (), per: Each[Any] | None = None,
             entry: Entry | None = None, legacy: Legacy | None = None,
             stacks: Iterable[str] = ()) -> Callable[[AnyCheckFn], Check]:
    """The decorator of every scope: `requires` and `per` run before the declared function."""

    def wrap(fn: AnyCheckFn) -> Check:
        found = _entry_for(check_id, fn, entry, legacy or {})

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
        said = {name: getattr(found, name) for name in ENTRY_FIELDS}
        return Check(**said, id=check_id, scope=scope, fn=body, requires=tuple(requires), per=per,
                     stacks=_stacks(check_id, stacks))

    return wrap


def _stacks(check_id: str, stacks: Iterable[str]) -> frozenset[str]:
    from strixwizard.site import STACKS

    named = frozenset(stacks)
    if unknown := sorted(named - set(STACKS)):
        raise CatalogError(f"check {check_id!r} names unknown stack(s) {', '.join(unknown)} "
                           f"(known: {', '.join(STACKS)})")
    return named


@overload
def node_check(check_id: str, *, requires: Sequence[Requires[NodeFacts]] = (),
               entry: Entry | None = None, stacks: Iterable[str] = (),
               **legacy: Unpack[Legacy]) -> Callable[[NodeCheckFn], Check]: ...


@overload
def node_check(check_id: str, *, requires: Sequence[Requires[NodeFacts]] = (), per: Each[T],
               entry: Entry | None = None, stacks: Iterable[str] = (), **legacy: Unpack[Legacy]
               ) -> Callable[[Callable[[NodeFacts, Site, T], Iterable[Finding]]], Check]: ...


def node_check(check_id: str, *, requires: Sequence[Requires[NodeFacts]] = (),
               per: Each[Any] | None = None, entry: Entry | None = None,
               stacks: Iterable[str] = (), **legacy: Unpack[Legacy]
               ) -> Callable[[AnyCheckFn], Check]:
    return _declare(check_id, "node", lambda node: node.name, requires, per, entry, legacy, stacks)


def link_check(check_id: str, *, requires: Sequence[Requires[Link]] = (),
               entry: Entry | None = None, stacks: Iterable[str] = (),
               **legacy: Unpack[Legacy]) -> Callable[[LinkCheckFn], Check]:
    return _declare(check_id, "link", lambda link: link.id, requires, None, entry, legacy, stacks)


def site_check(check_id: str, *, entry: Entry | None = None, stacks: Iterable[str] = (),
               **legacy: Unpack[Legacy]) -> Callable[[SiteCheckFn], Check]:
    return _declare(check_id, "site", lambda topology: "site", (), None, entry, legacy, stacks)


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

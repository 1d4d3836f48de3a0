"""Planning: the plan function of every fix of the registry the caller gives (`fixes.FIXES`,
passed by the services) over a discovery's facts and topology. Pure: no I/O."""

from __future__ import annotations

import difflib
import traceback
from collections.abc import Iterable, Sequence

from strixwizard.discovery import Discovery
from strixwizard.errors import UsageError
from strixwizard.fixing.context import Fix, PlanContext
from strixwizard.fixing.model import Plan, SitePlan
from strixwizard.model import aliases_of


def _named(fix: Fix, wanted: str) -> bool:
    """`wanted` is the fix's id or area (`dcb` = every `dcb.*`), or an older id or area of it."""
    return any(name == wanted or name.startswith(wanted + ".")
               for name in (fix.id, *aliases_of(fix.id)))


def select(fixes: Sequence[Fix], only: Iterable[str]) -> tuple[Fix, ...]:
    """--only: a fix id, or an area (`dcb` = every `dcb.*`)."""
    wanted = list(only)
    ids = [f.id for f in fixes]
    for w in wanted:
        if not any(_named(f, w) for f in fixes):
            close = difflib.get_close_matches(w, ids, n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise UsageError(f"unknown fix id {w!r}{hint} (known: {', '.join(ids)})")
    return tuple(f for f in fixes if not wanted or any(_named(f, w) for w in wanted))


def plan_site(found: Discovery, only: Iterable[str] = (), persist: bool = True, *,
              fixes: Sequence[Fix]) -> SitePlan:
    """The plans of every selected fix of `fixes` (in their order) for the reachable nodes of a
    discovery, over its topology; converged nodes plan to nothing."""
    only = tuple(only)
    chosen = select(fixes, only)
    site, facts = found.site, found.facts
    ctx = PlanContext(site=site, nodes=tuple(facts), topology=found.topology,
                      persist=persist,
                      asked=frozenset(f.id for f in chosen) if only else frozenset())
    order = {node.name: i for i, node in enumerate(facts)}
    result = SitePlan(site=site.name, unreachable=found.unreachable)
    for fix in chosen:
        try:
            plans = list(fix.plan(ctx))
        except Exception as error:  # one broken planner must not hide the others
            where = traceback.extract_tb(error.__traceback__)[-1]
            plans = [Plan(fix.id, node.name, node.name, notes=(
                f"planning crashed: {error!r} at {where.filename}:{where.lineno}; please report "
                "it with `strixwizard capture`",)) for node in facts]
        result.plans.extend(plans)
    fix_order = {fix.id: i for i, fix in enumerate(chosen)}
    result.plans.sort(key=lambda p: (order.get(p.node, 0), fix_order[p.fix]))
    return result

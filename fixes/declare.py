"""How a fix is declared: its metadata next to the function that plans it.

    @fix("dcb.pfc", summary="...", reversible=True, reboot=False)
    def plan_pfc(ctx: PlanContext) -> Iterator[Plan]:
        ...

The decorator returns the registered `Fix` (metadata + plan function); list it
in `fixes.FIXES`, whose order is the order plans run on a node. `fixes.ALL`
(the `FixRef`s checks name and doctor shows) is derived from that list, so a
summary sits beside the code it describes. A fix strixwizard does not automate
is declared with `fixes.manual.manual_fix` and an instruction instead of a plan
function.
"""

from __future__ import annotations

from collections.abc import Callable

from strixwizard.fixing.context import Fix, PlanFn
from strixwizard.model import FixRef


def fix(fix_id: str, *, summary: str, reversible: bool, reboot: bool) -> Callable[[PlanFn], Fix]:
    def wrap(plan: PlanFn) -> Fix:
        return Fix(FixRef(fix_id, summary, reversible, reboot), plan)

    return wrap


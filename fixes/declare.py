"""How a fix is declared: its metadata next to the function that plans it.

    @fix("dcb.pfc", summary="...", reversible=True, reboot=False,
         writes=(f"{UNIT_DIR}/strixwizard-dcb-pfc-*.service",), persists="...")
    def plan_pfc(ctx: PlanContext) -> Iterator[Plan]:
        ...  # its docstring: what the plan changes (`strixwizard explain` shows it)

The decorator returns the registered `Fix` (metadata + plan function); list it
in `fixes.FIXES`, whose order is the order plans run on a node. `fixes.ALL`
(the `FixRef`s checks name and doctor shows) is derived from that list, so a
summary sits beside the code it describes. `writes` names every file the plans
may write (`*` where a device or interface name goes; a test runs the plans and
holds them to it) and `persists` says how the change survives a reboot. A fix
strixwizard does not automate is declared with `fixes.manual.manual_fix` and an
instruction instead of a plan function.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from strixwizard.fixing.context import Fix, PlanFn
from strixwizard.model import FixRef


@dataclass(frozen=True)
class DeclaredFix(Fix):
    """An automated fix, with what its explain page says beyond the summary."""

    writes: tuple[str, ...] = ()  # files its plans may write; `*` stands for a name
    persists: str = ""  # how the change survives a reboot (without --runtime-only)


def fix(fix_id: str, *, summary: str, reversible: bool, reboot: bool,
        writes: tuple[str, ...] = (), persists: str) -> Callable[[PlanFn], Fix]:
    def wrap(plan: PlanFn) -> Fix:
        return DeclaredFix(FixRef(fix_id, summary, reversible, reboot), plan, writes=writes,
                           persists=persists)

    return wrap

"""How a fix is declared: its metadata next to the function that plans it.

    @fix("dcb.pfc", summary="...", reversible=True, reboot=False, unit=True)
    def plan_pfc(ctx: PlanContext) -> Iterator[Plan]:
        ...  # its docstring: what the plan changes (`strixwizard explain` shows it)

The decorator returns the registered `Fix` (metadata + plan function); list it
in `fixes.FIXES`, whose order is the order plans run on a node. `fixes.ALL`
(the `FixRef`s checks name and doctor shows) is derived from that list, so a
summary sits beside the code it describes. `writes` names every file the plans
may write (`*` where a device or interface name goes; a test runs the plans and
holds them to it), `unit=True` says they replay runtime changes at boot with a
systemd unit (`fixes.steps.unit_steps`, whose files it adds to `writes`), and
`persists` says how the change survives a reboot (said for `unit` alone). A fix
strixwizard does not automate is declared with `fixes.manual.manual_fix` and an
instruction instead of a plan function.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from fixes.steps import unit_name
from strixwizard.facts.persistence import UNIT_DIR
from strixwizard.fixing.context import Fix, PlanFn
from strixwizard.model import FixRef

UNIT_PERSISTS = ("runtime settings are lost at reboot: a systemd unit per interface (or device) "
                 "replays them at boot; without systemd the plan says it is runtime only")


@dataclass(frozen=True)
class DeclaredFix(Fix):
    """An automated fix, with what its explain page says beyond the summary."""

    writes: tuple[str, ...] = ()  # files its plans may write; `*` stands for a name
    persists: str = ""  # how the change survives a reboot (without --runtime-only)


def fix(fix_id: str, *, summary: str, reversible: bool, reboot: bool,
        writes: tuple[str, ...] = (), unit: bool = False, persists: str = "") -> Callable[[PlanFn], Fix]:
    if unit:
        writes += (f"{UNIT_DIR}/{unit_name(fix_id, '*')}",)
    how = persists or (UNIT_PERSISTS if unit else "")
    if not how:
        raise ValueError(f"fix {fix_id}: say how it survives a reboot (persists=) or unit=True")

    def wrap(plan: PlanFn) -> Fix:
        return DeclaredFix(FixRef(fix_id, summary, reversible, reboot), plan, writes=writes,
                           persists=how)

    return wrap

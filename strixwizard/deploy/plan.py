"""The deploy stacks, by name, and the dispatch to them. Pure: no I/O.

A deploy plan is, per node, fix-engine `Plan`s that the fix engine previews, applies,
journals and rolls back like any fix. Each stack is a package under `deploy/stacks/` whose
`__init__` declares it as `STACK` (a `deploy/base.py` `Stack`); `STACKS` is every such package,
found by walking `strixwizard.deploy.stacks`, in the order the stacks declare (`Stack.order`:
the first is the default). A new stack is its package; no list names it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TextIO

from strixwizard.deploy.base import (
    DEFAULT_TARGET_DIR,
    WITH_ENV,
    DeployPlan,
    DeploySettings,
    Progress,
    Stack,
    with_observed,
)
from strixwizard.deploy.declare import Panel, option_values
from strixwizard.deploy.env import ClusterEnv, DeployRefused
from strixwizard.facts import NodeFacts


def discovered() -> dict[str, Stack]:
    """Every package under `strixwizard.deploy.stacks` and the `STACK` it declares, by name, in
    the stacks' declared order (then by name)."""
    import importlib
    import pkgutil

    from strixwizard.deploy import stacks

    found: list[Stack] = []
    for info in pkgutil.iter_modules(stacks.__path__):
        if info.ispkg:
            declared = importlib.import_module(f"{stacks.__name__}.{info.name}").STACK
            if not isinstance(declared, Stack):
                raise TypeError(f"{stacks.__name__}.{info.name}.STACK is not a Stack")
            found.append(declared)
    found.sort(key=lambda stack: (stack.order, stack.name))
    return {stack.name: stack for stack in found}


#: Every deploy stack by name (the first is the default: `DeploySettings.stack`).
STACKS: dict[str, Stack] = discovered()


def default_stack() -> Stack:
    """The stack a deploy takes when none is named: the first one listed."""
    return next(iter(STACKS.values()))


def stack_of(name: str) -> Stack:
    """The stack of that name ("": the default one); an unknown one is refused with the names
    known."""
    stack = STACKS.get(name) if name else default_stack()
    if stack is None:
        raise DeployRefused(f"no deploy stack {name!r} (known: {', '.join(STACKS)})")
    return stack


def plan_deploy(env: ClusterEnv, facts: dict[str, NodeFacts], settings: DeploySettings
                ) -> DeployPlan:
    """The plan of the settings' stack, from the stack's own declaration (which the plan then
    carries, for its JSON)."""
    stack = stack_of(settings.stack)
    planned = stack.plan(env, facts, settings)
    planned.declared = stack
    return planned


def settings_from(name: str, values: Mapping[str, Any], common: DeploySettings | None = None,
                  site: object | None = None) -> DeploySettings:
    """A stack's settings from the values of its options by `dest` (and `model`), each option
    not given at the site file's value (`Option.site_key`, when the site says one) or else at
    its default: the one road from the CLI's flags and the wizard's pickers."""
    stack = stack_of(name)
    return stack.settings(common or DeploySettings(),
                          option_values(stack.options, with_site_defaults(stack, values, site)))


def with_site_defaults(stack: Stack, values: Mapping[str, Any], site: object | None
                       ) -> dict[str, Any]:
    """`values` with each option of `stack` that was not given at the site's value for it."""
    out = dict(values)
    for option in stack.options:
        said = getattr(site, option.site_key, None) if option.site_key else None
        if said is not None and not option.given(out.get(option.dest)):
            out[option.dest] = said
    return out


def render_plan(plan: DeployPlan, out: TextIO, apply_command: str | None = "") -> None:
    """The plan as text, as its stack renders it (or the generic header and changes).
    `apply_command`: the command that applies it ("": the default; None: it is running)."""
    from strixwizard.deploy.render import render_deploy

    render = stack_of(plan.settings.stack).render or render_deploy
    render(plan, out, apply_command)


def panel_of(plan: DeployPlan) -> Panel:
    """The plan in the wizard, as its stack declares it (or each node's steps)."""
    from strixwizard.deploy.render import steps_panel

    panel = stack_of(plan.settings.stack).panel or steps_panel
    return panel(plan)


__all__ = ["DEFAULT_TARGET_DIR", "STACKS", "WITH_ENV", "DeployPlan", "DeploySettings",
           "Progress", "Stack", "default_stack", "panel_of", "plan_deploy", "render_plan",
           "settings_from", "stack_of", "with_observed"]

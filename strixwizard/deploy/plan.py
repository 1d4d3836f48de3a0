"""The deploy stacks, by name, and the dispatch to them. Pure: no I/O.

A deploy plan is, per node, fix-engine `Plan`s that the fix engine previews, applies,
journals and rolls back like any fix. Each stack is a package under `deploy/stacks/` whose
`__init__` declares it as `STACK` (a `deploy/base.py` `Stack`); `STACKS` is every such package,
found by walking `strixwizard.deploy.stacks`, in the order the stacks declare (`Stack.order`:
the first is the default). A new stack is its package; no list names it.
"""

from __future__ import annotations

from strixwizard.deploy.base import (
    DEFAULT_TARGET_DIR,
    RAY_PORT,
    WITH_ENV,
    Choice,
    DeployPlan,
    DeploySettings,
    Progress,
    Stack,
    with_observed,
)
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


def stack_of(name: str) -> Stack:
    """The stack of that name; an unknown one is refused with the names known."""
    stack = STACKS.get(name)
    if stack is None:
        raise DeployRefused(f"no deploy stack {name!r} (known: {', '.join(STACKS)})")
    return stack


def plan_deploy(env: ClusterEnv, facts: dict[str, NodeFacts], settings: DeploySettings
                ) -> DeployPlan:
    """The plan of the settings' stack, from the stack's own declaration."""
    return stack_of(settings.stack).plan(env, facts, settings)


def settings_for(stack: str, choice: Choice, common: DeploySettings | None = None
                 ) -> DeploySettings:
    """The settings of a stack from the user's choice (the wizard; the CLI for a stack with no
    flags of its own)."""
    return stack_of(stack).settings(common or DeploySettings(), choice)


__all__ = ["DEFAULT_TARGET_DIR", "RAY_PORT", "STACKS", "WITH_ENV", "Choice", "DeployPlan",
           "DeploySettings", "Progress", "Stack", "plan_deploy", "settings_for", "stack_of", "with_observed"]

"""The deploy stacks, by name, and the dispatch to them. Pure: no I/O.

A deploy plan is, per node, fix-engine `Plan`s that the fix engine previews, applies,
journals and rolls back like any fix. Each stack declares itself in its own module as a
`Stack` (`deploy/base.py`: its name, label, settings, plan, smoke test, apply question and
rollback order): `deploy/ray_stack.py` (RCCL · Ray · vLLM, the default) and
`deploy/llama_stack.py` (llama.cpp RPC). A new stack is its module, listed in `STACKS`.
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
from strixwizard.deploy.llama_stack import LLAMA
from strixwizard.deploy.ray_stack import RAY
from strixwizard.facts import NodeFacts

#: Every deploy stack by name (the first is the default: `DeploySettings.stack`).
STACKS: dict[str, Stack] = {stack.name: stack for stack in (RAY, LLAMA)}


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

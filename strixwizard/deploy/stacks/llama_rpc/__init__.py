"""The llama.cpp RPC stack (`--stack llama-rpc`) as it declares itself: `ggml-rpc-server` on
each worker bound to its fabric address, `llama-server --rpc` on the head (`llama.py` plans them,
`run.py` and `path.py` smoke-test them, `persist.py` writes the units, `load.py` weighs the model's
load, `render.py` shows the plan).
"""

from __future__ import annotations

from dataclasses import replace

from strixwizard.deploy.base import Choice, DeployPlan, DeploySettings, Progress, Stack
from strixwizard.deploy.env import ClusterEnv
from strixwizard.deploy.smoke import SmokeReport
from strixwizard.deploy.stacks.llama_rpc.llama import (
    RUN_DIR,
    SERVER_TARGET,
    SERVER_UNIT,
    LlamaPlan,
    LlamaSettings,
    plan_llama,
)
from strixwizard.deploy.stacks.llama_rpc.llama import (
    STACK as NAME,
)
from strixwizard.deploy.stacks.llama_rpc.run import smoke_llama
from strixwizard.facts import NodeFacts
from strixwizard.fixing.runner import Runner


def plan_llama_stack(env: ClusterEnv, facts: dict[str, NodeFacts], settings: DeploySettings
                     ) -> LlamaPlan:
    return plan_llama(env, facts, settings, settings.own(LlamaSettings) or LlamaSettings())


def smoke_llama_stack(plan: DeployPlan, runners: dict[str, Runner], say: Progress | None = None
                      ) -> SmokeReport:
    if not isinstance(plan, LlamaPlan):
        raise TypeError(f"the llama-rpc smoke test needs a llama-rpc plan, not {type(plan).__name__}")
    return smoke_llama(plan, runners, say)


def llama_settings_for(common: DeploySettings, choice: Choice) -> DeploySettings:
    """The GGUF path on the head, systemd units or not, where logs go."""
    llama = LlamaSettings(model=choice.model, persist=choice.persist,
                          run_dir=choice.run_dir or RUN_DIR)
    return replace(common, stack=NAME, options=(llama,))


def llama_question(plan: DeployPlan) -> str:
    llama = plan.settings.own(LlamaSettings)
    how = "as systemd units (started now and at every boot), " if llama and llama.persist else ""
    return (f"ggml-rpc-server starts {how}on each worker bound to its fabric address, then "
            "llama-server --rpc on the head; a journal is written first, a failing node rolls "
            "every node back, then the smoke test runs (one completion, RDMA on both ends from "
            "the logs).")


STACK = Stack(NAME, "llama.cpp RPC", plan_llama_stack, smoke_llama_stack, llama_settings_for,
              llama_question, switches=frozenset({"persist"}),
              stops_first=frozenset({SERVER_TARGET, SERVER_UNIT}), order=10)  # the server before its workers

"""The llama.cpp RPC stack (`--stack llama-rpc`) as it declares itself: `ggml-rpc-server` on
each worker bound to its fabric address, `llama-server --rpc` on the head (`llama.py` plans them,
`run.py` and `path.py` smoke-test them, `persist.py` writes the units, `load.py` weighs the model's
load, `render.py` shows the plan).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from strixwizard.deploy.base import DeployPlan, DeploySettings, Progress, Stack
from strixwizard.deploy.declare import PORT, TIMEOUT, Field, Option, refuse_control_characters, whole
from strixwizard.deploy.env import ClusterEnv
from strixwizard.deploy.smoke import SmokeReport
from strixwizard.deploy.stacks.llama_rpc.llama import (
    RPC_PORT,
    RUN_DIR,
    SERVER_PORT,
    SERVER_TARGET,
    SPLIT_MODES,
    LlamaPlan,
    LlamaSettings,
    llama_json,
    plan_llama,
)
from strixwizard.deploy.stacks.llama_rpc.llama import STACK as NAME
from strixwizard.deploy.stacks.llama_rpc.persist import SERVER_UNIT, UNIT_DIR
from strixwizard.deploy.stacks.llama_rpc.recipe import (
    BACKENDS,
    DEFAULT_BIN_DIR,
    DEFAULT_BUILD_DIR,
    DEFAULT_TIMEOUT_S,
)
from strixwizard.deploy.stacks.llama_rpc.render import llama_panel, render_llama
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


#: the values that become a line of a systemd unit or an argument on the nodes
_TO_NODES = {"gguf": "--gguf", "model": "--model", "gpu_layers": "--gpu-layers",
             "llama_bin_dir": "--llama-bin-dir", "llama_run_dir": "--llama-run-dir",
             "unit_dir": "--unit-dir", "build_dir": "--build-dir"}


def llama_settings_from(common: DeploySettings, values: Mapping[str, Any]) -> DeploySettings:
    """The GGUF path on the head (--gguf, else the model), the llama.cpp RPC options; a
    control character in a value that reaches a node is refused."""
    refuse_control_characters([*((flag, values.get(dest)) for dest, flag in _TO_NODES.items()),
                               ("--target-dir", common.target_dir),
                               *(("--rpc-device", device) for device in values["rpc_device"])])
    llama = LlamaSettings(model=values["gguf"] or values.get("model"), rpc_port=values["rpc_port"],
                          server_port=values["server_port"], split_mode=values["split_mode"],
                          gpu_layers=values["gpu_layers"], no_mmap=values["no_mmap"],
                          cache=not values["no_rpc_cache"], devices=tuple(values["rpc_device"]),
                          bin_dir=values["llama_bin_dir"], rpc_on_head=values["rpc_on_head"],
                          run_dir=values["llama_run_dir"], persist=values["persist"],
                          unit_dir=values["unit_dir"])
    return replace(common, stack=NAME, options=(llama,))


def llama_question(plan: DeployPlan) -> str:
    llama = plan.settings.own(LlamaSettings)
    how = "as systemd units (started now and at every boot), " if llama and llama.persist else ""
    return (f"ggml-rpc-server starts {how}on each worker bound to its fabric address, then "
            "llama-server --rpc on the head; a journal is written first, a failing node rolls "
            "every node back, then the smoke test runs (one completion, RDMA on both ends from "
            "the logs).")


BUILD_GROUP = "Build llama.cpp (--stack llama-rpc --build SOURCE)"

OPTIONS = (
    Option("--gguf", "gguf", metavar="PATH",
           help="the GGUF model on the head (llama-rpc; without it llama-server is only shown)"),
    Option("--split-mode", "split_mode", choices=SPLIT_MODES, default="layer",
           help="llama-server -sm (default layer)"),
    Option("--gpu-layers", "gpu_layers", default="99", metavar="N", help="llama-server -ngl"),
    Option("--no-mmap", "no_mmap", action="store_true",
           help="large models: load instead of mapping (-lm none on newer builds)"),
    Option("--rpc-port", "rpc_port", type=PORT, default=RPC_PORT, metavar="PORT"),
    Option("--server-port", "server_port", type=PORT, default=SERVER_PORT, metavar="PORT"),
    Option("--rpc-device", "rpc_device", action="append", default=[], metavar="DEV",
           help="ggml-rpc-server -d (repeat; default: every device)"),
    Option("--no-rpc-cache", "no_rpc_cache", action="store_true",
           help="run ggml-rpc-server without its tensor cache (-c)"),
    Option("--rpc-on-head", "rpc_on_head", action="store_true",
           help="run an RPC server on the head too and list it in --rpc"),
    Option("--llama-bin-dir", "llama_bin_dir", metavar="DIR", site_key="llama_bin_dir",
           help="where the llama.cpp binaries are on the nodes (default: the site file's "
           "`llama_bin_dir:`, else PATH); where --build installs them (default: the site's, "
           f"else {DEFAULT_BIN_DIR})"),
    Option("--llama-run-dir", "llama_run_dir", default=RUN_DIR, metavar="DIR",
           help="pid files and logs on each node (logs are kept after a rollback)"),
    Option("--persist", "persist", action="store_true", wizard=Field("systemd units"),
           refused_elsewhere=True,
           help="a systemd unit per program (started now and at every boot) instead of a process "
           "for this boot only; --rollback disables and removes them"),
    Option("--unit-dir", "unit_dir", default=UNIT_DIR, metavar="DIR",
           help="where --persist writes the units"),
    *(Option(flag, dest, group=BUILD_GROUP, refused_elsewhere=True, **settings)
      for flag, dest, settings in (
        ("--build", "build", {"metavar": "SOURCE", "help": (
            "build llama.cpp from SOURCE (a llama.cpp tree or a .tar.gz of one, on this machine) "
            "on one node, copy the programs to every node of its machine and install them in "
            f"--llama-bin-dir (default {DEFAULT_BIN_DIR}); stops before any launch. Without "
            "--apply: the plan and the preflight only")}),
        ("--build-on", "build_on", {"metavar": "NODE",
                                    "help": "the node that compiles (default: the first)"}),
        ("--build-backend", "build_backend", {"choices": BACKENDS, "help": (
            "the GPU backend (default: vulkan on a Strix Halo, else cpu; said in the plan)")}),
        ("--build-timeout", "build_timeout", {"type": TIMEOUT, "default": DEFAULT_TIMEOUT_S,
                                              "metavar": "SECONDS", "help": (
            f"stop the build after this long (default {DEFAULT_TIMEOUT_S:g}); nothing is "
            "installed then")}),
        ("--build-dir", "build_dir", {"default": DEFAULT_BUILD_DIR, "metavar": "DIR", "help": (
            "the build folder on the nodes (the source, the build tree, build.log, the staged "
            "programs)")}),
        ("--build-jobs", "build_jobs", {"type": whole(0, 1024), "default": 0, "metavar": "N",
                                        "help": "parallel compile jobs (default 0: every core)"}),
    )),
)

STACK = Stack(
    NAME, "llama.cpp RPC", plan_llama_stack, smoke_llama_stack, llama_settings_from,
    llama_question, render=render_llama, json=llama_json, panel=llama_panel, options=OPTIONS,
    about="ggml-rpc-server on each worker's fabric address and llama-server --rpc on the head, "
    "then one completion and RDMA negotiated on both ends, from the logs (--persist: as systemd "
    "units)",
    model_hint="GGUF file path on the head",
    hints={"--serve": "; with --stack llama-rpc, --gguf PATH starts llama-server"},
    stops_first=frozenset({SERVER_TARGET, SERVER_UNIT}),  # the server before its workers
    commands={"build": "strixwizard.cli.llama_build:cmd_build"},
    order=10)

__all__ = ["STACK"]

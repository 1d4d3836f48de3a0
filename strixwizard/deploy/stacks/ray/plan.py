"""The RCCL · Ray · vLLM stack's plan (`--stack ray`, the default), its settings from the
option values and its JSON fields. Pure.

`plan_ray` plans, per node, in this order (the head first, so workers find it):
- `deploy.env`: FILE `DIR/rccl.env` (see `env.ClusterEnv.file_text`);
- `deploy.container`: FILE `DIR/podman-run.sh`, podman with the devices and limits RCCL needs;
- `deploy.rccl`: notes only: RCCL built for gfx1151 or not, how to build it and rccl-tests;
- `deploy.ray`: FILE `DIR/ray-start.sh`, then COMMAND `ray start` through it (head:
  `--head --port=6379`; workers: `--address=HEAD:6379`) with the env file exported,
  because Ray actors inherit the *daemon's* environment; undo stops exactly that Ray
  (see `deploy/stacks/ray/ray.py`);
- head only, `deploy.vllm`: FILE `DIR/vllm-serve.sh` with the launch line for
  `--model` (written and shown, never started by the deploy).

Every plan shares one group: if any node fails, every node is rolled back, so
the cluster is never left half deployed.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from strixwizard.deploy.base import (
    WITH_ENV,
    DeployPlan,
    DeploySettings,
    file_step,
    group_of,
    mkdir_step,
)
from strixwizard.deploy.env import ClusterEnv, comment
from strixwizard.deploy.stacks.ray.rccl import rccl_notes, rccl_tests_note
from strixwizard.deploy.stacks.ray.serve import ServeSettings, server_url
from strixwizard.facts import NodeFacts
from strixwizard.fixing.model import Plan, SitePlan, Step
from strixwizard.site import RAY

__all__ = ["NAME", "WITH_ENV", "RayPlan", "container_script", "plan_ray", "ray_argv", "ray_json",
           "ray_question", "ray_settings_from", "ray_steps", "vllm_script"]

NAME = RAY  # the name strixwizard.site.STACKS gives it


@dataclass
class RayPlan(DeployPlan):
    """The ray stack's plan: the vLLM launch line, `ray start` per node, and `vllm serve` when
    --serve asked for it."""

    vllm_argv: tuple[str, ...] = ()
    ray_argv: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def serve_json(self) -> dict[str, Any] | None:
        serve = self.settings.own(ServeSettings)
        if serve is None:
            return None
        return {"url": server_url(self.env, serve), "pidfile": serve.pidfile, "log": serve.log,
                "health_timeout_s": serve.health_timeout_s}


def ray_json(plan: DeployPlan) -> dict[str, Any]:
    """The ray stack's own fields of the plan's JSON."""
    assert isinstance(plan, RayPlan)
    return {"vllm_argv": list(plan.vllm_argv), "vllm_line": shlex.join(plan.vllm_argv),
            "ray_argv": {k: list(v) for k, v in plan.ray_argv.items()},
            "serve": plan.serve_json()}


def ray_settings_from(common: DeploySettings, values: Mapping[str, Any]) -> DeploySettings:
    """The model, Ray's own options, and `vllm serve` with its options when --serve asks."""
    from strixwizard.deploy.stacks.ray.ray import RaySettings

    options: list[object] = [RaySettings(temp_dir=values["ray_temp_dir"],
                                         num_cpus=values["ray_num_cpus"],
                                         object_store_bytes=values["ray_object_store_bytes"])]
    if values["serve"]:
        options.append(ServeSettings(port=values["vllm_port"], run_dir=values["serve_run_dir"],
                                     health_timeout_s=values["serve_timeout"],
                                     max_model_len=values["max_model_len"],
                                     eager=False if values["no_enforce_eager"] else None,
                                     bin_dir=values["vllm_bin_dir"]))
    return replace(common, stack=NAME, model=values.get("model"), options=tuple(options))


def ray_question(plan: DeployPlan) -> str:
    serve = ("; vllm serve starts on the head and the smoke test also waits for its /health "
             "and times one completion" if plan.settings.own(ServeSettings) is not None else "")
    return ("Each node's state is read first (refused if Ray already runs with another "
            "environment), a journal is written before the first step, a failing node rolls every "
            "node back, then the smoke test runs (Ray's node count, a 2-rank RCCL all-reduce on "
            f"NET/IB){serve}.")


def ray_argv(env: ClusterEnv, node: str, settings: DeploySettings) -> tuple[str, ...]:
    from strixwizard.deploy.stacks.ray.ray import start_argv

    return start_argv(env, node, settings)


def ray_steps(env: ClusterEnv, node: str, settings: DeploySettings) -> tuple[Step, ...]:
    from strixwizard.deploy.stacks.ray.ray import ray_steps as steps

    return steps(env, node, settings)


def vllm_script(env: ClusterEnv, argv: tuple[str, ...], settings: DeploySettings) -> str:
    return "\n".join([
        "#!/bin/sh",
        "# Written by `strixwizard deploy`. Start vLLM on the head once Ray runs on every node",
        comment(f"(`ray status` shows {len(env.nodes)} active nodes): "
                f"sh {shlex.quote(settings.path('vllm-serve.sh'))}"),
        "set -a",
        f". {shlex.quote(settings.env_file)}",
        "set +a",
        "exec " + shlex.join(argv),
        "",
    ])


def container_script(env: ClusterEnv, settings: DeploySettings) -> str:
    devices = ["/dev/kfd", "/dev/dri"] + (["/dev/infiniband"] if env.profile == "rdma" else [])
    # The env file is sourced (its values are quoted assignments) and each variable passed by
    # name: podman's --env-file would take the quotes of a quoted value literally.
    options = ["--network=host", "--ipc=host", *(f"--device={d}" for d in devices),
               "--ulimit=memlock=-1:-1", "--group-add=keep-groups",
               *(f"--env={name}" for name in env.variable_names)]
    lines = [
        "#!/bin/sh",
        "# Written by `strixwizard deploy`: a ROCm container that can use the iGPU (kfd, dri)"
        + (", the RDMA NIC (/dev/infiniband)" if env.profile == "rdma" else ""),
        "# and pin unlimited memory for verbs. Usage: podman-run.sh IMAGE [COMMAND...]",
        "# toolbox/distrobox: pass the same options when creating the container. Named groups",
        "# (--group-add render) fail under rootless podman; keep-groups keeps the user's.",
        "set -a",
        f". {shlex.quote(settings.env_file)}",
        "set +a",
        "exec podman run --rm -it \\",
        *(f"  {shlex.quote(o)} \\" for o in options),
        '  "$@"',
        "",
    ]
    return "\n".join(lines)


def plan_ray(env: ClusterEnv, facts: dict[str, NodeFacts], settings: DeploySettings
             ) -> DeployPlan:
    """The RCCL · Ray · vLLM stack (see the module docstring)."""
    from strixwizard.deploy.stacks.ray.serve import (
        EAGER_SOURCE,
        ServeSettings,
        serve_steps,
        strix_nodes,
        vllm_argv,
    )

    group = group_of(env)
    serve = settings.own(ServeSettings) or ServeSettings()
    strix = strix_nodes(facts)
    eager = bool(strix) if serve.eager is None else serve.eager
    launch = vllm_argv(env, settings.model, serve.port, eager, serve.max_model_len)
    asked = settings.own(ServeSettings)
    if asked is not None and not settings.model:
        from strixwizard.deploy.env import DeployRefused

        raise DeployRefused("--serve starts `vllm serve MODEL` on the head: name the model with "
                            "--model NAME (a Hugging Face id or a path on the head)")
    plans: list[Plan] = []
    order = [env.head] + [n.node for n in env.nodes if n.node != env.head]
    deploy = RayPlan(env, settings, SitePlan(env.site), vllm_argv=launch)
    for node in order:
        plans.append(Plan("deploy.env", node, settings.env_file, (
            mkdir_step(settings.target_dir),
            file_step(settings.env_file, f"write the RCCL/Ray environment ({env.profile} profile)",
                      env.file_text(node)),), persistence="a file, kept until `deploy --rollback`",
            group=group))
        plans.append(Plan("deploy.container", node, settings.path("podman-run.sh"), (
            file_step(settings.path("podman-run.sh"), "write the container launcher (podman)",
                      container_script(env, settings), mode=0o755),),
            persistence="a file, kept until `deploy --rollback`", group=group))
        notes, _ready = rccl_notes(facts[node])
        plans.append(Plan("deploy.rccl", node, "RCCL", notes=(*notes, rccl_tests_note(
            facts[node].gpu.gfx_target or "gfx1151"))))
        deploy.ray_argv[node] = ray_argv(env, node, settings)
        plans.append(Plan("deploy.ray", node, "ray", ray_steps(env, node, settings),
                          persistence="runtime only: Ray is not started at boot; run "
                          "`strixwizard deploy --apply` again after a reboot", group=group))
    started = asked is not None
    head_notes = [f"vLLM launch line ({'started by --serve' if started else 'run'} on "
                  f"{env.head} when `ray status` shows {len(env.nodes)} nodes): "
                  f"{shlex.join(launch)}"]
    if eager and strix:
        head_notes.append(f"--enforce-eager: {', '.join(strix)} ha{'s' if len(strix) == 1 else 've'}"
                          f" the Strix Halo iGPU; {EAGER_SOURCE}")
    steps: tuple[Step, ...] = ()
    if settings.model:
        steps = (file_step(settings.path("vllm-serve.sh"), "write the vLLM launch script"
                           + ("" if started else " (not started)"),
                           vllm_script(env, launch, settings), mode=0o755),)
        if asked is not None:
            steps += serve_steps(env, settings, asked, launch)
    else:
        head_notes.append("pass --model NAME to write it to "
                          f"{settings.path('vllm-serve.sh')}")
    plans.append(Plan("deploy.vllm", env.head, settings.path("vllm-serve.sh"), steps,
                      notes=tuple(head_notes),
                      persistence="runtime only: vllm serve is not started at boot" if started
                      else "a file, kept until `deploy --rollback`", group=group))
    plans.sort(key=lambda p: order.index(p.node))
    deploy.site_plan.plans = plans
    deploy.notes = list(env.warnings)
    return deploy

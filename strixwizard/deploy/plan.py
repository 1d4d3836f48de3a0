"""The deploy plan: per node, fix-engine `Plan`s that the fix engine previews, applies,
journals and rolls back like any fix. Pure: no I/O.

`plan_deploy` dispatches to the settings' stack (`STACKS`: each stack declares its `Stack`,
`deploy/base.py`, which holds the types and step builders every stack shares). The RCCL ·
Ray · vLLM stack (`plan_ray`) plans, per node, in this order (the head first, so workers find it):
- `deploy.env`: FILE `DIR/rccl.env` (see `env.ClusterEnv.file_text`);
- `deploy.container`: FILE `DIR/podman-run.sh`, podman with the devices and limits RCCL needs;
- `deploy.rccl`: notes only: RCCL built for gfx1151 or not, how to build it and rccl-tests;
- `deploy.ray`: FILE `DIR/ray-start.sh`, then COMMAND `ray start` through it (head:
  `--head --port=6379`; workers: `--address=HEAD:6379`) with the env file exported,
  because Ray actors inherit the *daemon's* environment; undo stops exactly that Ray
  (see `deploy/ray.py`);
- head only, `deploy.vllm`: FILE `DIR/vllm-serve.sh` with the launch line for
  `--model` (written and shown, never started by the deploy).

Every plan shares one group: if any node fails, every node is rolled back, so
the cluster is never left half deployed.
"""

from __future__ import annotations

import shlex

from strixwizard.deploy.base import (
    DEFAULT_TARGET_DIR,
    RAY_PORT,
    WITH_ENV,
    DeployPlan,
    DeploySettings,
    Stack,
    file_step,
    group_of,
    mkdir_step,
    with_observed,
)
from strixwizard.deploy.env import ClusterEnv, comment
from strixwizard.deploy.llama import LLAMA
from strixwizard.deploy.rccl import rccl_notes, rccl_tests_note
from strixwizard.facts import NodeFacts
from strixwizard.fixing.model import Plan, SitePlan, Step


def ray_argv(env: ClusterEnv, node: str, settings: DeploySettings) -> tuple[str, ...]:
    from strixwizard.deploy.ray import start_argv

    return start_argv(env, node, settings)


def ray_steps(env: ClusterEnv, node: str, settings: DeploySettings) -> tuple[Step, ...]:
    from strixwizard.deploy.ray import ray_steps as steps

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


def plan_deploy(env: ClusterEnv, facts: dict[str, NodeFacts], settings: DeploySettings
                ) -> DeployPlan:
    """The plan of the settings' stack, from the stack's own declaration (`STACKS`)."""
    stack = STACKS.get(settings.stack)
    if stack is None:
        raise ValueError(f"deploy stack {settings.stack!r} (known: {', '.join(STACKS)})")
    return stack.plan(env, facts, settings)


def plan_ray(env: ClusterEnv, facts: dict[str, NodeFacts], settings: DeploySettings
             ) -> DeployPlan:
    """The RCCL · Ray · vLLM stack (see the module docstring)."""
    from strixwizard.deploy.serve import EAGER_SOURCE, ServeSettings, serve_steps, strix_nodes, vllm_argv

    group = group_of(env)
    serve = settings.serve or ServeSettings()
    strix = strix_nodes(facts)
    eager = bool(strix) if serve.eager is None else serve.eager
    launch = vllm_argv(env, settings.model, serve.port, eager, serve.max_model_len)
    if settings.serve is not None and not settings.model:
        from strixwizard.deploy.env import DeployRefused

        raise DeployRefused("--serve starts `vllm serve MODEL` on the head: name the model with "
                            "--model NAME (a Hugging Face id or a path on the head)")
    plans: list[Plan] = []
    order = [env.head] + [n.node for n in env.nodes if n.node != env.head]
    deploy = DeployPlan(env, settings, SitePlan(env.site), launch)
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
    started = settings.serve is not None
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
        if settings.serve is not None:
            steps += serve_steps(env, settings, settings.serve, launch)
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


RAY = Stack("ray", plan_ray)  # RCCL · Ray · vLLM
#: Every deploy stack by name: a new stack is its module, declaring its `Stack`, listed here.
STACKS: dict[str, Stack] = {stack.name: stack for stack in (RAY, LLAMA)}

__all__ = ["DEFAULT_TARGET_DIR", "RAY", "RAY_PORT", "STACKS", "WITH_ENV", "DeployPlan", "DeploySettings",
           "Stack", "container_script", "file_step", "group_of", "mkdir_step", "plan_deploy", "plan_ray",
           "ray_argv", "ray_steps", "vllm_script", "with_observed"]

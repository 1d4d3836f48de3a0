"""The RCCL · Ray · vLLM stack (`--stack ray`, the default): its plan, its smoke test and its
declaration. Planning is pure; the smoke test runs on the head through its runner.

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
from dataclasses import replace
from typing import Any

from strixwizard.deploy.base import (
    WITH_ENV,
    Choice,
    DeployPlan,
    DeploySettings,
    Progress,
    Stack,
    file_step,
    group_of,
    mkdir_step,
)
from strixwizard.deploy.env import ClusterEnv, comment
from strixwizard.deploy.remote import run
from strixwizard.deploy.smoke import (
    ERROR,
    SmokeCheck,
    SmokeReport,
    all_reduce_argv,
    judge_ray,
    judge_rccl,
    mpirun_refusal,
    ray_status_argv,
)
from strixwizard.deploy.stacks.ray.rccl import rccl_notes, rccl_tests_note
from strixwizard.deploy.stacks.ray.serve import ServeSettings, server_url
from strixwizard.facts import NodeFacts
from strixwizard.fixing.model import Plan, SitePlan, Step
from strixwizard.fixing.runner import Runner, Unreachable
from strixwizard.live.rccl_output import (
    CollectiveTable,
    RcclOutputError,
    json_files_written,
    parse_collective_json,
    supports_json_file,
)

__all__ = [
    "RAY",
    "WITH_ENV",
    "RayPlan",
    "container_script",
    "plan_ray",
    "ray_argv",
    "ray_steps",
    "smoke_ray",
    "smoke_test",
    "vllm_script",
]


class RayPlan(DeployPlan):
    """The ray stack's plan: the same fields, and `vllm serve` when --serve asked for it."""

    def serve_json(self) -> dict[str, Any] | None:
        serve = self.settings.own(ServeSettings)
        if serve is None:
            return None
        return {"url": server_url(self.env, serve), "pidfile": serve.pidfile, "log": serve.log,
                "health_timeout_s": serve.health_timeout_s}


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
    deploy = RayPlan(env, settings, SitePlan(env.site), launch)
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


def smoke_test(plan: DeployPlan, head_runner: Runner, say: Progress | None = None,
               rccl: bool = True) -> SmokeReport:
    """Ray's nodes and the environment a task sees on each, then a 2-rank all-reduce; all
    run on the head."""
    from strixwizard.deploy.stacks.ray.ray import driver_argv, judge_cluster

    env, settings = plan.env, plan.settings
    report = SmokeReport()
    tell = say or (lambda node, message: None)
    try:
        tell(env.head, "Ray: one task pinned to each node reports the environment it sees")
        rc, out, err = run(head_runner, driver_argv(env, settings))
        cluster = judge_cluster(env, rc, out, err)
        if cluster is None:  # the head's `ray` has no Python module to drive: its node count
            tell(env.head, "ray status")
            rc, out, err = run(head_runner, ray_status_argv(env, settings))
            cluster = [judge_ray(env, rc, out, err)]
        report.checks += cluster
        if rccl and (refusal := mpirun_refusal(env)):
            report.checks.append(SmokeCheck("rccl.transport", ERROR, "not run", "NET/IB", refusal))
        elif rccl:
            tell(env.head, "2-rank RCCL all-reduce (NCCL_DEBUG=INFO)")
            json_path = _json_report_path(head_runner)
            rc, out, err = run(head_runner, all_reduce_argv(env, settings, json_path))
            if rc == 127:
                report.checks.append(SmokeCheck(
                    "rccl.transport", ERROR, "mpirun not installed", "NET/IB",
                    "install OpenMPI and rccl-tests on every node (see the deploy.rccl notes)"))
            else:
                from_json = (_json_document(head_runner, json_path, out) if json_path
                             else None)
                report.checks += judge_rccl(env, rc, out + "\n" + err, from_json)
    except Unreachable as error:
        report.checks.append(SmokeCheck("smoke", ERROR, "head unreachable", "", str(error)))
    return report


def _json_report_path(head_runner: Runner) -> str | None:
    """A fresh path for all_reduce_perf's `-J` document when the head's binary offers it (its
    `--help` says so); None for older builds, read from the text table."""
    import secrets

    rc, out, err = run(head_runner, ("all_reduce_perf", "--help"))
    offered = rc != 127 and supports_json_file(out + "\n" + err)
    return f"/tmp/strixwizard-smoke-{secrets.token_hex(6)}.json" if offered else None


def _json_document(head_runner: Runner, path: str, output: str) -> CollectiveTable | None:
    """The `-J` document read back from the head, then every file the run wrote removed;
    None when it was not written or is not a finished document (the text table stands)."""
    written = json_files_written(output, path) or (path,)
    rc, body, _ = run(head_runner, ("cat", written[0]))
    run(head_runner, ("rm", "-f", "--", path, *written))
    try:
        return parse_collective_json(body) if rc == 0 else None
    except RcclOutputError:
        return None


def smoke_ray(plan: DeployPlan, runners: dict[str, Runner], say: Progress | None = None
              ) -> SmokeReport:
    """Ray's nodes, RCCL on NET/IB, and with --serve, vLLM's /health and one completion."""
    report = smoke_test(plan, runners[plan.env.head], say)
    serve, model = plan.settings.own(ServeSettings), plan.settings.model
    if serve is not None and model:
        from strixwizard.deploy.stacks.ray.serve_run import smoke_serve

        report.checks += smoke_serve(plan.env, model, serve, runners[plan.env.head], say)
    return report


def ray_settings_for(common: DeploySettings, choice: Choice) -> DeploySettings:
    """The ray stack's settings: the model, `vllm serve` when asked, Ray's temp dir if given."""
    from strixwizard.deploy.stacks.ray.ray import RaySettings
    from strixwizard.deploy.stacks.ray.serve import RUN_DIR

    options: list[object] = []
    if choice.serve:
        options.append(ServeSettings(run_dir=choice.run_dir or RUN_DIR))
    if choice.ray_temp_dir is not None:
        options.append(RaySettings(temp_dir=choice.ray_temp_dir))
    return replace(common, stack=RAY_NAME, model=choice.model, options=tuple(options))


def ray_question(plan: DeployPlan) -> str:
    serve = ("; vllm serve starts on the head and the smoke test also waits for its /health "
             "and times one completion" if plan.settings.own(ServeSettings) is not None else "")
    return ("Each node's state is read first (refused if Ray already runs with another "
            "environment), a journal is written before the first step, a failing node rolls every "
            "node back, then the smoke test runs (Ray's node count, a 2-rank RCCL all-reduce on "
            f"NET/IB){serve}.")


RAY_NAME = "ray"
RAY = Stack(RAY_NAME, "RCCL · Ray · vLLM", plan_ray, smoke_ray, ray_settings_for, ray_question,
            switches=frozenset({"serve"}), stops_last=frozenset({"ray (head)"}), order=0)

"""The deploy plan: per node, fix-engine `Plan`s that the fix engine previews, applies,
journals and rolls back like any fix. Pure: no I/O.

Per node, in this order (the head first, so workers find it):
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
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from strixwizard.deploy.env import ClusterEnv, comment
from strixwizard.deploy.rccl import rccl_notes, rccl_tests_note
from strixwizard.facts import NodeFacts
from strixwizard.fixing.model import Kind, Plan, Read, SitePlan, Step

if TYPE_CHECKING:
    from strixwizard.deploy.llama import LlamaSettings
    from strixwizard.deploy.ray import RaySettings
    from strixwizard.deploy.serve import ServeSettings

DEFAULT_TARGET_DIR = "/etc/strixwizard"
RAY_PORT = 6379
#: Exports every variable of the env file ($0), then runs the command ($@): one argv, no
#: interpolation of our values into shell text.
WITH_ENV = '. "$0" && exec "$@"'


@dataclass(frozen=True)
class DeploySettings:
    target_dir: str = DEFAULT_TARGET_DIR
    model: str | None = None
    ray_port: int = RAY_PORT
    ray: RaySettings | None = None  # how Ray starts (deploy/ray.py); None: its defaults
    stack: str = "ray"  # "ray" (RCCL env, Ray, the vLLM line) or "llama-rpc" (deploy/llama.py)
    llama: LlamaSettings | None = None
    nodes: tuple[str, ...] = ()  # deploy on these of the site's nodes only (default: all)
    serve: ServeSettings | None = None  # start `vllm serve` on the head (deploy/serve.py)

    def path(self, name: str) -> str:
        return f"{self.target_dir.rstrip('/')}/{name}"

    @property
    def env_file(self) -> str:
        return self.path("rccl.env")


@dataclass
class DeployPlan:
    env: ClusterEnv
    settings: DeploySettings
    site_plan: SitePlan
    vllm_argv: tuple[str, ...]
    ray_argv: dict[str, tuple[str, ...]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def group(self) -> str:
        return group_of(self.env)

    def to_json(self) -> dict[str, Any]:
        return {
            "env": self.env.to_json(),
            "target_dir": self.settings.target_dir,
            "model": self.settings.model,
            "vllm_argv": list(self.vllm_argv),
            "vllm_line": shlex.join(self.vllm_argv),
            "ray_argv": {k: list(v) for k, v in self.ray_argv.items()},
            "serve": None if self.settings.serve is None else {
                "url": f"http://{self.env.head_ip}:{self.settings.serve.port}",
                "pidfile": self.settings.serve.pidfile, "log": self.settings.serve.log,
                "health_timeout_s": self.settings.serve.health_timeout_s},
            "notes": list(self.notes),
            "summary": {"changes": self.site_plan.changes,
                        "nodes": len(self.env.nodes)},
            "plans": [p.to_json() for p in self.site_plan.plans],
        }


def group_of(env: ClusterEnv) -> str:
    return f"deploy {env.site}: " + ", ".join(n.node for n in env.nodes)


def file_step(path: str, summary: str, content: str, mode: int = 0o644) -> Step:
    """A file the deploy owns. `before` is read at apply time (the probe does not capture the
    target directory); rollback restores what was there, or removes the file."""
    return Step(kind=Kind.FILE, target=path, summary=summary,
                read=Read("file", path=path, parse="raw"), before=None, after=content,
                persistence="file", before_known=False, mode=mode)


def mkdir_step(path: str) -> Step:
    """The target directory, so a rollback removes it again when the deploy created it
    (dropped from the plan when it already exists: see `with_observed`)."""
    return Step(kind=Kind.MKDIR, target=path, summary=f"create {path}",
                read=Read("exists", path=path), before=None, after="present", before_known=False)


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
    if settings.stack == "llama-rpc":
        from strixwizard.deploy.llama import LlamaSettings, plan_llama

        return plan_llama(env, facts, settings, settings.llama or LlamaSettings())
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


def with_observed(plan: SitePlan, observed: dict[tuple[str, str], str | None]) -> SitePlan:
    """The plan with each step's `before` as read on its node (keyed by node and target),
    and steps already at their `after` value dropped: a converged node plans to nothing."""
    out = SitePlan(plan.site, unreachable=dict(plan.unreachable))
    for p in plan.plans:
        steps = []
        for step in p.steps:
            key = (p.node, step.target)
            if key not in observed:
                steps.append(step)
                continue
            now = observed[key]
            if now != step.after:
                steps.append(replace(step, before=now, before_known=True))
        out.plans.append(replace(p, steps=tuple(steps)))
    return out

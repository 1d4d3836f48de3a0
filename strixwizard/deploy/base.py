"""The deploy's base: the settings, the plan type and the step builders every stack uses,
and the `Stack` a stack declares itself with. Imports no stack, so every stack and the
dispatcher (`deploy/plan.py`) can import it. Pure: no I/O.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from strixwizard.deploy.env import ClusterEnv
from strixwizard.fixing.model import Kind, Read, SitePlan, Step

if TYPE_CHECKING:
    from strixwizard.deploy.llama import LlamaSettings
    from strixwizard.deploy.ray import RaySettings
    from strixwizard.deploy.serve import ServeSettings
    from strixwizard.facts import NodeFacts

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


@dataclass(frozen=True)
class Stack:
    """What a deploy stack declares of itself: its name (`DeploySettings.stack`, `--stack`) and
    its plan; `plan_deploy` dispatches to it. (Its smoke test and rollback order are still
    chosen in `deploy/engine.py`.)"""

    name: str
    plan: Callable[[ClusterEnv, dict[str, NodeFacts], DeploySettings], DeployPlan]

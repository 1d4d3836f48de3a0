"""The deploy's base: the settings, the plan type and the step builders every stack uses,
and the `Stack` a stack declares itself with. Imports no stack, so every stack and the
registry (`deploy/plan.py`) can import it. Pure: no I/O.

A stack owns its settings: they travel in `DeploySettings.options` as the stack's own
dataclasses (`settings.own(LlamaSettings)`), so the common settings name no stack.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TypeVar

from strixwizard.deploy.env import ClusterEnv
from strixwizard.fixing.model import Kind, Read, SitePlan, Step

if TYPE_CHECKING:
    from strixwizard.deploy.smoke import SmokeReport
    from strixwizard.facts import NodeFacts
    from strixwizard.fixing.runner import Runner

T = TypeVar("T")
#: progress of a deploy: (node, what happens now)
Progress = Callable[[str, str], None]

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
    stack: str = "ray"  # a name in `deploy/plan.py` STACKS: "ray" (RCCL env, Ray, vLLM), "llama-rpc"
    nodes: tuple[str, ...] = ()  # deploy on these of the site's nodes only (default: all)
    #: the stack's own settings, one object per kind (e.g. `LlamaSettings`; `RaySettings` and
    #: `ServeSettings`); a kind left out means its defaults, or for `ServeSettings` "not asked"
    options: tuple[object, ...] = ()

    def own(self, kind: type[T]) -> T | None:
        """The stack's settings of this kind, or None when none was given."""
        return next((option for option in self.options if isinstance(option, kind)), None)

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

    def serve_json(self) -> dict[str, Any] | None:
        """What the plan serves over HTTP on the head (`RayPlan`: `vllm serve`); None: nothing."""
        return None

    def to_json(self) -> dict[str, Any]:
        return {
            "env": self.env.to_json(),
            "target_dir": self.settings.target_dir,
            "model": self.settings.model,
            "vllm_argv": list(self.vllm_argv),
            "vllm_line": shlex.join(self.vllm_argv),
            "ray_argv": {k: list(v) for k, v in self.ray_argv.items()},
            "serve": self.serve_json(),
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
class Choice:
    """What a user picks that a stack turns into its settings (the CLI's common flags, the
    wizard's Deploy step); a stack reads only the switches it names in `Stack.switches`."""

    model: str | None = None  # the stack's model: a vLLM model name, a GGUF path on the head
    run_dir: str | None = None  # where pid files and logs go on the nodes; None: the stack's own
    serve: bool = False  # start the model's server (the ray stack: `vllm serve`)
    persist: bool = False  # systemd units, started at every boot (the llama-rpc stack)
    ray_temp_dir: str | None = None  # Ray's --temp-dir (the ray stack); None: its default


@dataclass(frozen=True)
class Stack:
    """A deploy stack, as it declares itself in its own module; `deploy/plan.py` STACKS lists
    them, and the engine, the services, the CLI and the wizard ask this declaration instead of
    comparing stack names.

    - `plan`: pure, from the nodes' facts; `smoke`: after an apply, on the real nodes;
    - `settings`: its settings from the common ones and the user's `Choice`;
    - `question`: what applying it does, for the confirmation (CLI prompt, wizard modal);
    - `switches`: which of `Choice`'s switches it reads (the wizard shows only those);
    - `stops_first`/`stops_last`: step targets whose nodes a rollback undoes first (a server
      before its workers) or last (a head its workers still need).
    """

    name: str
    label: str
    plan: Callable[[ClusterEnv, dict[str, NodeFacts], DeploySettings], DeployPlan]
    smoke: Callable[[DeployPlan, dict[str, Runner], Progress | None], SmokeReport]
    settings: Callable[[DeploySettings, Choice], DeploySettings]
    question: Callable[[DeployPlan], str]
    switches: frozenset[str] = frozenset()
    stops_first: frozenset[str] = frozenset()
    stops_last: frozenset[str] = frozenset()
    order: int = 100  # where `STACKS` lists it (lowest first: the default stack)

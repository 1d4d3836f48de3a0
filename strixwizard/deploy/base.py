"""The deploy's base: the settings, the plan type and the step builders every stack uses,
and the `Stack` a stack declares itself with. Imports no stack, so every stack and the
registry (`deploy/plan.py`) can import it. Pure: no I/O.

A stack owns its settings: they travel in `DeploySettings.options` as the stack's own
dataclasses (`settings.own(LlamaSettings)`), so the common settings name no stack.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

from strixwizard.deploy.declare import Option, Panel
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
#: Exports every variable of the env file ($0), then runs the command ($@): one argv, no
#: interpolation of our values into shell text.
WITH_ENV = '. "$0" && exec "$@"'


@dataclass(frozen=True)
class DeploySettings:
    target_dir: str = DEFAULT_TARGET_DIR
    model: str | None = None
    stack: str = ""  # a name in `deploy/plan.py` STACKS; "": the default stack (the first there)
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
    """A stack's plan: the environment, the settings, the fix-engine plans per node, the
    warnings. A stack's own plan type adds its fields (`RayPlan`, `LlamaPlan`); `declared` is
    the stack that made it (set by `deploy/plan.py` `plan_deploy`)."""

    env: ClusterEnv
    settings: DeploySettings
    site_plan: SitePlan
    notes: list[str] = field(default_factory=list)
    declared: Stack | None = field(default=None, repr=False, compare=False)

    @property
    def group(self) -> str:
        return group_of(self.env)

    def to_json(self) -> dict[str, Any]:
        """The common fields with the stack's own (`Stack.json`) after `model`: a field the
        stack gives that is common too (`model`) stands in its place; `stack`, when the stack
        names itself, comes first."""
        own = dict(self.declared.json(self)) if self.declared and self.declared.json else {}
        lead = {"stack": own.pop("stack")} if "stack" in own else {}
        return {
            **lead,
            "env": self.env.to_json(),
            "target_dir": self.settings.target_dir,
            "model": self.settings.model,
            **own,
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


#: `Stack.observe`: refuses (`DeployRefused`) what the nodes' state forbids, from each step's
#: state as read on its node (keyed by node and step target), before converged steps are dropped
Observe = Callable[["DeployPlan", Mapping[tuple[str, str], "str | None"]], None]
#: `Stack.after_undo`: after a rollback undid a step on a node (through its runner), what the
#: node still runs that the rollback leaves alone (a note for that node), or None
AfterUndo = Callable[["Runner", Step], "str | None"]


@dataclass(frozen=True)
class Stack:
    """A deploy stack, as its package declares it (`deploy/stacks/NAME/__init__.py`: `STACK`);
    `deploy/plan.py` finds every one, and the engine, the services, the CLI and the wizard ask
    this declaration instead of comparing stack names (docs/extending/stack.md).

    - `plan`: pure, from the nodes' facts; `smoke`: after an apply, on the real nodes;
    - `settings`: its settings from the common ones and the option values by `dest` (every
      option of `options` filled, its default where not given; `model` too): the one builder
      the CLI and the wizard both call;
    - `question`: what applying it does, for the confirmation (CLI prompt, wizard modal);
    - `render`: its plan as text (`apply_command`: "" the default, None: being applied); None:
      the generic header and changes (`deploy/render.py` `render_deploy`);
    - `json`: its own fields of the plan's JSON (`DeployPlan.to_json`); None: none;
    - `panel`: its plan in the wizard, as data; None: each node's steps;
    - `options`: its command-line options, and which the wizard shows (`Option.wizard`);
    - `about`: what it does, a sentence for `deploy --help`; `model_hint`: what its model is
      (the `--model` help and the wizard's Model field);
    - `hints`: a clearer word when a flag of another stack is given with this one;
    - `observe`, `after_undo`: hooks on the nodes' state before an apply, and after a rollback
      undid a step;
    - `stops_first`/`stops_last`: step targets whose nodes a rollback undoes first (a server
      before its workers) or last (a head its workers still need);
    - `order`: where it is listed (lowest first: the default stack);
    - `commands`: an option (by `dest`) that, when given, runs a command of its own instead of
      the deploy, named as `module:function` of the command line (`(args, found, settings) ->
      exit status`): the deploy layer never imports a front end, and `cli/deploy.py` knows no
      stack's option (llama-rpc's `--build`).
    """

    name: str
    label: str
    plan: Callable[[ClusterEnv, dict[str, NodeFacts], DeploySettings], DeployPlan]
    smoke: Callable[[DeployPlan, dict[str, Runner], Progress | None], SmokeReport]
    settings: Callable[[DeploySettings, Mapping[str, Any]], DeploySettings]
    question: Callable[[DeployPlan], str]
    render: Callable[[DeployPlan, TextIO, str | None], None] | None = None
    json: Callable[[DeployPlan], dict[str, Any]] | None = None
    panel: Callable[[DeployPlan], Panel] | None = None
    options: tuple[Option, ...] = ()
    about: str = ""
    model_hint: str = ""
    hints: Mapping[str, str] = field(default_factory=dict)
    observe: Observe | None = None
    after_undo: AfterUndo | None = None
    stops_first: frozenset[str] = frozenset()
    stops_last: frozenset[str] = frozenset()
    order: int = 100
    commands: Mapping[str, str] = field(default_factory=dict)

    def option(self, dest: str) -> Option | None:
        return next((o for o in self.options if o.dest == dest), None)

"""Build llama.cpp on the nodes (`deploy --stack llama-rpc --build SOURCE`): read the nodes
(their machine, the build node's tools), plan, and with `apply` compile on one node, copy the
programs to the others of its machine and install them through the executor. The build stops
before any launch: `deploy --stack llama-rpc` starts what it installed.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from strixwizard.deploy.stacks.llama_rpc.build import BuildOutcome, BuildRefused
from strixwizard.deploy.stacks.llama_rpc.recipe import (
    PROGRAMS,
    BuildPlan,
    BuildSettings,
    default_backend,
    missing_error,
    parse_preflight,
    plan_build,
)
from strixwizard.discovery import Discovery
from strixwizard.errors import UsageError
from strixwizard.files import state_dir
from strixwizard.services.common import Confirm, Question, ask
from strixwizard.services.deploy import DeployOptions
from strixwizard.services.fix import holding

if TYPE_CHECKING:
    from strixwizard.fixing.engine import ApplyReport
    from strixwizard.fixing.runner import SessionRunner


@dataclass
class BuildResult:
    plan: BuildPlan
    outcome: BuildOutcome | None = None  # None: only planned
    version: str = ""  # `llama-server --version` of the build
    report: ApplyReport | None = None  # the install run
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        if self.outcome is None:
            return True
        return self.outcome.ok and self.report is not None and self.report.ok

    def to_json(self) -> dict[str, Any]:
        p = self.plan
        return {"build_on": p.build_on, "backend": p.backend, "arch": p.arch,
                "flags": list(p.flags), "copies": list(p.copies),
                "own_build": [{"node": n, "arch": a} for n, a in p.own_build],
                "bin_dir": p.settings.bin_dir, "build_dir": p.settings.build_dir,
                "timeout_s": p.settings.timeout_s, "plan": p.lines(),
                "state": self.outcome.state if self.outcome else "planned",
                "message": self.outcome.message if self.outcome else "",
                "log_on_head": self.outcome.log_on_head if self.outcome else None,
                "log_not_copied": self.outcome.log_not_copied if self.outcome else "",
                "sha256": self.outcome.sha256 if self.outcome else {},
                "version": self.version,
                "install": self.report.to_json() if self.report else None,
                "notes": self.notes}


def build_logs_dir(site: str) -> Path:
    """Where this machine keeps the build logs it copies from the build node."""
    return state_dir() / "llama-builds" / site


def _runners(found: Discovery, names: list[str], options: DeployOptions, stack: ExitStack
             ) -> tuple[dict[str, SessionRunner], dict[str, dict[str, Any]]]:
    from strixwizard.fixing.runner import SessionRunner
    from strixwizard.fixing.site_apply import runner_for

    specs = {spec.name: spec for spec in found.site.nodes}
    runners: dict[str, SessionRunner] = {}
    descriptors: dict[str, dict[str, Any]] = {}
    replayed = [name for name in names if specs[name].snapshot is not None]
    if replayed:
        raise UsageError(f"{', '.join(replayed)} replayed from snapshots: nothing to build on; the "
                         "build needs the real nodes")
    for name in names:
        runner, descriptors[name] = runner_for(
            found.site, specs[name], trust_new_hosts=options.trust_new_hosts,
            node_journal_dir=options.node_journal_dir, dry_run_root=Path("/nonexistent"))
        stack.callback(runner.close)
        if not isinstance(runner, SessionRunner):
            raise UsageError(f"{name} cannot run a build ({runner.where})")
        runners[name] = runner
    return runners, descriptors


def build(found: Discovery, settings: BuildSettings, nodes: tuple[str, ...], confirm: Confirm,
          options: DeployOptions, say: Callable[[str], None], apply: bool) -> BuildResult:
    """Plan the build from the nodes (read only); with `apply`, ask, build, copy, install.
    `BuildRefused`: nothing changed (a tool missing, not a llama.cpp source)."""
    from strixwizard.deploy.engine import selected
    from strixwizard.deploy.stacks.llama_rpc import build as on_nodes
    from strixwizard.fixing.runner import StepFailed

    chosen = selected(found.nodes, nodes)
    down = [f"{n.report.name}: {n.report.error or 'unreachable'}" for n in chosen if n.facts is None]
    if down:
        raise BuildRefused("cannot build with nodes missing: " + "; ".join(down))
    archive = on_nodes.source_archive(Path(settings.source))  # refused before any node is changed
    names = [n.report.name for n in chosen]
    build_on = settings.build_on or names[0]
    if build_on not in names:
        raise UsageError(f"--build-on {build_on}: not a node of this deploy (its nodes: "
                         f"{', '.join(names)})")
    facts = next(n.facts for n in chosen if n.report.name == build_on)
    assert facts is not None
    if settings.backend:
        backend, why = settings.backend, "--build-backend"
    else:
        backend, why = default_backend(facts.gpu.pci is not None)
        why += "; --build-backend vulkan|hip|cpu to choose"
    with ExitStack() as stack:
        runners, descriptors = _runners(found, names, options, stack)
        try:
            machines = {name: on_nodes.machine(runners[name]) for name in names}
            missing, _ = parse_preflight(on_nodes.preflight(runners[build_on], backend))
        except StepFailed as error:
            raise BuildRefused(f"the preflight could not run: {error}") from None
        if missing:
            raise BuildRefused(missing_error(build_on, backend, missing))
        plan = plan_build(settings, machines, backend, why,
                          on_nodes.source_version_flags(Path(settings.source)))
        result = BuildResult(plan)
        if not apply:
            return result
        return _apply(found, result, runners, descriptors, archive, confirm, options, say)


def _apply(found: Discovery, result: BuildResult, runners: dict[str, SessionRunner],
           descriptors: dict[str, dict[str, Any]], archive: bytes, confirm: Confirm,
           options: DeployOptions, say: Callable[[str], None]) -> BuildResult:
    from strixwizard.deploy.base import with_observed
    from strixwizard.deploy.stacks.llama_rpc import build as on_nodes
    from strixwizard.facts.llama_cpp import parse_version
    from strixwizard.fixing.engine import apply_plan, refuse_unfinished
    from strixwizard.fixing.journal import new_run_id
    from strixwizard.fixing.runner import StepFailed
    from strixwizard.node.errors import NodeError, OpRefused

    plan = result.plan
    site = found.site
    ask(confirm, Question(
        "Build llama.cpp", f"Build llama.cpp on {plan.build_on} and install it on "
        f"{', '.join(plan.installs)}?", "\n".join(plan.lines()), yes="Build (y)"))
    store = options.store()
    with holding(None, True, store, site.name, "deploy --build", options.break_lock) as holder:
        refuse_unfinished(store, list(runners), "deploy --build")
        try:
            outcome = on_nodes.compile_on(plan, runners[plan.build_on], archive,
                                          build_logs_dir(site.name), say)
        except (StepFailed, OpRefused, NodeError) as error:
            result.outcome = BuildOutcome("failed", f"could not run: {error}")
            return result
        result.outcome = outcome
        if not outcome.ok:
            return result
        try:
            server = plan.settings.staged("llama-server")
            said = on_nodes.run_text(runners[plan.build_on], (
                "sh", "-c", '"$1" --version 2>&1 | head -n 4', "sh", server))
            on_nodes.ship(plan, runners, outcome.sha256, say)
        except (StepFailed, OpRefused, NodeError) as error:
            outcome.state, outcome.message = "failed", f"built, but the copy failed: {error}"
            return result
        version, number, commit = parse_version(said)
        result.version = f"version {version} (build {number}, commit {commit})" if commit else ""
        site_plan = on_nodes.install_plan(plan, site.name, outcome.sha256,
                                          f"commit {commit}" if commit else "this build")
        # a node that holds these bytes already plans nothing
        site_plan = with_observed(site_plan, {
            (p.node, step.target): runners[p.node].read(step.read)
            for p in site_plan.plans for step in p.steps})
        result.report = apply_plan(site_plan, dict(runners), store, site,
                                   {n: descriptors[n] for n in plan.installs}, dry_run=False,
                                   holder=holder, run_id=new_run_id(),
                                   progress=lambda node, message: say(f"{node}: {message}"),
                                   break_lock=options.break_lock)
    for node, arch in plan.own_build:
        result.notes.append(f"{node} ({arch}) needs its own build of the same commit: "
                            f"{' '.join(plan.flags)}")
    if result.report.ok:
        result.notes.append(f"{' and '.join(PROGRAMS)} are in {plan.settings.bin_dir} on "
                            f"{', '.join(plan.installs)}")
    return result

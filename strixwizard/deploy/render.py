"""Text for people: the deploy plan with the provenance of every environment value."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from typing import TextIO

from strixwizard.deploy.base import DeployPlan
from strixwizard.deploy.smoke import SmokeReport
from strixwizard.fixing.model import Kind, Step
from strixwizard.present.fix_text import render_fix, step_lines

MARK = {"pass": "✓", "fail": "✗", "error": "?"}


def lines_of(step: Step) -> list[str]:
    """The fix engine's preview of a step, with commands quoted as a shell would need them."""
    lines = step_lines(step)
    if step.kind is Kind.COMMAND:
        lines = [line for line in lines if not line.startswith(("  run:", "  undo:"))]
        lines.append(f"  run:  {shlex.join(step.argv)}")
        if step.target == "vllm serve":  # deploy/stacks/ray/serve.py: the launcher's pid file
            lines.append("  undo: stop exactly the process it started (PID and start time)")
        elif step.undo_argv:
            lines.append(f"  undo: {shlex.join(step.undo_argv)}")
    return lines


def render_env(plan: DeployPlan, out: TextIO) -> None:
    env = plan.env
    shared = env.shared_names
    out.write("Environment (same on every node unless marked), and where each value comes from:\n")
    for var in env.nodes[0].variables:
        if var.name in shared:
            out.write(f"  {var.name}={var.value}\n")
        else:
            values = ", ".join(f"{n.node} {getattr(n.get(var.name), 'value', '-')}"
                               for n in env.nodes)
            out.write(f"  {var.name}  per node: {values}\n")
        sources = [n.get(var.name) for n in env.nodes]
        distinct = list(dict.fromkeys(v.source for v in sources if v is not None))
        out.writelines(f"      ← {source}\n" for source in distinct)


def render_deploy(plan: DeployPlan, out: TextIO, apply_command: str | None = "") -> None:
    """Any stack's plan: the environment with its provenance when the stack writes the env file,
    then the changes per node."""
    env = plan.env
    out.write(f"Deploy plan for site {env.site}: {env.profile} profile ({env.transport}), "
              f"head {env.head}, {len(env.nodes)} nodes\n")
    out.write(f"Fabric: {', '.join(env.links)}\n")
    out.write(f"Files go to {plan.settings.target_dir} (--target-dir)\n")
    if any(p.fix == "deploy.env" for p in plan.site_plan.plans):  # stacks with the RCCL/Ray env file
        out.write("\n")
        render_env(plan, out)
    render_changes(plan, out, lines_of,
                   "strixwizard deploy --apply" if apply_command == "" else apply_command)


def render_changes(plan: DeployPlan, out: TextIO, step_text: Callable[[Step], list[str]],
                   apply_command: str | None) -> None:
    """Either stack's warnings and changes per node, then how to apply and undo them."""
    if plan.notes:
        out.write("\nWarnings:\n")
        out.writelines(f"  ! {note}\n" for note in plan.notes)
    site = plan.site_plan
    for node in site.nodes:
        plans = site.for_node(node)
        out.write(f"\n{node}: {sum(len(p.steps) for p in plans)} change(s)\n")
        for p in plans:
            tag = "notes" if not p.steps else "reversible" if p.reversible else "NOT reversible"
            render_fix(p, tag, out, step_text)
    if site.changes and apply_command is None:  # it is being applied
        out.write(f"\n{site.changes} change(s) planned.\n")
    elif site.changes:
        out.write(f"\n{site.changes} change(s) planned. Apply with: {apply_command}; "
                  "undo with: strixwizard deploy --rollback\n")
    else:
        out.write("\nNothing to change: the cluster is deployed as planned.\n")


def render_smoke(report: SmokeReport, out: TextIO) -> None:
    out.write(f"\nSmoke test: {report.status}\n")
    for check in report.checks:
        out.write(f"  {MARK.get(check.status, ' ')} {check.id}: {check.observed} "
                  f"(expected {check.expected})\n")
        if check.detail:
            out.write(f"      {check.detail}\n")
        out.writelines(f"      | {line}\n" for line in check.evidence[:4])

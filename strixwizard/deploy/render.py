"""Text for people: what every stack's plan shows (its header, warnings and changes per node,
how to apply and undo them), the smoke verdict, and the wizard's default panel (each node's
steps). A stack renders its own plan with these pieces (`Stack.render`, `Stack.panel`)."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from typing import TextIO

from strixwizard.deploy.base import DeployPlan
from strixwizard.deploy.declare import NodeView, Panel
from strixwizard.deploy.process import is_process_stop
from strixwizard.deploy.smoke import SmokeReport
from strixwizard.fixing.model import Kind, Step
from strixwizard.model import link_text
from strixwizard.present.fix_text import render_fix, step_lines

MARK = {"pass": "✓", "fail": "✗", "error": "?"}


def lines_of(step: Step) -> list[str]:
    """The fix engine's preview of a step, with commands quoted as a shell would need them."""
    lines = step_lines(step)
    if step.kind is Kind.COMMAND:
        lines = [line for line in lines if not line.startswith(("  run:", "  undo:"))]
        lines.append(f"  run:  {shlex.join(step.argv)}")
        if is_process_stop(step.undo_argv):  # deploy/process.py: the launcher's pid file
            lines.append("  undo: stop exactly the process it started (PID and start time)")
        elif step.undo_argv:
            lines.append(f"  undo: {shlex.join(step.undo_argv)}")
    return lines


def render_header(plan: DeployPlan, out: TextIO) -> None:
    """The site, profile, head and nodes, the fabric and where files go."""
    env = plan.env
    out.write(f"Deploy plan for site {env.site}: {env.profile} profile ({env.transport}), "
              f"head {env.head}, {len(env.nodes)} nodes\n")
    out.write(f"Fabric: {', '.join(link_text(link) for link in env.links)}\n")
    out.write(f"Files go to {plan.settings.target_dir} (--target-dir)\n")


def render_deploy(plan: DeployPlan, out: TextIO, apply_command: str | None = "") -> None:
    """A plan of a stack that renders nothing of its own: the header, then the changes."""
    render_header(plan, out)
    render_changes(plan, out, lines_of,
                   "strixwizard deploy --apply" if apply_command == "" else apply_command)


def render_changes(plan: DeployPlan, out: TextIO, step_text: Callable[[Step], list[str]],
                   apply_command: str | None) -> None:
    """Any stack's warnings and changes per node, then how to apply and undo them."""
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


def steps_panel(plan: DeployPlan) -> Panel:
    """The wizard's panel of a stack that declares none: each node's steps, head or worker."""
    return Panel(tuple(NodeView(node, "head" if node == plan.env.head else "worker")
                       for node in plan.site_plan.nodes))

"""The ds4 plan for people: as text (the transport and why, what starts on which node, bound
to which address) and as the wizard's panel."""

from __future__ import annotations

from typing import TextIO

from strixwizard.deploy.base import DeployPlan
from strixwizard.deploy.declare import Box, Line, NodeView, Panel
from strixwizard.deploy.render import render_changes
from strixwizard.deploy.stacks.ds4.plan import COORDINATOR_TARGET, WORKER_TARGET, Ds4Plan, log_of
from strixwizard.fixing.model import Step
from strixwizard.present.fix_text import step_lines

HOW_LONG = "processes for this boot"


def render_ds4(plan: DeployPlan, out: TextIO, apply_command: str | None = "") -> None:
    """The pair and its transport, each rank's launch line and log, then the changes per node."""
    assert isinstance(plan, Ds4Plan)
    env, ds4, choice = plan.env, plan.ds4, plan.choice
    out.write(f"Deploy plan for site {env.site}: ds4 tensor parallelism (TP=2), {env.profile} "
              f"profile ({env.transport}), rank 0 on {env.head} (head), rank 1 on {plan.worker}\n")
    out.write(f"Fabric: {', '.join(env.links)}\n")
    out.write(f"Transport: --transport {choice.transport}: {choice.why}\n")
    out.write(f"The launcher goes to {plan.settings.target_dir} (--target-dir), pid files and logs "
              f"to {ds4.run_dir} (--ds4-run-dir; logs are kept after a rollback)\n\n")
    out.write(f"  {plan.worker}: {plan.line(1)}\n      log {log_of(ds4, WORKER_TARGET)}\n")
    out.write(f"  {env.head}: {plan.line(0)}\n      log {log_of(ds4, COORDINATOR_TARGET)}"
              + ("" if ds4.model else "  (not started: no --model)") + "\n")
    out.write(f"  HTTP: {plan.api_url} (ds4-server's OpenAI-compatible API)\n")
    render_changes(plan, out, _step_text, "strixwizard deploy --stack ds4 --apply"
                   if apply_command == "" else apply_command)


def _step_text(step: Step) -> list[str]:
    """A step as the fix engine previews it; a started program is undone by its PID only."""
    lines = [line for line in step_lines(step) if not line.startswith(("  run:", "  undo:"))]
    if step.argv:
        lines.append("undo: stop exactly the process it started (PID and start time)")
    return lines


def ds4_panel(plan: DeployPlan) -> Panel:
    """Each rank's launch line on its node; the transport and why after them."""
    assert isinstance(plan, Ds4Plan)
    missing = (() if plan.ds4.model else
               (Line("not started: give the GGUF path (the same on both nodes) as the model",
                     "muted", indent=True),))
    worker = NodeView(plan.worker, "rank 1, ds4", (
        Line("ds4 (worker: dials the head's fabric address)", "heading"),
        Line(plan.line(1), indent=True), *missing), HOW_LONG)
    head = NodeView(plan.env.head, "rank 0, ds4-server", (
        Line("ds4-server (coordinator: its worker's peer on the fabric address)", "heading"),
        Line(plan.line(0), indent=True), *missing), HOW_LONG)
    transport = Box("ds4-transport", f"Transport: --transport {plan.choice.transport}",
                    (Line(plan.choice.why, "bold" if plan.choice.fallback else ""),))
    return Panel((head, worker), after=(transport,))

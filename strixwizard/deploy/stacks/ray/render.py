"""The ray stack's plan for people: as text (the environment with the provenance of every value,
then the changes) and as the wizard's panel (Ray, the container and RCCL per node, then the
vLLM launch line)."""

from __future__ import annotations

import shlex
from typing import TextIO

from strixwizard.deploy.base import DeployPlan
from strixwizard.deploy.declare import Box, Line, NodeView, Panel
from strixwizard.deploy.render import lines_of, render_changes, render_header


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


def render_ray(plan: DeployPlan, out: TextIO, apply_command: str | None = "") -> None:
    """The header, the environment with its provenance, then the changes per node."""
    render_header(plan, out)
    out.write("\n")
    render_env(plan, out)
    render_changes(plan, out, lines_of,
                   "strixwizard deploy --apply" if apply_command == "" else apply_command)


def _node_lines(plan: DeployPlan, node: str) -> tuple[Line, ...]:
    from strixwizard.deploy.stacks.ray.ray import launch_argv

    plans = plan.site_plan.for_node(node)
    lines = [Line("Ray", "heading"),
             Line(shlex.join(launch_argv(plan.env, node, plan.settings)), indent=True)]
    for p in plans:
        if p.fix == "deploy.container":
            lines.append(Line("Container (podman-run.sh)", "heading"))
            for step in p.steps:
                options = [line.strip().rstrip("\\").strip()
                           for line in str(step.after or "").splitlines()
                           if line.strip().startswith("'--") or line.strip().startswith("--")]
                lines.append(Line(" ".join(o.strip("'") for o in options), indent=True))
    notes = [n for p in plans if p.fix == "deploy.rccl" for n in p.notes]
    if notes:
        lines.append(Line("RCCL", "heading"))
        lines += [Line(note, indent=True, cli_words=True) for note in notes]
    return tuple(lines)


def ray_panel(plan: DeployPlan) -> Panel:
    """Each node with its `ray start`, container options and RCCL notes; then the vLLM line."""
    from strixwizard.deploy.stacks.ray.plan import RayPlan

    assert isinstance(plan, RayPlan)
    env = plan.env
    nodes = tuple(NodeView(node, "Ray head" if node == env.head else "Ray worker",
                           _node_lines(plan, node)) for node in plan.site_plan.nodes)
    started = plan.serve_json() is not None
    title = ("vLLM launch line (started on the head by a, then /health and one completion)"
             if started else "vLLM launch line (written, never started)")
    notes = [n for p in plan.site_plan.for_node(env.head) if p.fix == "deploy.vllm"
             for n in p.notes]
    vllm = Box("vllm", title, (Line(shlex.join(plan.vllm_argv), "bold"),
                       *(Line(note, "muted", cli_words=True) for note in notes[1:])))
    return Panel(nodes, (vllm,), environment=True)

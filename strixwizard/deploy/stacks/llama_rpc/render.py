"""The llama.cpp RPC plan for people: as text (what starts where, bound to which address) and
as the wizard's panel."""

from __future__ import annotations

import shlex
from typing import TextIO

from strixwizard.deploy.base import DeployPlan
from strixwizard.deploy.declare import Line, NodeView, Panel
from strixwizard.deploy.render import render_changes
from strixwizard.deploy.stacks.llama_rpc.llama import (
    RPC_BINARIES,
    SERVER_BINARIES,
    LlamaPlan,
    LlamaSettings,
    rpc_log,
    server_log,
)
from strixwizard.fixing.model import Step
from strixwizard.present.fix_text import step_lines


def render_llama(plan: DeployPlan, out: TextIO, apply_command: str | None = "") -> None:
    """What starts where, bound to which address, then the changes per node."""
    assert isinstance(plan, LlamaPlan)
    env, llama = plan.env, plan.llama
    out.write(f"Deploy plan for site {env.site}: llama.cpp RPC, {env.profile} profile "
              f"({env.transport}), head {env.head}, {len(plan.workers)} RPC worker(s)\n")
    out.write(f"Fabric: {', '.join(env.links)}\n")
    if llama.persist:
        out.write(f"systemd units go to {llama.unit_dir} (--persist: started now and at every "
                  f"boot), logs to {llama.run_dir} (--llama-run-dir; kept after a rollback)\n\n")
    else:
        out.write(f"The launcher goes to {plan.settings.target_dir} (--target-dir), pid files and "
                  f"logs to {llama.run_dir} (--llama-run-dir; logs are kept after a rollback)\n\n")
    out.write(programs_line(llama) + "\n")
    for worker in plan.workers:
        line = shlex.join(["env", *plan.rpc_environment[worker], plan.rpc_program[worker],
                           *plan.rpc_argv[worker]])
        out.write(f"  {worker}: {line}\n      log {rpc_log(plan.llama)}\n")
    server = shlex.join(["env", *plan.server_environment, plan.server_program,
                         *plan.server_argv])
    out.write(f"  {env.head}: {server}\n      log {server_log(plan.llama)}"
              + ("" if llama.model else "  (not started: no --model)") + "\n")
    out.write("  RDMA: negotiated by llama.cpp itself at each connection; GGML_RDMA_DEV and "
              "GGML_RDMA_GID come from each node's RDMA port and GID table\n")
    render_changes(plan, out, _step_text, "strixwizard deploy --stack llama-rpc --apply"
                   if apply_command == "" else apply_command)


def programs_line(llama: LlamaSettings) -> str:
    """Which files the plan's program names stand for on the nodes (the launcher takes the first
    that exists; a unit names one path)."""
    rpc = " or ".join(RPC_BINARIES)
    if llama.persist:
        where = (f"the units run them from {llama.bin_dir} (--llama-bin-dir)" if llama.bin_dir
                 else "the units name them bare, for systemd's own search path (--llama-bin-dir "
                      "DIR names a folder)")
        return (f"Programs: {where}; each worker's RPC server under the name found on it "
                f"({RPC_BINARIES[0]}, or {RPC_BINARIES[1]} in older builds)")
    if llama.bin_dir:
        return (f"Programs: from {llama.bin_dir} first (--llama-bin-dir), else the node's PATH: "
                f"{rpc}, {SERVER_BINARIES[0]}")
    return (f"Programs: from each node's PATH: {rpc}, {SERVER_BINARIES[0]} (--llama-bin-dir DIR: "
            "that folder first)")


def _step_text(step: Step) -> list[str]:
    """A step as the fix engine previews it; a started program is undone by its PID only."""
    lines = [line for line in step_lines(step) if not line.startswith(("  run:", "  undo:"))]
    if step.argv and step.target.endswith(".service"):
        lines.append(f"undo: systemctl disable --now {step.target}, then the unit file is removed, "
                     "then systemctl daemon-reload")
    elif step.argv and step.target.endswith(".reload"):
        lines.append("undo: systemctl daemon-reload once the unit file is removed, then the stamp")
    elif step.argv:
        lines.append("undo: stop exactly the process it started (PID and start time)")
    return lines


def _node_lines(plan: LlamaPlan, node: str) -> tuple[Line, ...]:
    lines: list[Line] = []
    if node in plan.rpc_argv:
        lines.append(Line("ggml-rpc-server (fabric address only)", "heading"))
        lines.append(Line(shlex.join(["env", *plan.rpc_environment[node], plan.rpc_program[node],
                                      *plan.rpc_argv[node]]), indent=True))
    if node == plan.env.head:
        lines.append(Line("llama-server", "heading"))
        lines.append(Line(shlex.join(["env", *plan.server_environment, plan.server_program,
                                      *plan.server_argv]), indent=True))
        if not plan.llama.model:
            lines.append(Line("not started: give the GGUF path on the head as the model", "muted",
                              indent=True))
    return tuple(lines)


def llama_panel(plan: DeployPlan) -> Panel:
    """What the stack starts on each node, with the RDMA variables from its facts."""
    assert isinstance(plan, LlamaPlan)
    how = ("systemd units, started now and at boot" if plan.llama.persist
           else "processes for this boot")
    return Panel(tuple(NodeView(node, "head, llama-server" if node == plan.env.head
                                else "RPC worker", _node_lines(plan, node), how)
                       for node in plan.site_plan.nodes))

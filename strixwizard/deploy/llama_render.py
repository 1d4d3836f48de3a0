"""Text for people: the llama.cpp RPC plan (what starts where, bound to which address)."""

from __future__ import annotations

import shlex
from typing import TextIO

from strixwizard.deploy.llama import SERVER_TARGET, LlamaPlan, rpc_log, server_log
from strixwizard.deploy.plan import DeployPlan
from strixwizard.fixing.render import step_lines


def render_plan(plan: DeployPlan, out: TextIO) -> None:
    """Either stack's plan: the llama.cpp one here, the Ray one in deploy/render.py."""
    if isinstance(plan, LlamaPlan):
        render_llama(plan, out)
    else:
        from strixwizard.deploy.render import render_deploy

        render_deploy(plan, out)


def render_llama(plan: LlamaPlan, out: TextIO) -> None:
    env, llama = plan.env, plan.llama
    out.write(f"Deploy plan for site {env.site}: llama.cpp RPC, {env.profile} profile "
              f"({env.transport}), head {env.head}, {len(plan.workers)} RPC worker(s)\n")
    out.write(f"Fabric: {', '.join(env.links)}\n")
    out.write(f"The launcher goes to {plan.settings.target_dir} (--target-dir), pid files and "
              f"logs to {llama.run_dir} (--llama-run-dir; logs are kept after a rollback)\n\n")
    for worker in plan.workers:
        line = shlex.join(["env", *plan.rpc_environment[worker], "ggml-rpc-server",
                           *plan.rpc_argv[worker]])
        out.write(f"  {worker}: {line}\n      log {rpc_log(plan.llama)}\n")
    server = shlex.join(["env", *plan.server_environment, SERVER_TARGET, *plan.server_argv])
    out.write(f"  {env.head}: {server}\n      log {server_log(plan.llama)}"
              + ("" if llama.model else "  (not started: no --model)") + "\n")
    out.write("  RDMA: negotiated by llama.cpp itself at each connection; GGML_RDMA_DEV and "
              "GGML_RDMA_GID come from each node's RDMA port and GID table\n")
    if plan.notes:
        out.write("\nWarnings:\n")
        out.writelines(f"  ! {note}\n" for note in plan.notes)
    site = plan.site_plan
    for node in site.nodes:
        plans = site.for_node(node)
        out.write(f"\n{node}: {sum(len(p.steps) for p in plans)} change(s)\n")
        for p in plans:
            out.write(f"  {p.fix}  {p.entity}  [{'reversible' if p.reversible else 'NOT reversible'}]\n")
            for index, step in enumerate(p.steps, 1):
                lines = [line for line in step_lines(step) if not line.startswith(("  run:", "  undo:"))]
                out.write(f"    {index}. {lines[0]}\n")
                out.writelines(f"       {line}\n" for line in lines[1:])
                if step.argv:
                    out.write("       undo: stop exactly the PID it started (checked against "
                              "/proc/PID/exe)\n")
            if p.steps and p.persistence:
                out.write(f"    survives reboot: {p.persistence}\n")
            out.writelines(f"    note: {note}\n" for note in p.notes)
    if site.changes:
        out.write(f"\n{site.changes} change(s) planned. Apply with: strixwizard deploy --stack "
                  "llama-rpc --apply; undo with: strixwizard deploy --rollback\n")
    else:
        out.write("\nNothing to change: the cluster is deployed as planned.\n")

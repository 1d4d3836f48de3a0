"""`strixwizard deploy`: plan, apply, smoke-test or roll back the tensor-parallel stack.

`register` only builds the argparse parser (module imports: argparse and pathlib), so
the main parser can list `deploy` without loading the deploy engine; `cmd_deploy`
imports what it needs when it runs.

Exit status: 0 done (plan shown, applied and smoke test passed, rolled back), 1 a step
failed or the smoke test failed, 2 no verdict (refused, bad input, nothing reachable).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from strixwizard.cliopts import add_site_options


def register(commands: Any) -> argparse.ArgumentParser:
    deploy = commands.add_parser(
        "deploy",
        help="RCCL environment, Ray head/workers and the vLLM launch line; journalled, reversible",
        description="Generate the RCCL/NCCL and Ray environment from the nodes' facts (exact "
        "NCCL_IB_HCA, GID index from sysfs), write it to each node, start Ray with it (head "
        "first), write the vLLM launch line, then smoke-test: Ray's node count and a 2-rank "
        "RCCL all-reduce that must use NET/IB on the planned device. Without an RDMA link "
        "between every pair of nodes the RDMA profile is refused. --stack llama-rpc instead starts "
        "ggml-rpc-server on each worker's fabric address and llama-server --rpc on the head, then "
        "checks one completion and that RDMA was negotiated on both ends. Exit status: 0 done, "
        "1 a step or the smoke test failed, 2 no verdict (refused, bad input, unreachable).",
    )
    add_site_options(deploy, demo_help="the bundled demo site (snapshots: plan only)")
    action = deploy.add_mutually_exclusive_group()
    action.add_argument("--plan", action="store_true", help="show the plan (the default)")
    action.add_argument("--apply", action="store_true",
                        help="apply the plan (asks first), then run the smoke test")
    action.add_argument("--smoke", action="store_true",
                        help="only run the smoke test on the deployed cluster")
    action.add_argument("--rollback", nargs="?", const="latest", metavar="RUN",
                        help="undo a deploy run (default: the last one): files removed, `ray stop`")
    deploy.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    deploy.add_argument("--break-lock", action="store_true",
                        help="replace a stale lock (its run is gone) instead of refusing")
    deploy.add_argument("--model", metavar="NAME", help="the model for the vLLM launch line")
    deploy.add_argument("--transport", choices=("rdma", "tcp"), default="rdma",
                        help="rdma (default; refused without an RDMA link) or tcp (RCCL over "
                        "sockets, deployed knowingly)")
    deploy.add_argument("--head", metavar="NODE", help="the Ray head (default: the first node)")
    add_llama_options(deploy)
    deploy.add_argument("--target-dir", default="/etc/strixwizard", metavar="DIR",
                        help="where the env file and scripts go on each node")
    deploy.add_argument("--no-smoke", action="store_true", help="--apply without the smoke test")
    deploy.add_argument("--journal-dir", type=Path, metavar="DIR",
                        help="where this machine keeps deploy journals "
                        "(default ~/.local/state/strixwizard/deploy-journal)")
    deploy.add_argument("--node-journal-dir", default="/var/lib/strixwizard/journal", metavar="DIR",
                        help="where each node keeps its copy of the journal")
    return deploy  # type: ignore[no-any-return]


def add_llama_options(deploy: Any) -> None:
    """`--stack llama-rpc`: ggml-rpc-server on the workers, llama-server --rpc on the head."""
    llama = deploy.add_argument_group("llama.cpp RPC stack (--stack llama-rpc)")
    llama.add_argument("--stack", choices=("ray", "llama-rpc"), default="ray",
                       help="ray (default: RCCL env, Ray, the vLLM line) or llama-rpc")
    llama.add_argument("--gguf", metavar="PATH",
                       help="the GGUF model on the head (llama-rpc; without it llama-server is "
                       "only shown)")
    llama.add_argument("--split-mode", choices=("layer", "row", "tensor", "none"),
                       default="layer", help="llama-server -sm (default layer)")
    llama.add_argument("--gpu-layers", default="99", metavar="N", help="llama-server -ngl")
    llama.add_argument("--no-mmap", action="store_true",
                       help="large models: load instead of mapping (-lm none on newer builds)")
    llama.add_argument("--rpc-port", type=int, default=50052, metavar="PORT")
    llama.add_argument("--server-port", type=int, default=8080, metavar="PORT")
    llama.add_argument("--rpc-device", action="append", default=[], metavar="DEV",
                       help="ggml-rpc-server -d (repeat; default: every device)")
    llama.add_argument("--no-rpc-cache", action="store_true",
                       help="run ggml-rpc-server without its tensor cache (-c)")
    llama.add_argument("--rpc-on-head", action="store_true",
                       help="run an RPC server on the head too and list it in --rpc")
    llama.add_argument("--llama-bin-dir", metavar="DIR",
                       help="where the llama.cpp binaries are on the nodes (default: PATH)")
    llama.add_argument("--llama-run-dir", default="/var/lib/strixwizard/llama", metavar="DIR",
                       help="pid files and logs on each node (logs are kept after a rollback)")


def _settings(args: argparse.Namespace) -> Any:
    from strixwizard.deploy.plan import DeploySettings

    if args.stack != "llama-rpc":
        return DeploySettings(target_dir=args.target_dir, model=args.model)
    from strixwizard.deploy.llama import LlamaSettings

    llama = LlamaSettings(model=args.gguf or args.model, rpc_port=args.rpc_port,
                          server_port=args.server_port, split_mode=args.split_mode,
                          gpu_layers=args.gpu_layers, no_mmap=args.no_mmap,
                          cache=not args.no_rpc_cache, devices=tuple(args.rpc_device),
                          bin_dir=args.llama_bin_dir, rpc_on_head=args.rpc_on_head,
                          run_dir=args.llama_run_dir)
    return DeploySettings(target_dir=args.target_dir, stack="llama-rpc", llama=llama)


def _options(args: argparse.Namespace) -> Any:
    from strixwizard.services.deploy import DeployOptions

    return DeployOptions(journal_dir=args.journal_dir, node_journal_dir=args.node_journal_dir,
                         trust_new_hosts=args.trust_new_hosts, break_lock=args.break_lock)


def _refused(args: argparse.Namespace, site: str, mode: str, reason: str) -> int:
    import sys

    from strixwizard.services.output import EXIT_NO_VERDICT, emit, envelope

    if args.json:
        emit(envelope(site, mode=mode, status="refused", reason=reason))
    print(f"strixwizard: deploy refused: {reason}", file=sys.stderr)
    return EXIT_NO_VERDICT


def cmd_deploy(args: argparse.Namespace) -> int:
    import sys

    from strixwizard.cliopts import step_printer
    from strixwizard.services import deploy
    from strixwizard.services.discover import read_nodes
    from strixwizard.targets import RunRequest

    on_step = step_printer(not args.json and sys.stderr.isatty())
    if args.rollback:
        return _rollback(args, on_step)
    site, nodes = read_nodes(RunRequest(site_file=args.site, inventory=args.inventory,
                                        demo=args.demo, trust_new_hosts=args.trust_new_hosts))
    mode = "apply" if args.apply else "smoke" if args.smoke else "plan"
    settings = _settings(args)
    preview = deploy.plan(site, nodes, settings, args.transport, args.head)
    if preview.plan is None:
        return _refused(args, site.name, mode, str(preview.refused))
    if preview.replayed:
        if mode != "plan":
            deploy.refuse_replayed(preview)
        return _show(args, site.name, preview.plan, applicable=False)
    with deploy.opened(site, preview.plan, _options(args)) as cluster:
        if cluster.refused is not None:
            return _refused(args, site.name, mode, cluster.refused)
        if mode == "plan":
            return _show(args, site.name, cluster.plan)
        if mode == "smoke":
            return _smoke_only(args, site.name, cluster, on_step)
        return _apply(args, site, cluster, on_step)


def _show(args: argparse.Namespace, site: str, plan: Any, applicable: bool = True) -> int:
    """The plan; with the command that applies it, unless it cannot be applied (snapshots)."""
    import sys

    from strixwizard.services.output import EXIT_OK, emit, envelope

    if args.json:
        emit(envelope(site, mode="plan", status="planned", plan=plan.to_json()))
    else:
        from strixwizard.deploy.llama_render import render_plan
        from strixwizard.nextstep import same_command

        render_plan(plan, sys.stdout, same_command(args.argv, drop=("--plan",), add=("--apply",))
                    if applicable else None)
        if not applicable:
            print("The nodes are snapshots: this plan is shown, it cannot be applied.")
    return EXIT_OK


def _smoke_only(args: argparse.Namespace, site: str, cluster: Any, on_step: Any) -> int:
    import sys

    from strixwizard.deploy.render import render_smoke
    from strixwizard.services.deploy import smoke_on
    from strixwizard.services.output import emit, envelope

    report = smoke_on(cluster, on_step)
    if args.json:
        emit(envelope(site, mode="smoke", status=report.status, plan=cluster.plan.to_json(),
                      smoke=report.to_json()))
    else:
        render_smoke(report, sys.stdout)
    return report.exit_code


def _apply(args: argparse.Namespace, site: Any, cluster: Any, on_step: Any) -> int:
    import sys

    from strixwizard.cliopts import terminal_confirm
    from strixwizard.deploy.llama_render import render_plan as render_deploy
    from strixwizard.deploy.render import render_smoke
    from strixwizard.fixing.render import render_apply
    from strixwizard.services.deploy import apply_on
    from strixwizard.services.output import emit, envelope, exit_code

    plan = cluster.plan
    if plan.site_plan.changes and not args.yes and not sys.stdin.isatty():  # the refusal alone, first
        from strixwizard.errors import UsageError
        from strixwizard.nextstep import same_command

        raise UsageError("refusing to change nodes without confirmation: no terminal to ask on; pass "
                         f"--yes to apply from a script: {same_command(args.argv, add=('--yes',))}")
    if not args.json:
        render_deploy(plan, sys.stdout, None)
    deployed = apply_on(cluster, site, terminal_confirm(args.yes), _options(args), on_step,
                        smoke=not args.no_smoke)
    report, smoke = deployed.report, deployed.smoke
    assert report is not None  # the cluster was observed without a refusal
    if args.json:
        emit(envelope(site.name, mode="apply", status="deployed" if deployed.ok else "failed",
                      plan=plan.to_json(), apply=report.to_json(),
                      smoke=smoke.to_json() if smoke else None))
    else:
        render_apply(report, sys.stdout)
        if report.nodes and report.status not in ("aborted", "nothing-to-do"):
            import shlex

            from strixwizard.nextstep import journal_options

            print("Undo this deploy with: " + shlex.join(["strixwizard", "deploy", *journal_options(args),
                                                         "--rollback", report.run_id]))
        if smoke is not None:
            render_smoke(smoke, sys.stdout)
    return exit_code(deployed.ok)


def _rollback(args: argparse.Namespace, on_step: Any) -> int:
    import sys

    from strixwizard.cliopts import terminal_confirm
    from strixwizard.services import deploy
    from strixwizard.services.fix import load_run
    from strixwizard.services.output import emit, envelope, exit_code

    options = _options(args)
    journals = load_run(options.store(), None if args.rollback == "latest" else args.rollback)
    report = deploy.rollback(journals[0].run_id, terminal_confirm(args.yes), options, on_step)
    if args.json:
        emit(envelope(journals[0].site, mode="rollback",
                      status="rolled-back" if report.ok else "failed", rollback=report.to_json()))
    else:
        from strixwizard.fixing.render import render_rollback

        render_rollback(report, sys.stdout)
    return exit_code(report.ok)

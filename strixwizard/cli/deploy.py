"""`strixwizard deploy`: plan, apply, smoke-test or roll back the tensor-parallel stack.

`register` only builds the argparse parser (module imports: argparse), so
the main parser can list `deploy` without loading the deploy engine; `cmd_deploy`
imports what it needs when it runs.

Exit status: 0 done (plan shown, applied and smoke test passed, rolled back), 1 a step
failed or the smoke test failed, 2 no verdict (refused, bad input, nothing reachable).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from strixwizard.cli.options import add_change_options, add_site_options, add_soft_rdma_option


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
        "checks one completion and that RDMA was negotiated on both ends (--persist: as systemd "
        "units). --serve also starts `vllm serve --model` on the head (tensor parallel over the "
        "nodes, Ray backend, --enforce-eager on Strix Halo), waits for /health and times one "
        "completion. --nodes A,B deploys on some of the site's nodes; --transport tcp goes over "
        "the fabric's Ethernet, or over the management network when the fabric misses a pair. "
        "Exit status: 0 done, 1 a step or the smoke test failed, 2 no verdict (refused, bad "
        "input, unreachable).",
    )
    add_site_options(deploy, demo_help="the bundled demo site (snapshots: plan only)")
    add_soft_rdma_option(deploy, "deploy the RDMA profile over")
    action = deploy.add_mutually_exclusive_group()
    action.add_argument("--plan", action="store_true", help="show the plan (the default)")
    action.add_argument("--apply", action="store_true",
                        help="apply the plan (asks first), then run the smoke test")
    action.add_argument("--smoke", action="store_true",
                        help="only run the smoke test on the deployed cluster")
    action.add_argument("--rollback", nargs="?", const="latest", metavar="RUN",
                        help="undo a deploy run (default: the last one): files removed, the programs and "
                        "Ray processes it started stopped (never another Ray)")
    add_change_options(deploy, "deploy-journal")
    deploy.add_argument("--model", metavar="NAME", help="the model for the vLLM launch line")
    deploy.add_argument("--transport", choices=("rdma", "tcp"), default="rdma",
                        help="rdma (default; refused without an RDMA link) or tcp (RCCL over "
                        "sockets, deployed knowingly)")
    add_ray_options(deploy)
    deploy.add_argument("--head", metavar="NODE", help="the Ray head (default: the first node)")
    deploy.add_argument("--nodes", metavar="A,B", type=node_list, default=(),
                        help="deploy on these of the site's nodes only (default: all of them)")
    add_llama_options(deploy)
    add_serve_options(deploy)
    deploy.add_argument("--target-dir", default="/etc/strixwizard", metavar="DIR",
                        help="where the env file and scripts go on each node")
    deploy.add_argument("--no-smoke", action="store_true", help="--apply without the smoke test")
    return deploy  # type: ignore[no-any-return]


def node_list(text: str) -> tuple[str, ...]:
    """`--nodes a,b`: the names, in the order given, each once."""
    names = tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    if not names:
        raise argparse.ArgumentTypeError("name at least one node: --nodes A,B")
    return names


def add_serve_options(deploy: Any) -> None:
    """`--serve`: start `vllm serve --model` on the head, wait for /health, one completion."""
    serve = deploy.add_argument_group("vLLM (--serve, with the ray stack)")
    serve.add_argument("--serve", action="store_true",
                       help="start `vllm serve MODEL` on the head (tensor parallel over the "
                       "nodes, Ray backend), then wait for /health and time one completion")
    serve.add_argument("--vllm-port", type=int, default=8000, metavar="PORT")
    serve.add_argument("--max-model-len", type=int, metavar="N", help="vllm serve --max-model-len")
    serve.add_argument("--no-enforce-eager", action="store_true",
                       help="keep vLLM's graph capture on Strix Halo (default: --enforce-eager "
                       "there, graph capture on gfx1151 times out)")
    serve.add_argument("--serve-timeout", type=float, default=900.0, metavar="S",
                       help="how long the smoke test waits for /health (default 900 s)")
    serve.add_argument("--serve-run-dir", default="/var/lib/strixwizard/vllm", metavar="DIR",
                       help="vLLM's pid file and log on the head (the log is kept after a rollback)")
    serve.add_argument("--vllm-bin-dir", metavar="DIR",
                       help="where `vllm` is on the head (default: PATH)")


def add_llama_options(deploy: Any) -> None:
    """`--stack llama-rpc`: ggml-rpc-server on the workers, llama-server --rpc on the head."""
    llama = deploy.add_argument_group("llama.cpp RPC stack (--stack llama-rpc)")
    llama.add_argument("--stack", default="ray", metavar="NAME",
                       help="the deploy stack: ray (default: RCCL env, Ray, the vLLM line) or "
                       "llama-rpc; an unknown name is refused with the known ones")
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
    llama.add_argument("--persist", action="store_true",
                       help="a systemd unit per program (started now and at every boot) instead "
                       "of a process for this boot only; --rollback disables and removes them")
    llama.add_argument("--unit-dir", default="/etc/systemd/system", metavar="DIR",
                       help="where --persist writes the units")


#: llama-rpc options that become a line of a systemd unit or an argument on the nodes.
_NODE_VALUES = {"gguf": "--gguf", "model": "--model", "gpu_layers": "--gpu-layers",
                "llama_bin_dir": "--llama-bin-dir", "llama_run_dir": "--llama-run-dir",
                "unit_dir": "--unit-dir", "target_dir": "--target-dir"}


def _refuse_control_characters(args: argparse.Namespace) -> None:
    """A line break (or another control character) in a path would end the `ExecStart=` line
    of a unit systemd then refuses: refuse it here, before anything is planned."""
    from strixwizard.errors import UsageError
    from strixwizard.present.terminal import visible

    values = [(flag, getattr(args, name, None)) for name, flag in _NODE_VALUES.items()]
    values += [("--rpc-device", device) for device in getattr(args, "rpc_device", [])]
    for flag, value in values:
        if isinstance(value, (str, Path)) and visible(value) != str(value):
            raise UsageError(f"{flag} `{visible(value)}`: holds a line break or another control "
                             "character; give the path as it is on the nodes")


def _settings(args: argparse.Namespace) -> Any:
    """The deploy settings: the stack's own flags where it has some (`_STACK_FLAGS`), else the
    settings the stack builds from the common choice (--model)."""
    from strixwizard.deploy.env import DeployRefused
    from strixwizard.deploy.plan import Choice, DeploySettings, settings_for, stack_of
    from strixwizard.errors import UsageError

    try:
        stack = stack_of(args.stack)
    except DeployRefused as unknown:
        raise UsageError(f"--stack: {unknown}") from None
    for switch in ("serve", "persist"):
        if getattr(args, switch) and switch not in stack.switches:
            users = _stacks_reading(switch)
            raise UsageError(f"--{switch} is for --stack {' or '.join(users)}, not {args.stack}"
                             + _SWITCH_HINTS.get((switch, args.stack), ""))
    common = DeploySettings(target_dir=args.target_dir, nodes=args.nodes)
    own = _STACK_FLAGS.get(args.stack)
    if own is not None:
        return own(args, common)
    return settings_for(args.stack, Choice(model=args.model), common)


def _stacks_reading(switch: str) -> list[str]:
    from strixwizard.deploy.plan import STACKS

    return [name for name, stack in STACKS.items() if switch in stack.switches]


#: a clearer word where a switch is given to the wrong stack
_SWITCH_HINTS = {("persist", "ray"): " (the ray stack starts Ray for this boot only)",
                 ("serve", "llama-rpc"): "; with --stack llama-rpc, --gguf PATH starts llama-server"}


def _ray_settings(args: argparse.Namespace, common: Any) -> Any:
    """--model, --serve and its options, the --ray-* options."""
    from dataclasses import replace

    from strixwizard.deploy.stacks.ray.ray import RaySettings

    options: list[object] = [RaySettings(temp_dir=args.ray_temp_dir, num_cpus=args.ray_num_cpus,
                                         object_store_bytes=args.ray_object_store_bytes)]
    if args.serve:
        from strixwizard.deploy.stacks.ray.serve import ServeSettings

        options.append(ServeSettings(port=args.vllm_port, run_dir=args.serve_run_dir,
                                     health_timeout_s=args.serve_timeout,
                                     max_model_len=args.max_model_len,
                                     eager=False if args.no_enforce_eager else None,
                                     bin_dir=args.vllm_bin_dir))
    return replace(common, stack="ray", model=args.model, options=tuple(options))


def _llama_settings(args: argparse.Namespace, common: Any) -> Any:
    """--gguf and the llama.cpp RPC options."""
    from dataclasses import replace

    from strixwizard.deploy.stacks.llama_rpc.llama import LlamaSettings

    _refuse_control_characters(args)
    llama = LlamaSettings(model=args.gguf or args.model, rpc_port=args.rpc_port,
                          server_port=args.server_port, split_mode=args.split_mode,
                          gpu_layers=args.gpu_layers, no_mmap=args.no_mmap,
                          cache=not args.no_rpc_cache, devices=tuple(args.rpc_device),
                          bin_dir=args.llama_bin_dir, rpc_on_head=args.rpc_on_head,
                          run_dir=args.llama_run_dir, persist=args.persist,
                          unit_dir=args.unit_dir)
    return replace(common, stack="llama-rpc", options=(llama,))


#: Stacks with flags of their own (a front-door matter, so here); any other stack builds its
#: settings from the common choice.
_STACK_FLAGS = {"ray": _ray_settings, "llama-rpc": _llama_settings}


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


def add_ray_options(deploy: Any) -> None:
    """How `ray start` runs on the nodes (the default stack; deploy/stacks/ray/ray.py)."""
    ray = deploy.add_argument_group("Ray (--stack ray)")
    ray.add_argument("--ray-temp-dir", default="/var/lib/strixwizard/ray", metavar="DIR",
                     help="Ray's --temp-dir on each node: its sessions and logs, apart from any "
                     "other Ray's (kept after a rollback)")
    ray.add_argument("--ray-num-cpus", type=int, metavar="N",
                     help="ray start --num-cpus (default: Ray counts the node's CPUs)")
    ray.add_argument("--ray-object-store-bytes", type=int, metavar="BYTES",
                     help="ray start --object-store-memory (default: Ray's, 30%% of memory)")


def cmd_deploy(args: argparse.Namespace) -> int:
    import sys

    from strixwizard.cli.options import step_printer
    from strixwizard.services import deploy
    from strixwizard.services.discover import read_nodes
    from strixwizard.services.nodes import RunRequest

    on_step = step_printer(not args.json and sys.stderr.isatty())
    if args.rollback:
        return _rollback(args, on_step)
    site, nodes = read_nodes(RunRequest(site_file=args.site, inventory=args.inventory,
                                        demo=args.demo, trust_new_hosts=args.trust_new_hosts,
                                        allow_soft_rdma=args.allow_soft_rdma))
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
        from strixwizard.cli.nextstep import same_command
        from strixwizard.deploy.stacks.llama_rpc.render import render_plan

        render_plan(plan, sys.stdout, same_command(args.argv, drop=("--plan",), add=("--apply",))
                    if applicable else None)
        if any(note.startswith("doctor ") for note in plan.notes):
            print(fix_first(args))
        if not applicable:
            print("The nodes are snapshots: this plan is shown, it cannot be applied.")
    return EXIT_OK


def fix_first(args: argparse.Namespace) -> str:
    """The next step when doctor fails checks on the nodes a deploy is planned for."""
    import shlex

    from strixwizard.cli.nextstep import site_options

    words = shlex.join(site_options(args))
    return (f"Doctor fails checks on these nodes (Warnings above): cure what fix can first: "
            f"strixwizard fix {words}".rstrip() + f"; `strixwizard doctor {words}`".rstrip()
            + " explains each.")


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

    from strixwizard.cli.options import terminal_confirm
    from strixwizard.deploy.render import render_smoke
    from strixwizard.deploy.stacks.llama_rpc.render import render_plan as render_deploy
    from strixwizard.present.fix_text import render_apply
    from strixwizard.services.deploy import apply_on
    from strixwizard.services.output import emit, envelope, exit_code

    plan = cluster.plan
    if plan.site_plan.changes and not args.yes and not sys.stdin.isatty():  # the refusal alone, first
        from strixwizard.cli.nextstep import same_command
        from strixwizard.errors import UsageError

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
        import shlex

        from strixwizard.cli.nextstep import journal_options

        render_apply(report, sys.stdout, shlex.join(["strixwizard", "deploy",
                                                     *journal_options(args), "--rollback"]),
                     "deploy")
        if smoke is not None:
            render_smoke(smoke, sys.stdout)
    return exit_code(deployed.ok)


def _rollback(args: argparse.Namespace, on_step: Any) -> int:
    import sys

    from strixwizard.cli.options import terminal_confirm
    from strixwizard.services import deploy
    from strixwizard.services.fix import load_run
    from strixwizard.services.output import emit, envelope, exit_code

    options = _options(args)
    run_id = None if args.rollback == "latest" else args.rollback
    journals = load_run(options.store(), run_id)
    report = deploy.rollback(run_id, terminal_confirm(args.yes), options, on_step)
    if args.json:
        emit(envelope(journals[0].site, mode="rollback",
                      status="rolled-back" if report.ok else "failed", rollback=report.to_json()))
    else:
        import shlex

        from strixwizard.cli.nextstep import journal_options
        from strixwizard.present.fix_text import render_rollback

        render_rollback(report, sys.stdout, shlex.join(["strixwizard", "deploy",
                                                        *journal_options(args), "--rollback"]))
    if report.signal is not None:
        return 128 + report.signal
    return exit_code(report.ok)

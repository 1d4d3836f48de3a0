"""`strixwizard deploy`: plan, apply, smoke-test or roll back a deploy stack.

`register` builds the argparse parser from the stacks' declarations (`deploy/plan.py`
STACKS: their options, labels and what they do); it is called only when the command line
names `deploy` or lists every command, so `doctor` loads none of the deploy engine.
`cmd_deploy` imports what it needs when it runs. No stack is named here.

Exit status: 0 done (plan shown, applied and smoke test passed, rolled back), 1 a step
failed or the smoke test failed, 2 no verdict (refused, bad input, nothing reachable).
"""

from __future__ import annotations

import argparse
from typing import Any

from strixwizard.cli.options import add_change_options, add_site_options, add_soft_rdma_option
from strixwizard.deploy.base import DEFAULT_TARGET_DIR


class StackHelp(argparse.Action):
    """`-h`: the common options, and the options of the stack named before it (`--stack NAME
    --help`); without one, each stack by name (its options are that command's). A stack's
    options stay in the parser either way: only their help is left out."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS,
                 default: Any = argparse.SUPPRESS, help: str | None = None) -> None:
        super().__init__(option_strings, dest, default=default, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        from strixwizard.deploy.plan import STACKS

        chosen = getattr(namespace, "stack", None)
        owners = {option.dest: name for name, stack in STACKS.items() for option in stack.options}
        for action in parser._actions:
            owner = owners.get(action.dest)
            if owner is not None and owner != chosen:
                action.help = argparse.SUPPRESS
        parser.print_help()
        parser.exit()


def register(commands: Any) -> argparse.ArgumentParser:
    """The `deploy` parser: the common options, then one group per stack, each stack's options
    as it declares them (`Stack.options`; a declared `group` gets its own section). `--help`
    shows one stack's options when `--stack NAME` comes first (`StackHelp`)."""
    from strixwizard.deploy.plan import STACKS, default_stack

    default = default_stack().name
    stacks = "; ".join(f"{name} ({'the default: ' if name == default else ''}{stack.about})"
                       for name, stack in STACKS.items())
    deploy = commands.add_parser(
        "deploy",
        help=f"deploy a stack ({', '.join(s.label for s in STACKS.values())}) from the nodes' "
        "facts; journalled, reversible",
        description="Plan, apply, smoke-test or roll back a deploy stack on the site's nodes, "
        f"each change journalled and reversible. --stack picks it: {stacks}. Without an RDMA "
        "link between every pair of nodes the RDMA profile is refused. --nodes A,B deploys on "
        "some of the site's nodes; --transport tcp goes over the fabric's Ethernet, or over the "
        "management network when the fabric misses a pair. Exit status: 0 done, 1 a step or the "
        "smoke test failed, 2 no verdict (refused, bad input, unreachable).",
        epilog="Each stack's own options: strixwizard deploy --stack NAME --help ("
        + ", ".join(f"{name}: {stack.label}" for name, stack in STACKS.items()) + ").",
        add_help=False,
    )
    deploy.add_argument("-h", "--help", action=StackHelp,
                        help="show this help (after --stack NAME: with that stack's options) and exit")
    add_site_options(deploy, demo_help="the bundled demo site (snapshots: plan only)")
    add_soft_rdma_option(deploy, "deploy the RDMA profile over")
    action = deploy.add_mutually_exclusive_group()
    action.add_argument("--plan", action="store_true", help="show the plan (the default)")
    action.add_argument("--apply", action="store_true",
                        help="apply the plan (asks first), then run the smoke test")
    action.add_argument("--smoke", action="store_true",
                        help="only run the smoke test on the deployed cluster")
    action.add_argument("--rollback", nargs="?", const="latest", metavar="RUN",
                        help="undo a deploy run (default: the last one): files removed, the "
                        "programs it started stopped (never another's)")
    add_change_options(deploy, "deploy-journal")
    deploy.add_argument("--stack", metavar="NAME",
                        help=f"the deploy stack: {', '.join(STACKS)} (default: the site file's "
                        f"`stack:`, else {default}); an unknown name is refused with the known "
                        "ones")
    deploy.add_argument("--model", metavar="NAME",
                        help="the model the stack loads: " + "; ".join(
                            f"{stack.model_hint} (--stack {name})"
                            for name, stack in STACKS.items() if stack.model_hint))
    deploy.add_argument("--transport", choices=("rdma", "tcp"), default="rdma",
                        help="rdma (default; refused without an RDMA link) or tcp (over "
                        "sockets, deployed knowingly)")
    deploy.add_argument("--head", metavar="NODE", help="the head node (default: the first node)")
    deploy.add_argument("--nodes", metavar="A,B", type=node_list, default=(),
                        help="deploy on these of the site's nodes only (default: all of them)")
    deploy.add_argument("--target-dir", default=DEFAULT_TARGET_DIR, metavar="DIR",
                        help="where the env file and scripts go on each node")
    deploy.add_argument("--no-smoke", action="store_true", help="--apply without the smoke test")
    for stack in STACKS.values():
        add_stack_options(deploy, stack)
    return deploy  # type: ignore[no-any-return]


def add_stack_options(deploy: argparse.ArgumentParser, stack: Any) -> None:
    """A stack's options in its own section of --help (or the section an option names)."""
    groups: dict[str, Any] = {}
    for option in stack.options:
        title = option.group or f"{stack.label} (--stack {stack.name})"
        if title not in groups:
            groups[title] = deploy.add_argument_group(title)
        settings: dict[str, Any] = {"dest": option.dest, "help": option.help or None}
        if option.action:
            settings["action"] = option.action
        if option.action != "store_true":
            settings.update({key: value for key, value in (
                ("type", option.type), ("default", option.default),
                ("choices", option.choices or None), ("metavar", option.metavar))
                if value is not None})
        groups[title].add_argument(option.flag, **settings)


def node_list(text: str) -> tuple[str, ...]:
    """`--nodes a,b`: the names, in the order given, each once."""
    names = tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    if not names:
        raise argparse.ArgumentTypeError("name at least one node: --nodes A,B")
    return names


def _site_stack(args: argparse.Namespace) -> str:
    """The stack the site file names (`stack:`), the deploy's when --stack is not given."""
    site = getattr(args, "site", None)
    if site is None or getattr(args, "demo", False):
        return ""
    from strixwizard.site import load_site

    return load_site(site, require_nodes=False).stack


def _settings(args: argparse.Namespace, site: Any = None) -> Any:
    """The deploy settings, from the chosen stack's own builder and every flag's value (a flag
    not given: the site file's value for it, if any); a flag that only other stacks read
    (`Option.refused_elsewhere`) is refused, naming them."""
    from strixwizard.deploy.env import DeployRefused
    from strixwizard.deploy.plan import DeploySettings, settings_from, stack_of
    from strixwizard.errors import UsageError

    try:
        stack = stack_of(args.stack or _site_stack(args))
    except DeployRefused as unknown:
        raise UsageError(f"--stack: {unknown}") from None
    _refuse_foreign_flags(args, stack)
    common = DeploySettings(target_dir=args.target_dir, nodes=args.nodes)
    return settings_from(stack.name, vars(args), common, site)


def _refuse_foreign_flags(args: argparse.Namespace, stack: Any) -> None:
    from strixwizard.deploy.plan import STACKS
    from strixwizard.errors import UsageError

    for other in STACKS.values():
        for option in other.options:
            if other is stack or stack.option(option.dest) is not None:
                continue
            if option.refused_elsewhere and option.given(getattr(args, option.dest, None)):
                users = [name for name, s in STACKS.items()
                         if (own := s.option(option.dest)) is not None and own.refused_elsewhere]
                raise UsageError(f"{option.flag} is for --stack {' or '.join(users)}, not "
                                 f"{stack.name}" + stack.hints.get(option.flag, ""))


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


def _own_command(args: argparse.Namespace) -> Any:
    """The function of the chosen stack's `commands` whose option was given, or None."""
    import importlib

    from strixwizard.deploy.plan import stack_of

    for dest, target in stack_of(args.stack or _site_stack(args)).commands.items():
        if getattr(args, dest, None):
            module, _, function = target.partition(":")
            return getattr(importlib.import_module(module), function)
    return None


def cmd_deploy(args: argparse.Namespace) -> int:
    import sys

    from strixwizard.cli.options import step_printer
    from strixwizard.services import deploy
    from strixwizard.services.discover import check, read_nodes
    from strixwizard.services.nodes import RunRequest

    on_step = step_printer(not args.json and sys.stderr.isatty())
    if args.rollback:
        return _rollback(args, on_step)
    found = read_nodes(RunRequest(site_file=args.site, inventory=args.inventory,
                                  demo=args.demo, trust_new_hosts=args.trust_new_hosts,
                                  allow_soft_rdma=args.allow_soft_rdma))
    site = found.site
    mode = "apply" if args.apply else "smoke" if args.smoke else "plan"
    settings = _settings(args, site)
    own = _own_command(args)
    if own is not None:  # an option that runs the stack's own command (llama-rpc's --build)
        return int(own(args, found, settings))
    preview = deploy.plan(found, check(found), settings, args.transport, args.head)
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
        import io

        from strixwizard.cli.nextstep import same_command, with_this_command
        from strixwizard.deploy.plan import render_plan

        apply = same_command(args.argv, drop=("--plan",), add=("--apply",))
        text = io.StringIO()
        render_plan(plan, text, apply if applicable else None)
        # the stacks' "run `strixwizard deploy --apply` again after a reboot": this command
        sys.stdout.write(with_this_command(text.getvalue(),
                                           r"strixwizard deploy (--stack [\w-]+ )?--apply", apply))
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
    from strixwizard.deploy.plan import render_plan
    from strixwizard.deploy.render import render_smoke
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
        render_plan(plan, sys.stdout, None)
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


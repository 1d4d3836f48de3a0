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

EXIT_OK, EXIT_FAIL, EXIT_NO_VERDICT = 0, 1, 2
SCHEMA_VERSION = 1


def register(commands: Any) -> argparse.ArgumentParser:
    deploy = commands.add_parser(
        "deploy",
        help="RCCL environment, Ray head/workers and the vLLM launch line; journalled, reversible",
        description="Generate the RCCL/NCCL and Ray environment from the nodes' facts (exact "
        "NCCL_IB_HCA, GID index from sysfs), write it to each node, start Ray with it (head "
        "first), write the vLLM launch line, then smoke-test: Ray's node count and a 2-rank "
        "RCCL all-reduce that must use NET/IB on the planned device. Without an RDMA link "
        "between every pair of nodes the RDMA profile is refused. Exit status: 0 done, "
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
    deploy.add_argument("--target-dir", default="/etc/strixwizard", metavar="DIR",
                        help="where the env file and scripts go on each node")
    deploy.add_argument("--no-smoke", action="store_true", help="--apply without the smoke test")
    deploy.add_argument("--journal-dir", type=Path, metavar="DIR",
                        help="where this machine keeps deploy journals "
                        "(default ~/.local/state/strixwizard/deploy-journal)")
    deploy.add_argument("--node-journal-dir", default="/var/lib/strixwizard/journal", metavar="DIR",
                        help="where each node keeps its copy of the journal")
    return deploy  # type: ignore[no-any-return]


def _document(site: str | None, mode: str, status: str, **fields: Any) -> dict[str, Any]:
    import datetime

    from strixwizard import __version__

    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "strixwizard", "version": __version__},
        "generated_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "site": site, "mode": mode, "status": status, **fields,
    }


def _emit(document: dict[str, Any]) -> None:
    import json
    import sys

    print(json.dumps(document, indent=2, ensure_ascii=False), file=sys.stdout)


def _confirm(question: str, yes: bool) -> None:
    import sys

    from strixwizard.errors import UsageError

    if yes:
        return
    if not sys.stdin.isatty():
        raise UsageError("refusing to change nodes without confirmation: no terminal to ask on; "
                         "pass --yes to apply from a script")
    if input(f"{question} [y/N] ").strip().lower() not in ("y", "yes"):
        raise UsageError("not confirmed: nothing was changed")


def cmd_deploy(args: argparse.Namespace) -> int:
    import sys

    from strixwizard.deploy.engine import deploy_store
    from strixwizard.deploy.env import DeployRefused

    store = deploy_store(args.journal_dir)
    say = _progress(not args.json and sys.stderr.isatty())
    if args.rollback:
        return _rollback(args, store, say)
    from strixwizard.deploy.engine import make_plan, observe
    from strixwizard.deploy.plan import DeploySettings
    from strixwizard.errors import UsageError
    from strixwizard.targets import RunRequest, resolve_run

    site, nodes = resolve_run(RunRequest(site_file=args.site, inventory=args.inventory,
                                         demo=args.demo, trust_new_hosts=args.trust_new_hosts))
    mode = "apply" if args.apply else "smoke" if args.smoke else "plan"
    settings = DeploySettings(target_dir=args.target_dir, model=args.model)
    try:
        plan = make_plan(site, nodes, settings, args.transport, args.head)
    except DeployRefused as refused:
        if args.json:
            _emit(_document(site.name, mode, "refused", reason=str(refused)))
        print(f"strixwizard: deploy refused: {refused}", file=sys.stderr)
        return EXIT_NO_VERDICT
    specs = {spec.name: spec for spec in site.nodes}
    replayed = [n.node for n in plan.env.nodes
                if specs.get(n.node) is None or specs[n.node].snapshot is not None]
    if replayed:
        if mode != "plan":
            raise UsageError(f"{', '.join(replayed)} replayed from snapshots: nothing to deploy "
                             "on or test; `strixwizard deploy --plan` shows the plan")
        return _show(args, site.name, plan)
    runners, descriptors = _runners(args, site, [n.node for n in plan.env.nodes])
    try:
        try:
            plan = observe(plan, runners)
        except DeployRefused as refused:
            if args.json:
                _emit(_document(site.name, mode, "refused", reason=str(refused)))
            print(f"strixwizard: deploy refused: {refused}", file=sys.stderr)
            return EXIT_NO_VERDICT
        if mode == "plan":
            return _show(args, site.name, plan)
        if mode == "smoke":
            return _smoke_only(args, site.name, plan, runners, say)
        return _apply(args, site, plan, runners, descriptors, store, say)
    finally:
        for runner in runners.values():
            runner.close()


def _show(args: argparse.Namespace, site: str, plan: Any) -> int:
    import sys

    if args.json:
        _emit(_document(site, "plan", "planned", plan=plan.to_json()))
    else:
        from strixwizard.deploy.render import render_deploy

        render_deploy(plan, sys.stdout)
    return EXIT_OK


def _runners(args: argparse.Namespace, site: Any, names: list[str]) -> tuple[dict[str, Any],
                                                                             dict[str, Any]]:
    from strixwizard.fixing.targets import runner_for

    specs = {spec.name: spec for spec in site.nodes}
    runners: dict[str, Any] = {}
    descriptors: dict[str, Any] = {}
    for name in names:
        runners[name], descriptors[name] = runner_for(
            site, specs[name], trust_new_hosts=args.trust_new_hosts,
            node_journal_dir=args.node_journal_dir, dry_run_root=Path("/nonexistent"))
    return runners, descriptors


def _smoke_only(args: argparse.Namespace, site: str, plan: Any, runners: dict[str, Any],
                say: Any) -> int:
    import sys

    from strixwizard.deploy.engine import smoke_test
    from strixwizard.deploy.render import render_smoke

    report = smoke_test(plan, runners[plan.env.head], say)
    if args.json:
        _emit(_document(site, "smoke", report.status, plan=plan.to_json(), smoke=report.to_json()))
    else:
        render_smoke(report, sys.stdout)
    return report.exit_code


def _apply(args: argparse.Namespace, site: Any, plan: Any, runners: dict[str, Any],
           descriptors: dict[str, Any], store: Any, say: Any) -> int:
    import sys

    from strixwizard.deploy.engine import apply_deploy
    from strixwizard.deploy.render import render_deploy, render_smoke
    from strixwizard.fixing.render import render_apply

    if not args.json:
        render_deploy(plan, sys.stdout)
    if plan.site_plan.changes:
        _confirm(f"Deploy {plan.site_plan.changes} change(s) on "
                 f"{', '.join(plan.site_plan.nodes)}?", args.yes)
    report, smoke = apply_deploy(plan, runners, store, site, descriptors, say,
                                 smoke=not args.no_smoke, break_lock=args.break_lock)
    ok = report.ok and (smoke is None or smoke.status == "pass")
    if args.json:
        _emit(_document(site.name, "apply", "deployed" if ok else "failed", plan=plan.to_json(),
                        apply=report.to_json(), smoke=smoke.to_json() if smoke else None))
    else:
        render_apply(report, sys.stdout)
        if report.nodes and report.status not in ("aborted", "nothing-to-do"):
            print(f"Undo this deploy with: strixwizard deploy --rollback {report.run_id}")
        if smoke is not None:
            render_smoke(smoke, sys.stdout)
    return EXIT_OK if ok else EXIT_FAIL


def _rollback(args: argparse.Namespace, store: Any, say: Any) -> int:
    import sys

    from strixwizard.deploy.engine import rollback_deploy
    from strixwizard.errors import UsageError

    try:
        journals = store.load_run(None if args.rollback == "latest" else args.rollback)
    except (FileNotFoundError, ValueError) as error:
        raise UsageError(str(error)) from None
    run_id = journals[0].run_id
    _confirm(f"Roll back deploy {run_id} on {', '.join(j.node for j in journals)}?", args.yes)
    report = rollback_deploy(journals, store, say, break_lock=args.break_lock)
    if args.json:
        _emit(_document(journals[0].site, "rollback", "rolled-back" if report.ok else "failed",
                        rollback=report.to_json()))
    else:
        from strixwizard.fixing.render import render_rollback

        render_rollback(report, sys.stdout)
    return EXIT_OK if report.ok else EXIT_FAIL


def _progress(enabled: bool) -> Any:
    import sys

    def say(node: str, message: str) -> None:
        if enabled:
            print(f"  … {node}: {message}", file=sys.stderr, flush=True)

    return say

"""`strixwizard fix`: show the plan, apply it, roll a run back, or export it to Ansible."""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from typing import Any

from strixwizard import __version__
from strixwizard.errors import UsageError
from strixwizard.fixing.journal import JournalStore, new_run_id
from strixwizard.fixing.model import SitePlan

EXIT_OK, EXIT_FAIL, EXIT_NO_VERDICT = 0, 1, 2
SCHEMA_VERSION = 1


def _document(site: str | None, mode: str, **fields: Any) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "strixwizard", "version": __version__},
        "generated_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "site": site,
        "mode": mode,
        **fields,
    }


def _plan_json(plan: SitePlan) -> dict[str, Any]:
    return {
        "summary": {"changes": plan.changes, "plans": sum(1 for p in plan.plans if p.steps),
                    "manual": sum(1 for p in plan.plans if not p.steps)},
        "unreachable": plan.unreachable,
        "plans": [p.to_json() for p in plan.plans],
    }


def _say(enabled: bool) -> Any:
    def say(node: str, message: str) -> None:
        if enabled:
            print(f"  … {node}: {message}", file=sys.stderr, flush=True)

    return say


def _confirm(question: str, yes: bool) -> None:
    if yes:
        return
    if not sys.stdin.isatty():
        raise UsageError("refusing to change nodes without confirmation: no terminal to ask on; "
                         "pass --yes to apply from a script")
    answer = input(f"{question} [y/N] ").strip().lower()
    if answer not in ("y", "yes"):
        raise UsageError("not confirmed: nothing was changed")


def _list() -> int:
    from strixwizard.fixing.planning import registered

    for fix in registered():
        kind = "automated" if fix.automated else "manual"
        pairs = (("reboot", fix.ref.reboot), ("reversible", fix.ref.reversible))
        flags = ", ".join(name for name, on in pairs if on)
        print(f"{fix.id:<22} {kind:<9} {flags:<18} {fix.ref.summary}")
    return EXIT_OK


def cmd_fix(args: argparse.Namespace) -> int:
    if args.list:
        return _list()
    store = JournalStore(args.journal_dir)
    progress = _say(not args.json and sys.stderr.isatty())
    if args.rollback:
        return _rollback(args, store, progress)
    from strixwizard.fixing.planning import plan_site
    from strixwizard.targets import RunRequest, resolve_run

    request = RunRequest(site_file=args.site, inventory=args.inventory, demo=args.demo,
                         trust_new_hosts=args.trust_new_hosts)
    site, nodes = resolve_run(request, None)
    if getattr(args, "allow_soft_rdma", False):
        from dataclasses import replace

        site = replace(site, allow_soft_rdma=True)
    facts = [n.facts for n in nodes if n.facts is not None]
    unreachable = {n.report.name: n.report.error or "unreachable" for n in nodes if n.facts is None}
    if not facts:
        raise UsageError("no node could be reached: nothing to plan ("
                         + "; ".join(f"{k}: {v}" for k, v in unreachable.items()) + ")")
    plan = plan_site(site, facts, args.only, persist=not args.runtime_only, unreachable=unreachable)
    specs = {spec.name: spec for spec in site.nodes}
    dry_run = all(specs.get(n.report.name) is not None and specs[n.report.name].snapshot is not None
                  for n in nodes if n.facts is not None)
    if args.emit:
        kind, directory = args.emit
        if kind != "ansible":
            raise UsageError(f"--emit knows `ansible` only, not {kind!r}")
        from pathlib import Path

        from strixwizard.fixing.ansible import emit

        inventory, playbook = emit(plan, site, Path(directory))
        if args.json:
            print(json.dumps(_document(site.name, "emit", inventory=str(inventory),
                                       playbook=str(playbook), **_plan_json(plan)), indent=2))
        else:
            print(f"wrote {inventory} and {playbook}: ansible-playbook -i {inventory} {playbook}")
        return EXIT_OK
    if not args.apply:
        if args.json:
            print(json.dumps(_document(site.name, "plan", dry_run=dry_run, **_plan_json(plan)),
                             indent=2))
        else:
            from strixwizard.fixing.render import render_plan

            render_plan(plan, sys.stdout, dry_run)
        return EXIT_OK
    return _apply(args, site, nodes, plan, store, dry_run, progress)


def _apply(args: argparse.Namespace, site: Any, nodes: list[Any], plan: SitePlan,
           store: JournalStore, dry_run: bool, progress: Any) -> int:
    from strixwizard.fixing.render import render_apply, render_plan
    from strixwizard.fixing.targets import apply_site

    if not args.json:
        render_plan(plan, sys.stdout, dry_run)
    targets = [n for n in plan.nodes if any(p.steps for p in plan.for_node(n))]
    if targets:
        where = "on copies of the snapshots (dry run)" if dry_run else "on " + ", ".join(targets)
        _confirm(f"Apply {plan.changes} change(s) {where}?", args.yes)
    run_id = new_run_id()
    dry_root = args.dry_run_dir or store.root.parent / "dry-runs"
    report = apply_site(site, nodes, plan, store, node_journal_dir=args.node_journal_dir,
                        dry_run_root=dry_root, run_id=run_id,
                        trust_new_hosts=args.trust_new_hosts, with_reboot=args.with_reboot_steps,
                        progress=progress)
    if args.json:
        print(json.dumps(_document(site.name, "apply", dry_run=report.dry_run, **_plan_json(plan),
                                   apply=report.to_json()), indent=2))
    else:
        render_apply(report, sys.stdout)
        if report.dry_run:
            print(f"The changed snapshot copies are in {dry_root / run_id}: "
                  f"strixwizard doctor --snapshot {dry_root / run_id}/NODE")
    return EXIT_OK if report.ok else EXIT_FAIL


def _rollback(args: argparse.Namespace, store: JournalStore, progress: Any) -> int:
    from strixwizard.fixing.engine import rollback_run
    from strixwizard.fixing.render import render_rollback
    from strixwizard.fixing.targets import runner_from_journal

    try:
        journals = store.load_run(None if args.rollback == "latest" else args.rollback)
    except (FileNotFoundError, ValueError) as error:
        raise UsageError(str(error)) from None
    run_id = journals[0].run_id
    nodes = ", ".join(j.node for j in journals)
    dry = all(j.dry_run for j in journals)
    _confirm(f"Roll back run {run_id} on {nodes}" + (" (dry-run copies)" if dry else "") + "?",
             args.yes)
    report = rollback_run(journals, runner_from_journal, store, progress)
    if args.json:
        print(json.dumps(_document(journals[0].site, "rollback", dry_run=dry,
                                   rollback=report.to_json()), indent=2))
    else:
        render_rollback(report, sys.stdout)
    return EXIT_OK if report.ok else EXIT_FAIL

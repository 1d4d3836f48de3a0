"""`strixwizard fix`: show the plan, apply it, roll a run back, or export it to Ansible.

Presents what `strixwizard.services.fix` returns; the service asks before changing
anything through the prompt (or `--yes`) given here.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import shlex
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from strixwizard.cli.nextstep import command, journal_options
from strixwizard.cli.options import step_printer, terminal_confirm
from strixwizard.errors import UsageError
from strixwizard.fixing.model import SitePlan
from strixwizard.node.signals import exit_status
from strixwizard.services import fix as fixing
from strixwizard.services.output import EXIT_OK, emit, envelope, exit_code


def _plan_json(plan: SitePlan, counted: fixing.Tally) -> dict[str, Any]:
    return {
        "summary": {"changes": plan.changes, "plans": sum(1 for p in plan.plans if p.steps),
                    "manual": sum(1 for p in plan.plans if not p.steps), **counted.to_json()},
        "unreachable": plan.unreachable,
        "plans": [p.to_json() for p in plan.plans],
    }


def _list() -> int:
    from fixes import FIXES

    for fix in FIXES:
        kind = "automated" if fix.automated else "manual"
        pairs = (("reboot", fix.ref.reboot), ("reversible", fix.ref.reversible))
        flags = ", ".join(name for name, on in pairs if on)
        print(f"{fix.id:<22} {kind:<9} {flags:<18} {fix.ref.summary}")
    return EXIT_OK


def _options(args: argparse.Namespace) -> fixing.FixOptions:
    return fixing.FixOptions(journal_dir=args.journal_dir, node_journal_dir=args.node_journal_dir,
                             dry_run_dir=getattr(args, "dry_run_dir", None),
                             trust_new_hosts=args.trust_new_hosts,
                             with_reboot=getattr(args, "with_reboot_steps", False),
                             break_lock=getattr(args, "break_lock", False))


def cmd_fix(args: argparse.Namespace) -> int:
    if args.list:
        return _list()
    on_step = step_printer(not args.json and sys.stderr.isatty())
    if args.rollback:
        return _rollback(args, on_step)
    from strixwizard.services.nodes import RunRequest

    request = RunRequest(site_file=args.site, inventory=args.inventory, demo=args.demo,
                         trust_new_hosts=args.trust_new_hosts)
    with _held_for_apply(args, request) as held:
        return _fix_site(args, request, on_step, held)


@contextmanager
def _held_for_apply(args: argparse.Namespace, request: Any) -> Iterator[Any]:
    """`fix --apply` on a site's real nodes takes the site's lock once, before the nodes are
    read, so a second run is refused at once, before it reads or asks anything; the service
    and the engine are handed it. A dry run (every node a snapshot) takes none; a run without
    a site file takes it in the service, before its question."""
    from strixwizard.discovery import replayed
    from strixwizard.services.nodes import resolve_site

    site = resolve_site(request) if args.apply and not args.emit else None
    real = site is not None and not replayed(site, [spec.name for spec in site.nodes])
    with fixing.holding(None, real, _options(args).store(), site.name if site else "",
                        "fix --apply", getattr(args, "break_lock", False)) as held:
        yield held


def _fix_site(args: argparse.Namespace, request: Any, on_step: Any, held: Any) -> int:
    from strixwizard.services.discover import check, read_nodes

    found = read_nodes(replace(request, allow_soft_rdma=getattr(args, "allow_soft_rdma", False)))
    site, nodes = found.site, found.nodes
    unreachable = found.unreachable
    if len(unreachable) == len(nodes):
        raise UsageError("no node could be reached: nothing to plan ("
                         + "; ".join(f"{k}: {v}" for k, v in unreachable.items()) + ")")
    planned = fixing.plan(found, args.only, persist=not args.runtime_only)
    report = check(found)
    counted = fixing.tally(report, planned)
    dry_run = found.dry_run
    if args.emit:
        return _emit(args, site, planned, counted)
    if not args.apply:
        if args.json:
            emit(envelope(site.name, mode="plan", dry_run=dry_run, **_plan_json(planned, counted)))
        else:
            from strixwizard.present.fix_text import render_plan

            render_plan(planned, sys.stdout, dry_run, _apply_command(args),
                        fixing.tally_line(counted, planned.changes))
        return EXIT_OK
    return _apply(args, found, report, planned, counted, on_step, held)


def _apply_command(args: argparse.Namespace) -> str:
    """The `fix --apply` that applies the plan just shown: same site, same selection."""
    extra = [word for fix_id in args.only for word in ("--only", fix_id)]
    flags = (("allow_soft_rdma", "--allow-soft-rdma"), ("runtime_only", "--runtime-only"),
             ("with_reboot_steps", "--with-reboot-steps"))
    extra += [flag for name, flag in flags if getattr(args, name, False)]
    return command(args, ["fix"], *extra, *journal_options(args), "--apply")


def _emit(args: argparse.Namespace, site: Any, planned: SitePlan, counted: fixing.Tally) -> int:
    kind, directory = args.emit
    if kind != "ansible":
        raise UsageError(f"--emit knows `ansible` only, not {kind!r}")
    from strixwizard.fixing.ansible import emit as emit_ansible

    inventory, playbook = emit_ansible(planned, site, Path(directory))
    if args.json:
        emit(envelope(site.name, mode="emit", inventory=str(inventory), playbook=str(playbook),
                      **_plan_json(planned, counted)))
    else:
        print(f"wrote {inventory} and {playbook}: ansible-playbook -i {inventory} {playbook}")
    return EXIT_OK


def _apply(args: argparse.Namespace, found: Any, doctor: Any, planned: SitePlan,
           counted: fixing.Tally, on_step: Any, held: Any) -> int:
    from strixwizard.present.fix_text import render_apply, render_plan

    site, dry_run = found.site, found.dry_run
    if fixing.changed_nodes(planned) and not args.yes and not sys.stdin.isatty():  # alone, first
        raise UsageError("refusing to change nodes without confirmation: no terminal to ask on; "
                         f"pass --yes to apply from a script: {_apply_command(args)} --yes")
    if not args.json:
        render_plan(planned, sys.stdout, dry_run, apply_command=None,
                    tally=fixing.tally_line(counted, planned.changes))
    applied = fixing.apply(found, doctor, planned, terminal_confirm(args.yes), _options(args),
                           on_step, held)
    report = applied.report
    text = io.StringIO()
    render_apply(report, text, shlex.join(["strixwizard", "fix", *journal_options(args),
                                           "--rollback"]))
    keep_output(_options(args).store(), report.run_id, text.getvalue(), report.status)
    if args.json:
        emit(envelope(site.name, mode="apply", dry_run=report.dry_run, **_plan_json(planned, counted),
                      apply=report.to_json()))
    else:
        sys.stdout.write(text.getvalue())
        if applied.copies_site is not None:
            print(f"The changed snapshot copies are in {applied.dry_run_copies}; doctor reads the "
                  f"site as the run left it with: "
                  f"{shlex.join(['strixwizard', 'doctor', '--site', str(applied.copies_site)])}")
        elif applied.dry_run_copies is not None:
            print(f"Nothing was changed, so no copy was kept ({applied.dry_run_copies}).")
    if report.signal is not None:
        return exit_status(report.signal)
    return exit_code(report.ok)


def keep_output(store: Any, run_id: str, text: str, status: str) -> None:
    """A run that did not end as planned (cancelled, stopped, interrupted) also leaves what it
    printed beside its journal (RUN/output.txt): after a SIGHUP nobody may be reading the
    terminal. Best effort: the head may be the thing that is full."""
    if status not in ("cancelled", "stopped", "interrupted"):
        return
    from strixwizard.fixing.journal import write_durably

    with contextlib.suppress(OSError, ValueError):
        path = store.path(run_id, "output")
        if path.parent.is_dir():
            write_durably(path.with_suffix(".txt"), text)


def _rollback(args: argparse.Namespace, on_step: Any) -> int:
    from strixwizard.present.fix_text import render_rollback

    run_id = None if args.rollback == "latest" else args.rollback
    journals = fixing.load_run(_options(args).store(), run_id)
    report = fixing.rollback(run_id, terminal_confirm(args.yes), _options(args), on_step)
    if args.json:
        emit(envelope(journals[0].site, mode="rollback", dry_run=all(j.dry_run for j in journals),
                      rollback=report.to_json()))
    else:
        render_rollback(report, sys.stdout, shlex.join(["strixwizard", "fix",
                                                        *journal_options(args), "--rollback"]))
    if report.signal is not None:
        return exit_status(report.signal)
    return exit_code(report.ok)

"""Text for people: the plan as a preview (before → after), apply and rollback results."""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import TextIO

from strixwizard.fixing.engine import ApplyReport, RollbackReport
from strixwizard.fixing.model import Kind, Plan, SitePlan, Step

MARK = {"applied": "✓", "rolled-back": "↺", "failed": "✗", "undo-failed": "!", "unknown": "?",
        "skipped": "-", "pending": "·"}

#: A verification verdict as words (the JSON keeps the status itself).
VERDICT_WORDS = {"cured": "✓ cured", "passing": "✓ passing", "not-cured": "✗ not cured",
                 "pending-reboot": "· after a reboot", "not-verified": "? not verified"}

#: A run's or node's status as words.
STATUS_WORDS = {"applied": "applied", "rolled-back": "rolled back", "failed": "failed",
                "aborted": "aborted", "nothing-to-do": "nothing to do", "unknown": "unknown",
                "partial": "partly applied", "undo-failed": "undo failed",
                "cancelled": "cancelled", "stopped": "stopped", "interrupted": "interrupted",
                "not-started": "not started"}


def words(status: str) -> str:
    return STATUS_WORDS.get(status, status.replace("-", " "))


def _value(value: str | None) -> str:
    return "(absent)" if value is None else repr(value) if value == "" else value


def file_diff(step: Step) -> list[str]:
    """A file step (a config file, a systemd unit) as a unified diff, one line each: the CLI's
    plan and the wizard's Fix step show files this one way."""
    return list(difflib.unified_diff((step.before or "").splitlines(), (step.after or "").splitlines(),
                                     "before" if step.before is not None else "(absent)",
                                     step.target, lineterm="", n=1))


def step_lines(step: Step) -> list[str]:
    flags = [] if step.reversible else ["NOT reversible"]
    if step.reboot:
        flags.append("needs a reboot")
    if step.persistence:
        flags.append(f"persistence: {step.persistence}")
    head = f"{step.summary}" + (f"  [{', '.join(flags)}]" if flags else "")
    lines = [head]
    if step.kind is Kind.FILE:
        lines += [f"  {line}" for line in file_diff(step)]
    else:
        before = _value(step.before) if step.before_known else "(read at apply time)"
        lines.append(f"  {step.target}: {before} → {_value(step.after)}")
    if step.argv:
        lines.append(f"  run:  {' '.join(step.argv)}")
        if step.undo_argv:
            lines.append(f"  undo: {' '.join(step.undo_argv)}")
    return lines


def render_fix(plan: Plan, tag: str, out: TextIO,
               lines_of: Callable[[Step], list[str]] = step_lines) -> None:
    """One fix of a plan: its header with `tag`, its numbered steps, persistence and notes.

    The fix plan and the deploy plan both list their fixes this way.
    """
    out.write(f"  {plan.fix}  {plan.entity}  [{tag}]\n")
    for index, step in enumerate(plan.steps, 1):
        lines = lines_of(step)
        out.write(f"    {index}. {lines[0]}\n")
        out.writelines(f"       {line}\n" for line in lines[1:])
    if plan.steps and plan.persistence:
        out.write(f"    survives reboot: {plan.persistence}\n")
    out.writelines(f"    note: {note}\n" for note in plan.notes)


def render_plan(plan: SitePlan, out: TextIO, dry_run: bool = False,
                apply_command: str | None = "strixwizard fix --apply", tally: str = "") -> None:
    """The plan per node; `apply_command` is the command that applies it (None: it is running);
    `tally` (doctor's problems against the plan) goes just before the last line."""
    title = f"Fix plan for site {plan.site}"
    out.write(title + (" (snapshots: applying is a dry run on copies)" if dry_run else "") + "\n")
    for node, why in plan.unreachable.items():
        out.write(f"\n{node}: not planned: {why}\n")
    for node in plan.nodes:
        plans = plan.for_node(node)
        changes = sum(len(p.steps) for p in plans)
        out.write(f"\n{node}: {changes} change(s)\n")
        for p in plans:
            tag = "manual" if not p.steps else (
                "reboot" if p.reboot else "reversible" if p.reversible else "NOT reversible")
            group = f", link {p.group}" if p.group else ""
            render_fix(p, f"{tag}{group}", out)
    if tally:
        out.write(f"\n{tally}\n")
    if plan.changes == 0:
        out.write("\nNothing to change: every selected fix is converged.\n")
    elif apply_command is None:
        out.write(f"\n{plan.changes} change(s) planned.\n")
    else:
        out.write(f"\n{plan.changes} change(s) planned. Apply with: {apply_command}\n")


def render_apply(report: ApplyReport, out: TextIO,
                 rollback_command: str = "strixwizard fix --rollback", what: str = "run") -> None:
    """The run's steps and verification; `rollback_command RUN` undoes it."""
    label = " (DRY RUN on snapshot copies: nothing on any machine changed)" if report.dry_run else ""
    out.write(f"\nRun {report.run_id}: {words(report.status)}{label}\n")
    if report.message:
        out.write(f"  {report.message}\n")
    for node in report.nodes:
        out.write(f"\n{node.node} ({node.where}): {node.state}\n")
        for record in node.steps:
            error = f" — {record.error}" if record.error else ""
            out.write(f"  {MARK.get(record.status, ' ')} {words(record.status):<11} "
                      f"{record.step.summary}{error}\n")
        if node.journal:
            out.write(f"  journal: {node.journal}" + (f" (on the node: {node.journal_on_node})"
                                                     if node.journal_on_node else "") + "\n")
    if report.verification:
        out.write("\nVerification (checks re-run on a fresh probe):\n")
        for verdict in report.verification:
            said = VERDICT_WORDS.get(verdict.status, words(verdict.status))
            out.write(f"  {said:<16} {verdict.fix} on {verdict.node}: {verdict.detail}\n")
    if report.journal_problems:
        out.write("\nThe head's journal could not be written (each node's own journal holds the "
                  "run; free space on the head before the rollback below):\n")
        out.writelines(f"  {problem}\n" for problem in report.journal_problems)
    if report.status in ("stopped", "cancelled", "interrupted") and report.nodes:
        out.write("\nState of each node:\n")
        out.writelines(f"  {node.node}: {words(node.status)}: {node.state}\n"
                       for node in report.nodes)
    if report.nodes and report.status not in ("aborted", "nothing-to-do"):
        out.write(f"\nUndo this {what} with: {rollback_command} {report.run_id}\n")


def render_rollback(report: RollbackReport, out: TextIO,
                    rollback_command: str = "strixwizard fix --rollback") -> None:
    out.write(f"Rollback of run {report.run_id}: {'done' if report.ok else 'INCOMPLETE'}\n")
    for run in report.also_finished:
        out.write(f"  (also finished the unfinished run {run})\n")
    for node in report.nodes:
        out.write(f"\n{node.node} ({node.where}): {node.state}\n")
        for record in reversed(node.steps):
            error = f" — {record.error}" if record.error else ""
            out.write(f"  {MARK.get(record.status, ' ')} {words(record.status):<11} "
                      f"{record.step.summary}{error}\n")
    if report.journal_problems:
        out.write("\nThe head's journal could not be written (the values above are restored "
                  "all the same):\n")
        out.writelines(f"  {problem}\n" for problem in report.journal_problems)
    if report.signal is not None:
        from strixwizard.node.signals import name

        how = "stopped at once" if report.interrupted else \
            "cancelled at a step boundary (every link begun has both ends restored)"
        out.write(f"\nRollback {how} by {name(report.signal)}.\n")
        out.writelines(f"  {node.node}: {words(node.status)}: {node.state}\n"
                       for node in report.nodes)
        out.write(f"Finish it with: {rollback_command} {report.run_id}\n")

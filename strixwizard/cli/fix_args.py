"""The `strixwizard fix` command line. argparse only: `strixwizard --help` builds this parser too."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from strixwizard.cli.options import add_change_options, add_site_options, add_soft_rdma_option


def add_fix_parser(commands: Any) -> argparse.ArgumentParser:
    fix = commands.add_parser(
        "fix",
        help="plan fixes for failing checks; --apply changes the nodes (journalled, reversible)",
        description="Show what would change on each node to cure the failing checks: per node, "
        "per step, before -> after, reversible or not, reboot or not, and how each change "
        "survives a reboot. --apply asks before changing anything (--yes for scripts), checks "
        "that nothing drifted since the plan, writes a journal on each node and on this "
        "machine, re-runs the checks afterwards, and rolls a node back when a step fails. "
        "Exit status: 0 done (or nothing to do), 1 a step failed or a fix did not cure, "
        "2 no verdict (bad input, refused, nothing reachable).",
    )
    add_site_options(fix, demo_help="the bundled demo site; --apply is a dry run on a copy of its "
                     "snapshots")
    fix.add_argument("--only", action="append", default=[], metavar="ID",
                     help="plan only this fix or area (repeatable; `strixwizard fix --list`)")
    fix.add_argument("--list", action="store_true", help="list the fixes and exit")
    add_soft_rdma_option(fix, "plan RDMA fixes for")
    action = fix.add_mutually_exclusive_group()
    action.add_argument("--apply", action="store_true", help="apply the plan (asks first)")
    action.add_argument("--rollback", nargs="?", const="latest", metavar="RUN",
                        help="restore every value a run changed, in reverse (default: the last run)")
    action.add_argument("--emit", "--export", nargs=2, metavar=("ansible", "DIR"), dest="emit",
                        help="write inventory.yml and playbook.yml that apply this plan with Ansible")
    add_change_options(fix, "journal")
    fix.add_argument("--runtime-only", action="store_true",
                     help="plan runtime changes only (lost at reboot): no unit or config files")
    fix.add_argument("--with-reboot-steps", action="store_true",
                     help="also apply kernel command-line steps (they take effect at your next reboot)")
    fix.add_argument("--dry-run-dir", type=Path, metavar="DIR",
                     help="where --demo/snapshot dry runs copy the snapshots (default: under the "
                     "journal directory)")
    return fix  # type: ignore[no-any-return]

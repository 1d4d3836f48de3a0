"""What every site-facing command shares (doctor, fix, deploy, test): the site options, the
confirmation prompt before a change, and progress lines on stderr."""

from __future__ import annotations

import argparse
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from strixwizard.errors import UsageError
from strixwizard.files import STATE_DIR_SHOWN
from strixwizard.places import NODE_JOURNAL_DIR
from strixwizard.present.terminal import visible
from strixwizard.services.common import NodeEvent, Question, StepEvent


def add_site_options(parser: argparse.ArgumentParser, demo_help: str,
                     inventory: bool = True) -> None:
    """--json, --site FILE | --demo, --inventory FILE, --trust-new-hosts."""
    parser.add_argument("--json", action="store_true", help="one JSON document on stdout")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--site", type=Path, metavar="FILE", help="the site file (site.yaml)")
    source.add_argument("--demo", action="store_true", help=demo_help)
    if inventory:
        parser.add_argument("--inventory", type=Path, metavar="FILE",
                            help="an Ansible YAML inventory as the node list")
    parser.add_argument("--trust-new-hosts", action="store_true",
                        help="accept and remember SSH host keys not yet in known_hosts")


def add_change_options(parser: argparse.ArgumentParser, journal: str) -> None:
    """What every command that changes nodes takes (fix, deploy): --yes, --break-lock, and
    where the journals go; `journal` names this machine's folder for them."""
    parser.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    parser.add_argument("--break-lock", action="store_true",
                        help="replace a stale lock (its run is gone) instead of refusing")
    parser.add_argument("--journal-dir", type=Path, metavar="DIR",
                        help=f"where this machine keeps {journal.replace('-', ' ')}s (default "
                        f"{STATE_DIR_SHOWN}/{journal})")
    parser.add_argument("--node-journal-dir", default=NODE_JOURNAL_DIR, metavar="DIR",
                        help="where each node keeps its copy of the journal")


def add_soft_rdma_option(parser: argparse.ArgumentParser, what: str) -> None:
    """--allow-soft-rdma, as `allow_soft_rdma: true` in the site file; `what` the command does
    with rxe/siw then."""
    parser.add_argument("--allow-soft-rdma", action="store_true",
                        help=f"{what} rxe/siw too (software RDMA: tests the setup and the tool, "
                        "not production speed); as `allow_soft_rdma: true` in the site file")


def terminal_confirm(yes: bool) -> Callable[[Question], bool]:
    """The CLI's answer to a service's question: `--yes`, or a y/N prompt on a terminal.
    Without a terminal (and without --yes) nothing is changed."""

    def confirm(question: Question) -> bool:
        if yes:
            return True
        if not sys.stdin.isatty():
            raise UsageError("refusing to change nodes without confirmation: no terminal to ask on; "
                             "pass --yes to apply from a script")
        # input() writes its prompt to the terminal itself (readline), past sys.stdout's filter
        prompt = f"{visible(question.text, keep=chr(10))} [y/N] "
        return input(prompt).strip().lower() in ("y", "yes")

    return confirm


def step_printer(enabled: bool) -> Callable[[StepEvent], None]:
    """A fix or deploy run's progress on stderr ("  … node: message"), when enabled."""

    def show(event: StepEvent) -> None:
        if enabled:
            print(f"  … {visible(event.node)}: {visible(event.message)}", file=sys.stderr, flush=True)

    return show


def node_printer() -> Callable[[NodeEvent], None]:
    """Per-node collection progress on stderr, safe from worker threads."""
    lock = threading.Lock()
    marks = {"start": "…", "done": "✓", "failed": "✗"}

    def show(event: NodeEvent) -> None:
        with lock:
            print(f"  {marks.get(event.event, ' ')} {visible(event.node)}: {visible(event.text)}",
                  file=sys.stderr,
                  flush=True)

    return show

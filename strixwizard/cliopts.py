"""Command-line options every site-facing command shares (doctor, fix, deploy, test)."""

from __future__ import annotations

import argparse
from pathlib import Path


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

"""`strixwizard test KIND`: registration (cheap) and the handler. The kinds and their own
options come from `strixwizard.live.kinds`; each has its own help (`strixwizard test soak
--help`), and `strixwizard test KIND [options]` takes the options before the kind too.

`register()` only touches argparse and the kinds' declarations, so `strixwizard doctor` never
imports paramiko or pyverbs through it; `run()` imports what the measurement needs.
Exit status: 0 pass, 1 at least one fail, 2 no verdict.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from strixwizard.cli.options import add_site_options, add_soft_rdma_option
from strixwizard.live.kinds import MeasurementKind, options, registry

STATUS_WORDS = "Exit status: 0 pass, 1 a failure, 2 no verdict."


def kinds() -> tuple[str, ...]:
    """What `strixwizard test` measures, in the order its help lists them."""
    return tuple(registry())


def _shared_options(parser: argparse.ArgumentParser) -> None:
    """What every kind takes: the site, the pair, the history, the exports and how long."""
    add_site_options(parser, demo_help="TCP for real on loopback, RDMA replayed from recordings",
                     inventory=False)
    parser.add_argument("--pair", metavar="A,B", help="the two nodes to test (default: the first two)")
    parser.add_argument("--history", type=Path, metavar="FILE",
                        help="SQLite history file (default ~/.local/state/strixwizard/history.sqlite; "
                        "the demo's runs go to demo-history.sqlite beside it)")
    parser.add_argument("--no-history", action="store_true", help="neither read nor write the history")
    parser.add_argument("--prometheus", type=Path, metavar="FILE.prom",
                        help="also write the figures as a node_exporter textfile (replaced atomically)")
    from strixwizard.services.levels import MEASURE, MEASURE_LEVELS

    parser.add_argument("--level", choices=MEASURE_LEVELS, default="medium",
                        help="how long to measure, as DCGM's run levels: " + "; ".join(
                            f"{name}: {level.what}" for name, level in MEASURE.items())
                        + "; --seconds, --bytes and --no-references override it")
    parser.add_argument("--seconds", type=float, default=None,
                        help="time bound of each timed loop (default: the level's, 5 at medium)")
    parser.add_argument("--size", type=int, default=64,
                        help="message size in bytes, for every tool (default 64)")
    add_soft_rdma_option(parser, "test links over")


def _kind_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser],
                 kind: MeasurementKind) -> None:
    """`strixwizard test KIND`: its own options first and shown; the other kinds' options are
    taken as before (and refused where they say so) but not listed. Nothing here sets a
    default: an option given before the kind (`test --demo latency`) is kept."""
    parser = commands.add_parser(kind.name, help=kind.help,
                                 description=f"{kind.name}: {kind.help}. {STATUS_WORDS}")
    if kind.options:
        own = parser.add_argument_group(f"{kind.name} options")
        parser._action_groups.insert(1, parser._action_groups.pop())  # listed first
        for option in kind.options:
            option.add_to(own)
    _shared_options(parser)
    for option in options():
        if option not in kind.options:
            option.add_to(parser, shown=False)
    for action in parser._actions:
        if action.dest != "help":
            action.default = argparse.SUPPRESS


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Add the `test` subcommand to the main parser's subparsers."""
    declared = registry().values()
    test = commands.add_parser(
        "test",
        help="measure RDMA and TCP latency/bandwidth, RCCL, all-pairs matrix; exit 0/1/2",
        description="Live tests between the nodes of a site, judged against its thresholds. "
        + "; ".join(f"{kind.name}: {kind.help}" for kind in declared) + f". {STATUS_WORDS}",
        epilog="`strixwizard test KIND --help` lists the options of KIND.",
    )
    _shared_options(test)
    for option in options():  # given before the kind: kept, as the kind's parser takes them
        option.add_to(test, shown=False)
    each = test.add_subparsers(dest="kind", required=True, title="what to test")
    for kind in declared:
        _kind_parser(each, kind)
    return test


def with_level(args: argparse.Namespace) -> argparse.Namespace:
    """The level's bounds where no option gave one (an option always wins)."""
    from strixwizard.services.levels import MEASURE

    level = MEASURE[getattr(args, "level", "medium")]
    if getattr(args, "seconds", None) is None:
        args.seconds = level.seconds
    if getattr(args, "bytes", None) is None:
        args.bytes = level.soak_bytes
    if not level.references:
        args.no_references = True
    return args


def run(args: argparse.Namespace) -> int:
    from strixwizard.cli.live_run import run_command

    with_level(args)
    code: int = run_command(args)
    return code

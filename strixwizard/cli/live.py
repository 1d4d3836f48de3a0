"""`strixwizard test latency|bandwidth|rccl|matrix|decode`: registration (cheap) and the handler.

`register()` only touches argparse, so `strixwizard doctor` never imports
paramiko or pyverbs through it; `run()` imports what the test needs.
Exit status: 0 pass, 1 at least one fail, 2 no verdict.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from strixwizard.cli.options import add_site_options, add_soft_rdma_option

KINDS = ("latency", "bandwidth", "rccl", "matrix", "decode", "soak")


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Add the `test` subcommand to the main parser's subparsers."""
    test = commands.add_parser(
        "test",
        help="measure RDMA and TCP latency/bandwidth, RCCL, all-pairs matrix; exit 0/1/2",
        description="Live tests between the nodes of a site, judged against its thresholds. "
        "latency: TCP ping-pong (plus sockperf/qperf) and perftest ib_write_lat, compared like for "
        "like (one-way µs, same statistics); bandwidth: ib_write_bw against the link rate; rccl: "
        "all_reduce_perf with NCCL_DEBUG=INFO, failing a NET/Socket fallback; matrix: every pair, "
        "in rounds of disjoint pairs; decode: all-reduce at a model's decode message sizes over RCCL "
        "and TCP, and the decode tokens/s it predicts per TP size and transport; soak: a duplex "
        "transfer both ways at once, every block carrying its index and a BLAKE2 digest, failing "
        "on any corrupted, dropped or duplicated block (bounded by --bytes and --seconds). "
        "Exit status: 0 pass, 1 a failure, 2 no verdict.",
    )
    test.add_argument("kind", choices=KINDS, help="what to test")
    from strixwizard.cli.decode_options import add_decode_options  # argparse only

    add_decode_options(test)
    add_site_options(test, demo_help="TCP for real on loopback, RDMA replayed from recordings",
                     inventory=False)
    test.add_argument("--pair", metavar="A,B", help="the two nodes to test (default: the first two)")
    test.add_argument("--history", type=Path, metavar="FILE",
                      help="SQLite history file (default ~/.local/state/strixwizard/history.sqlite; "
                      "the demo's runs go to demo-history.sqlite beside it)")
    test.add_argument("--no-history", action="store_true", help="neither read nor write the history")
    test.add_argument("--prometheus", type=Path, metavar="FILE.prom",
                      help="also write the figures as a node_exporter textfile (replaced atomically)")
    from strixwizard.services.levels import MEASURE, MEASURE_LEVELS

    test.add_argument("--level", choices=MEASURE_LEVELS, default="medium",
                      help="how long to measure, as DCGM's run levels: " + "; ".join(
                          f"{name}: {level.what}" for name, level in MEASURE.items())
                      + "; --seconds, --bytes and --no-references override it")
    test.add_argument("--seconds", type=float, default=None,
                      help="time bound of each timed loop (default: the level's, 5 at medium)")
    test.add_argument("--bytes", type=int, default=None, metavar="N",
                      help="soak: bytes to send each way at most (default: the level's, 1 GiB at "
                      "medium; --seconds bounds it too)")
    test.add_argument("--all-pairs", action="store_true",
                      help="soak: every pair, in the matrix's rounds of disjoint pairs (disjoint pairs "
                      "at once; each round bounded by --seconds)")
    test.add_argument("--size", type=int, default=64,
                      help="message size in bytes, for every tool (default 64)")
    test.add_argument("--no-references", action="store_true", help="skip the sockperf/qperf references")
    test.add_argument("--launcher", default="mpirun", help="MPI launcher for rccl (default mpirun)")
    add_soft_rdma_option(test, "test links over")
    test.add_argument("--transport", choices=("all", "tcp"), default="all",
                      help="latency, matrix and decode: `tcp` measures the TCP baseline alone and judges it; "
                      "by default RDMA is measured too, and a run that could not measure it has no "
                      "verdict (exit 2)")
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

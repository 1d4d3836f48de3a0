"""`strixwizard test soak`: a duplex transfer both ways at once, every block carrying its index
and a BLAKE2 digest (strixwizard/live/soak.py); pairs in the matrix's rounds of disjoint pairs
with --all-pairs. In the wizard: the Test step's s, its dialog and its panel."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from strixwizard.live.kinds import (
    DemoJob,
    Job,
    MeasurementKind,
    Option,
    Pair,
    WizardPanel,
    every_pair,
    one_pair,
)
from strixwizard.live.results import Measurement

if TYPE_CHECKING:
    from strixwizard.live.settings import MeasurementSettings

BYTES = Option(("--bytes",), {"type": int, "default": None, "metavar": "N",
                              "help": "soak: bytes to send each way at most (default: the level's, 1 "
                              "GiB at medium; --seconds bounds it too)"})
ALL_PAIRS = Option(("--all-pairs",), {"action": "store_true",
                                      "help": "soak: every pair, in the matrix's rounds of disjoint "
                                      "pairs (disjoint pairs at once; each round bounded by --seconds)"},
                   elsewhere="{flag} applies to {kinds}; {kind} has its own pairs (matrix measures "
                   "every pair)")


def pairs(names: Sequence[str], pair: Pair | None, all_pairs: bool) -> tuple[list[str], list[Pair]]:
    if all_pairs:
        return every_pair(names, None)
    return one_pair(names, pair)


def configure(args: argparse.Namespace, settings: MeasurementSettings,
              progress: Callable[[Any], None] | None) -> None:
    from strixwizard.errors import UsageError

    size = getattr(args, "bytes", None)
    size = 1 << 30 if size is None else size
    if not 1 << 18 <= size <= 1 << 40:  # at least one soak block (256 KiB)
        raise UsageError("--bytes must be between 262144 and 1099511627776")
    from strixwizard.live.soak import MIN_SECONDS

    if args.seconds < MIN_SECONDS:
        raise UsageError(f"--seconds must be at least {MIN_SECONDS:g} for soak: the two node "
                         "programs start, connect and fill TCP's window before blocks flow, so a "
                         "shorter run checks next to nothing and proves nothing")
    if getattr(args, "all_pairs", False) and getattr(args, "pair", None):
        raise UsageError("--all-pairs and --pair exclude each other")
    settings.soak = replace(settings.soak, bytes=size, seconds=args.seconds, progress=progress)


def run(job: Job) -> Iterator[Measurement]:
    """Pairs in rounds of disjoint pairs, each round bounded by the soak's time."""
    from strixwizard.live.pairs import soak_pair
    from strixwizard.live.schedule import in_rounds

    for group in in_rounds(list(job.plans), job.nodes):
        yield from job.in_threads([lambda p=job.plans[pair]: soak_pair(job.hosts, p, job.settings)  # type: ignore[misc]
                                   for pair in group])


def demo(job: DemoJob) -> Iterator[Measurement]:
    """The demo nodes are snapshots, so the soak runs for real on this machine's loopback (like
    the demo's TCP baseline), labelled so."""
    from strixwizard.live.demo import LOOPBACK
    from strixwizard.live.soak import tcp_soak
    from strixwizard.node.connect import connect
    from strixwizard.node.target import LocalTarget

    host = job.cancel.scope(connect(LocalTarget("this machine")))
    path = f"{LOOPBACK} loopback on this machine (the demo nodes are snapshots; not a fabric link)"
    try:
        for pair in job.pairs:
            if job.cancel.cancelled:
                return
            yield tcp_soak(host, host, pair, LOOPBACK, path, job.settings.soak)
    finally:
        host.close()


KIND = MeasurementKind(
    name="soak", order=60, pairs=pairs, run=run, demo=demo, configure=configure,
    options=(BYTES, ALL_PAIRS),
    help="a duplex transfer both ways at once, every block carrying its index and a BLAKE2 "
    "digest, failing on any corrupted, dropped or duplicated block and on any direction not "
    "checked to its end (a receiver stopped on an error or a timeout, fewer bytes checked than "
    "sent) (bounded by --bytes and --seconds, at least 1 s)",
    panel=WizardPanel("strixwizard.tui.widgets.soak:SoakPanel", "Soak", key="s"))

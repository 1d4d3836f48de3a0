"""`strixwizard test decode`: the options, checked before anything runs, and the stream (from
`strixwizard.services.measure`, which the wizard uses too)."""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Sequence

from strixwizard.checking.engine import Node
from strixwizard.decode.bandwidth import mem_bandwidth
from strixwizard.decode.calibrate import CalibrationSettings
from strixwizard.decode.catalog import DEFAULT_MODEL, resolve
from strixwizard.decode.collectives import sweep
from strixwizard.decode.document import DecodeRun
from strixwizard.decode.measure import DecodeSettings
from strixwizard.errors import UsageError
from strixwizard.live.results import Measurement
from strixwizard.node.cancel import Cancel
from strixwizard.site import Site

MAX_BATCH = 1024
MAX_TP = 64
DEFAULT_TPS = (1, 2, 4)


def batches(max_batch: int) -> list[int]:
    """1, 2, 4 … up to `max_batch` (and `max_batch` itself)."""
    if not 1 <= max_batch <= MAX_BATCH:
        raise UsageError(f"--batch must be between 1 and {MAX_BATCH}")
    out, b = [], 1
    while b < max_batch:
        out.append(b)
        b *= 2
    return [*out, max_batch]


def tp_sizes(text: str | None) -> list[int]:
    if text is None:
        return list(DEFAULT_TPS)
    try:
        sizes = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError as error:
        raise UsageError(f"--tp wants TP sizes such as 1,2,4 (got {text!r})") from error
    if not sizes or not all(1 <= s <= MAX_TP for s in sizes):
        raise UsageError(f"--tp sizes must be between 1 and {MAX_TP} (got {text!r})")
    return sizes


def decode_run(args: argparse.Namespace) -> DecodeRun:
    """The model, sizes and bandwidth the options name (UsageError on bad input, exit 2)."""
    shape = resolve(args.model or DEFAULT_MODEL)
    bandwidth, source = mem_bandwidth(args.mem_bandwidth)
    run = DecodeRun(shape, batches(args.batch), tp_sizes(args.tp), bandwidth, source)
    if args.model is None:
        run.notes.append(f"no --model given: {DEFAULT_MODEL} from the catalog")
    if args.demo:
        run.notes.append("demo: RCCL over RDMA is a recording of real nodes; TCP is this machine's "
                         "loopback without RCCL (no wire, no RCCL overhead), so the two do not compare")
    return run


def calibration_settings(args: argparse.Namespace) -> CalibrationSettings | None:
    """--calibrate: the GGUF (read here for the shape) timed on the first node of the pair."""
    if not getattr(args, "calibrate", False):
        return None
    if args.model is None or not str(args.model).lower().endswith(".gguf"):
        raise UsageError("--calibrate times a GGUF file: give --model PATH.gguf (the same path on "
                         "the first node of the pair)")
    return CalibrationSettings(model=str(args.model), bin_dir=getattr(args, "llama_bin_dir", None))


def decode_settings(run: DecodeRun, args: argparse.Namespace) -> DecodeSettings:
    return DecodeSettings(sizes=tuple(sweep(run.messages)), primary=run.messages[0],
                          seconds_per_size=min(1.0, args.seconds), launcher=args.launcher,
                          calibration=calibration_settings(args))


def decode_stream(args: argparse.Namespace, run: DecodeRun, site: Site, pair: tuple[str, str],
                  cancel: Cancel, nodes: Sequence[Node] = ()) -> Iterator[Measurement]:
    from strixwizard.services.measure import decode_stream as service_stream

    return service_stream(site, nodes, pair, decode_settings(run, args), cancel, demo=args.demo,
                          trust_new_hosts=args.trust_new_hosts)

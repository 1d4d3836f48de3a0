"""`strixwizard test decode`: the all-reduce at a model's decode message sizes over RCCL and TCP,
and the decode tokens/s it predicts per TP size and transport (see `strixwizard.decode`). In the
wizard: the Test step's panel "what this fabric buys you"."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TextIO

from strixwizard.live.kinds import DemoJob, Finished, Job, MeasurementKind, Option, WizardPanel, one_pair
from strixwizard.live.kinds.shared import LAUNCHER, TRANSPORT
from strixwizard.live.results import Measurement

if TYPE_CHECKING:
    from strixwizard.decode.calibrate import CalibrationSettings
    from strixwizard.decode.document import DecodeRun
    from strixwizard.decode.measure import DecodeSettings
    from strixwizard.live.report import MeasurementReport
    from strixwizard.live.settings import MeasurementSettings

MAX_BATCH = 1024
MAX_TP = 64
DEFAULT_TPS = (1, 2, 4)

OPTIONS = (
    Option(("--model",), {"metavar": "config.json|file.gguf|NAME",
                          "help": "decode: the model (a Hugging Face config.json, a GGUF file, or a "
                          "name from the catalog: Llama-3.1-8B, Llama-3.1-70B, Qwen3-30B-A3B, "
                          "Qwen3-235B-A22B, gpt-oss-120b, GLM-4.5-Air; default Llama-3.1-70B)"}),
    Option(("--batch",), {"type": int, "default": 1, "metavar": "N",
                          "help": "decode: largest batch; sizes 1, 2, 4 ... N are timed (default 1)"}),
    Option(("--tp",), {"metavar": "SIZES",
                       "help": "decode: TP sizes to predict, e.g. 1,2,4 (default 1,2,4)"}),
    Option(("--calibrate",), {"action": "store_true",
                              "help": "decode: also time the model (a .gguf --model, at the same path "
                              "on the first node) with that node's llama-server, and advise from "
                              "that speed"}),
    Option(("--llama-bin-dir",), {"metavar": "DIR",
                                  "help": "decode --calibrate: where llama-server is on the node "
                                  "(default: the site file's `llama_bin_dir:`, else PATH)"}),
    Option(("--mem-bandwidth",), {"type": float, "metavar": "GBPS",
                                  "help": "decode: memory bandwidth per node in GB/s (default 212, "
                                  "measured on Strix Halo)"}),
)


def batches(max_batch: int) -> list[int]:
    """1, 2, 4 … up to `max_batch` (and `max_batch` itself)."""
    from strixwizard.errors import UsageError

    if not 1 <= max_batch <= MAX_BATCH:
        raise UsageError(f"--batch must be between 1 and {MAX_BATCH}")
    out, b = [], 1
    while b < max_batch:
        out.append(b)
        b *= 2
    return [*out, max_batch]


def tp_sizes(text: str | None) -> list[int]:
    from strixwizard.errors import UsageError

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
    from strixwizard.decode.bandwidth import mem_bandwidth
    from strixwizard.decode.catalog import DEFAULT_MODEL, resolve
    from strixwizard.decode.document import DecodeRun

    model = getattr(args, "model", None)
    shape = resolve(model or DEFAULT_MODEL)
    bandwidth, source = mem_bandwidth(getattr(args, "mem_bandwidth", None))
    run = DecodeRun(shape, batches(getattr(args, "batch", 1)), tp_sizes(getattr(args, "tp", None)),
                    bandwidth, source)
    if model is None:
        run.notes.append(f"no --model given: {DEFAULT_MODEL} from the catalog")
    if args.demo:
        run.notes.append("demo: RCCL over RDMA is a recording of two real nodes (E810 back to back); "
                         "TCP is RCCL over sockets estimated from the same recording's round trip")
    return run


def calibration_settings(args: argparse.Namespace) -> CalibrationSettings | None:
    """--calibrate: the GGUF (read here for the shape) timed on the first node of the pair."""
    from strixwizard.decode.calibrate import CalibrationSettings
    from strixwizard.errors import UsageError

    if not getattr(args, "calibrate", False):
        return None
    model = getattr(args, "model", None)
    if model is None or not str(model).lower().endswith(".gguf"):
        raise UsageError("--calibrate times a GGUF file: give --model PATH.gguf (the same path on "
                         "the first node of the pair)")
    return CalibrationSettings(model=str(model), bin_dir=getattr(args, "llama_bin_dir", None))


def configure(args: argparse.Namespace, settings: MeasurementSettings,
              progress: Callable[[Any], None] | None) -> None:
    from strixwizard.decode.collectives import sweep
    from strixwizard.decode.measure import DecodeSettings

    run = decode_run(args)
    settings.decode_run = run
    settings.decode = DecodeSettings(sizes=tuple(sweep(run.messages)), primary=run.messages[0],
                                     seconds_per_size=min(1.0, args.seconds),
                                     launcher=getattr(args, "launcher", "mpirun"),
                                     calibration=calibration_settings(args))


def _tcp_only(stream: Iterator[Measurement], settings: MeasurementSettings) -> Iterator[Measurement]:
    """`--transport tcp`: TCP alone, judged; no RDMA asked for."""
    return (m for m in stream if m.transport != "rdma") if settings.tcp_only else stream


def run(job: Job) -> Iterator[Measurement]:
    from strixwizard.decode.links import usb4_paths
    from strixwizard.decode.measure import decode_pair

    assert job.settings.decode is not None and job.found is not None
    plan = next(iter(job.plans.values()))
    decode = with_site_bin_dir(job.settings.decode, job.found.site.llama_bin_dir)
    yield from _tcp_only(decode_pair(job.hosts, plan, job.addresses, decode,
                                     usb4_paths(job.found, plan)), job.settings)


def with_site_bin_dir(decode: DecodeSettings, site_bin_dir: str | None) -> DecodeSettings:
    """--calibrate without --llama-bin-dir: llama-server in the site file's `llama_bin_dir:`."""
    from dataclasses import replace

    calibration = decode.calibration
    if calibration is None or calibration.bin_dir or not site_bin_dir:
        return decode
    return replace(decode, calibration=replace(calibration, bin_dir=site_bin_dir))


def demo(job: DemoJob) -> Iterator[Measurement]:
    from strixwizard.decode.measure import demo_decode

    assert job.settings.decode is not None
    yield from demo_decode(job.pairs[0], job.settings.decode)


def finish(report: MeasurementReport, done: Finished) -> None:
    if done.settings.decode_run is not None:
        report.decode = done.settings.decode_run.document(report.results, done.site_nodes)


def summary(report: MeasurementReport, out: TextIO) -> None:
    from strixwizard.decode.text import print_decode

    if report.decode is not None:
        print_decode(report.decode, out)


KIND = MeasurementKind(
    name="decode", order=50, pairs=one_pair, run=run, demo=demo, configure=configure, finish=finish,
    summary=summary, options=(*OPTIONS, TRANSPORT, LAUNCHER), counters=False, history=False,
    help="all-reduce at a model's decode message sizes over RCCL and TCP, and the decode "
    "tokens/s it predicts per TP size and transport",
    panel=WizardPanel("strixwizard.tui.widgets.decode:DecodePanel", "What this fabric buys you"))

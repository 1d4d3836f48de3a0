"""One `strixwizard test` command from arguments to output; the stream itself comes from
`strixwizard.services.measure` (the one the wizard's Test step uses too)."""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import sys
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from strixwizard.cli.nextstep import same_command
from strixwizard.errors import UsageError
from strixwizard.live.rccl import RcclSettings
from strixwizard.live.render import print_result, print_summary
from strixwizard.live.report import MeasurementReport, matrix_json
from strixwizard.live.results import Measurement
from strixwizard.live.runner import MatrixTiming, MeasurementSettings
from strixwizard.live.schedule import rounds
from strixwizard.live.soak import SoakProgress, SoakSettings
from strixwizard.live.tcp import TcpSettings
from strixwizard.node import signals
from strixwizard.services.measure import Cancel, choose, demo_stream, site_stream
from strixwizard.services.output import EXIT_NO_VERDICT
from strixwizard.site import Site

if TYPE_CHECKING:
    from strixwizard.decode.document import DecodeRun

MAX_SECONDS = 300.0


def _settings(args: argparse.Namespace, site: Site) -> MeasurementSettings:
    if not 0 < args.seconds <= MAX_SECONDS:
        raise UsageError(f"--seconds must be between 0 and {MAX_SECONDS:g}")
    if not 14 <= args.size <= 1 << 20:
        raise UsageError("--size must be between 14 and 1048576 bytes (sockperf needs 14)")
    if getattr(args, "prometheus", None) is not None:
        from strixwizard.cli.prometheus import check_textfile_path

        check_textfile_path(args.prometheus)
    from strixwizard.services.levels import MEASURE

    scale = MEASURE[getattr(args, "level", "medium")].samples
    tcp = TcpSettings(size=args.size, seconds=args.seconds, references=not args.no_references,
                      reference_seconds=min(args.seconds, 3.0),
                      round_trips=round(TcpSettings.round_trips * scale),
                      warmup=round(TcpSettings.warmup * min(scale, 1.0)))
    tcp_only = getattr(args, "transport", "all") == "tcp"
    if tcp_only and args.kind not in ("latency", "matrix", "decode"):
        raise UsageError(f"--transport tcp applies to latency, matrix and decode; {args.kind} "
                         "measures RDMA")
    settings = MeasurementSettings(thresholds=site.thresholds, tcp=tcp,
                                   rccl=RcclSettings(launcher=args.launcher), tcp_only=tcp_only)
    perftest = type(settings.perftest)
    settings.perftest = perftest(size=args.size, iterations=round(perftest.iterations * scale),
                                 bw_iterations=round(perftest.bw_iterations * scale))
    soak_bytes = getattr(args, "bytes", 1 << 30)
    if not 1 << 18 <= soak_bytes <= 1 << 40:  # at least one soak block (256 KiB)
        raise UsageError("--bytes must be between 262144 and 1099511627776")
    _all_pairs(args)
    progress = None if args.json else _soak_progress()
    settings.soak = SoakSettings(bytes=soak_bytes, seconds=args.seconds, progress=progress)
    return settings


def _soak_progress(every: float = 5.0) -> Callable[[SoakProgress], None]:
    """The soak's progress on stderr, a line per pair every `every` seconds (text output only)."""
    shown: dict[tuple[str, str], float] = {}

    def say(progress: SoakProgress) -> None:
        if progress.elapsed - shown.get(progress.pair, 0.0) >= every:
            shown[progress.pair] = progress.elapsed
            print(f"  soak {progress.text}", file=sys.stderr, flush=True)
    return say


def _pair(args: argparse.Namespace, names: list[str]) -> tuple[str, str]:
    if args.pair:
        parts = [p.strip() for p in args.pair.split(",")]
        if len(parts) != 2 or parts[0] == parts[1]:
            raise UsageError(f"--pair wants two different node names, A,B (got {args.pair!r})")
        unknown = [p for p in parts if p not in names]
        if unknown:
            raise UsageError(f"--pair: no node {unknown[0]!r} in the site (nodes: {', '.join(names)})")
        return parts[0], parts[1]
    if len(names) < 2:
        raise UsageError("a live test needs two nodes; the site has " + (names[0] if names else "none"))
    return names[0], names[1]


def _all_pairs(args: argparse.Namespace) -> bool:
    wanted = bool(getattr(args, "all_pairs", False))
    if wanted and args.kind != "soak":
        raise UsageError(f"--all-pairs applies to soak; {args.kind} has its own pairs (matrix "
                         "measures every pair)")
    if wanted and args.pair:
        raise UsageError("--all-pairs and --pair exclude each other")
    return wanted


def _live(args: argparse.Namespace, report: MeasurementReport, timing: MatrixTiming, cancel: Cancel
          ) -> tuple[Site, Iterator[Measurement], list[str]]:
    from strixwizard.services.discover import read_nodes
    from strixwizard.services.nodes import RunRequest

    if args.site is None:
        raise UsageError("say which site to test: --site FILE (or --demo)")
    site, nodes = read_nodes(RunRequest(site_file=args.site, trust_new_hosts=args.trust_new_hosts))
    if getattr(args, "allow_soft_rdma", False):
        site = dataclasses.replace(site, allow_soft_rdma=True)
    report.site = site.name
    names = [spec.name for spec in site.nodes]
    settings = _settings(args, site)
    all_pairs = _all_pairs(args)
    chosen, pairs = choose(args.kind, names, _pair(args, names) if args.pair or (args.kind in (
        "latency", "bandwidth", "soak") and not all_pairs) else None, all_pairs)
    stream = site_stream(site, nodes, args.kind, chosen, pairs, settings, cancel, timing,
                         args.trust_new_hosts)
    return site, stream, chosen


def _decode(args: argparse.Namespace, cancel: Cancel) -> tuple[DecodeRun, Site, Iterator[Measurement]]:
    """`test decode`: the model and options checked first (bad input: exit 2, nothing run)."""
    from strixwizard.cli.decode import decode_run, decode_stream

    run = decode_run(args)
    if args.demo:
        from strixwizard.services.nodes import demo_site

        site, nodes = demo_site(), []
    else:
        from strixwizard.services.discover import read_nodes
        from strixwizard.services.nodes import RunRequest

        if args.site is None:
            raise UsageError("say which site to test: --site FILE (or --demo)")
        site, found = read_nodes(RunRequest(site_file=args.site, trust_new_hosts=args.trust_new_hosts))
        nodes = list(found)
        if getattr(args, "allow_soft_rdma", False):  # as for the other kinds (_live)
            site = dataclasses.replace(site, allow_soft_rdma=True)
    _settings(args, site)
    pair = _pair(args, [spec.name for spec in site.nodes])
    return run, site, decode_stream(args, run, site, pair, cancel, nodes)


def run_command(args: argparse.Namespace) -> int:
    report = MeasurementReport(command=args.kind, site="?", thresholds=MeasurementSettings().thresholds,
                               demo=args.demo)
    timing = MatrixTiming()
    cancel = Cancel()
    started_at = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    out = sys.stdout
    decode: DecodeRun | None = None
    stream: Iterator[Measurement]
    try:
        if args.kind == "decode":
            decode, site, stream = _decode(args, cancel)
            if getattr(args, "transport", "all") == "tcp":  # TCP alone, judged: no RDMA asked for
                stream = (m for m in stream if m.transport != "rdma")
        elif args.demo and args.kind == "soak":  # for real on loopback, like the TCP baseline
            from strixwizard.services.measure import demo_soak
            from strixwizard.services.nodes import demo_site

            site = demo_site()
            settings = _settings(args, site)
            names = [spec.name for spec in site.nodes]
            _, pairs = choose("soak", names, _pair(args, names) if args.pair else None,
                              _all_pairs(args))
            stream = demo_soak(pairs, settings.soak, cancel)
        elif args.demo:
            from strixwizard.services.nodes import demo_site

            site = demo_site()
            settings = _settings(args, site)
            names = [spec.name for spec in site.nodes]
            chosen = list(_pair(args, names)) if args.pair or args.kind != "matrix" else names
            stream = demo_stream(args.kind, chosen, site.thresholds, settings.tcp)
            if settings.tcp_only:
                stream = (m for m in stream if m.transport != "rdma")
            timing.rounds = rounds(chosen)
        else:
            site, stream, chosen = _live(args, report, timing, cancel)
        report.site, report.thresholds = site.name, site.thresholds
        if not args.json:
            label = " (demo: TCP on loopback, RDMA replayed from recordings)" if args.demo else ""
            print(f"strixwizard test {args.kind} on {site.name}{label}", file=out, flush=True)
        began = time.monotonic()
        with signals.deferred():  # a signal ends the run after the result in flight
            for result in stream:
                report.results.append(result)
                if not args.json:
                    print_result(result, out)
                if (signum := signals.requested()) is not None:
                    break
            if (signum := signals.requested()) is not None:
                cancel.cancel()  # every program the run started is stopped
                close = getattr(stream, "close", None)
                if close is not None:
                    close()
                report.signal = signum
                report.error = (f"cancelled by {signals.name(signum)} after {len(report.results)} "
                                "result(s): the programs the run started were stopped; run it "
                                "again for a verdict")
    except UsageError as error:
        report.error = str(error)
        print(f"strixwizard: error: {error}", file=sys.stderr)
        if args.json:
            print(json.dumps(report.to_json(), indent=2))
        return EXIT_NO_VERDICT
    if args.kind == "matrix" and args.demo:
        timing.round_seconds = [time.monotonic() - began]
    if args.kind == "matrix":
        report.matrix = matrix_json(chosen, report.results, timing.rounds, timing.round_seconds)
    if decode is not None:
        report.decode = decode.document(report.results)
    if not args.no_history and decode is None and report.signal is None:
        _history(args, report, started_at)
    if getattr(args, "prometheus", None) is not None:  # before the verdict: it stays true
        from strixwizard.cli.prometheus import export_problem, write_test_metrics

        document = report.to_json()
        report.export_error = export_problem(
            args.prometheus, lambda: write_test_metrics(args.prometheus, document))
        if report.export_error:
            print(f"strixwizard: error: {report.export_error}", file=sys.stderr)
    if args.json:
        json.dump(report.to_json(), out, indent=2)
        out.write("\n")
    else:
        argv = getattr(args, "argv", None)
        print_summary(report, out, same_command(argv, add=("--transport", "tcp")) if argv else None)
    return report.exit_code


def _history(args: argparse.Namespace, report: MeasurementReport, started_at: str) -> None:
    from strixwizard.live.history import HistoryError, demo_history_path
    from strixwizard.services.measure import record

    path = args.history or (demo_history_path() if args.demo else None)  # the demo's own file
    try:
        recorded = record(report.site, f"test {args.kind}", started_at, report.results, path)
    except HistoryError as error:
        print(f"strixwizard: {error}", file=sys.stderr)
        return
    report.comparisons = recorded.comparisons
    report.history = recorded.to_json()

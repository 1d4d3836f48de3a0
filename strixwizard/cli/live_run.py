"""One `strixwizard test KIND` command from arguments to output; the stream itself comes from
`strixwizard.services.measure` (the one the wizard's Test step uses too), and what the kind
adds (its options' settings, its part of the document and of the summary) from its
declaration in `strixwizard.live.kinds`."""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from strixwizard.cli.nextstep import same_command
from strixwizard.discovery import Discovery
from strixwizard.errors import UsageError
from strixwizard.live.kinds import Finished, MeasurementKind, kind_of, refuse_foreign_options
from strixwizard.live.rccl import RcclSettings
from strixwizard.live.report import MeasurementReport
from strixwizard.live.results import Measurement
from strixwizard.live.settings import MatrixTiming, MeasurementSettings
from strixwizard.live.tcp import TcpSettings
from strixwizard.node import signals
from strixwizard.present.measure import print_result, print_summary
from strixwizard.services.measure import Cancel, choose, demo_stream, site_stream
from strixwizard.services.output import EXIT_NO_VERDICT
from strixwizard.site import Site

MAX_SECONDS = 300.0


def _settings(args: argparse.Namespace, kind: MeasurementKind) -> MeasurementSettings:
    """The settings the options give, checked before any node is asked (UsageError)."""
    if not 0 < args.seconds <= MAX_SECONDS:
        raise UsageError(f"--seconds must be between 0 and {MAX_SECONDS:g}")
    if not 14 <= args.size <= 1 << 20:
        raise UsageError("--size must be between 14 and 1048576 bytes (sockperf needs 14)")
    if getattr(args, "prometheus", None) is not None:
        from strixwizard.cli.prometheus import check_textfile_path

        check_textfile_path(args.prometheus)
    if kind.history and not getattr(args, "no_history", False):
        _check_history_path(args.history)
    from strixwizard.services.levels import MEASURE

    refuse_foreign_options(kind, args)
    scale = MEASURE[getattr(args, "level", "medium")].samples
    tcp = TcpSettings(size=args.size, seconds=args.seconds,
                      references=not getattr(args, "no_references", False),
                      reference_seconds=min(args.seconds, 3.0),
                      round_trips=round(TcpSettings.round_trips * scale),
                      warmup=round(TcpSettings.warmup * min(scale, 1.0)))
    settings = MeasurementSettings(tcp=tcp, rccl=RcclSettings(launcher=getattr(args, "launcher", "mpirun")),
                                   tcp_only=getattr(args, "transport", "all") == "tcp")
    perftest = type(settings.perftest)
    settings.perftest = perftest(size=args.size, iterations=round(perftest.iterations * scale),
                                 bw_iterations=round(perftest.bw_iterations * scale))
    if kind.configure is not None:
        kind.configure(args, settings, None if args.json else _progress(kind.name))
    return settings


def _progress(kind: str, every: float = 5.0) -> Callable[[Any], None]:
    """A long run's progress on stderr, a line per pair every `every` seconds (text output
    only): whatever the kind reports, with its `pair`, `elapsed` and `text`."""
    shown: dict[tuple[str, str], float] = {}

    def say(progress: Any) -> None:
        if progress.elapsed - shown.get(progress.pair, 0.0) >= every:
            shown[progress.pair] = progress.elapsed
            print(f"  {kind} {progress.text}", file=sys.stderr, flush=True)
    return say


def _pair(args: argparse.Namespace, names: list[str]) -> tuple[str, str] | None:
    """The pair --pair names (checked against the site), or None."""
    if not args.pair:
        return None
    parts = [p.strip() for p in args.pair.split(",")]
    if len(parts) != 2 or parts[0] == parts[1]:
        raise UsageError(f"--pair wants two different node names, A,B (got {args.pair!r})")
    unknown = [p for p in parts if p not in names]
    if unknown:
        raise UsageError(f"--pair: no node {unknown[0]!r} in the site (nodes: {', '.join(names)})")
    return parts[0], parts[1]


def _site(args: argparse.Namespace) -> Discovery:
    """The demo's site (its nodes are snapshots: nothing to run on), or the site file's, read."""
    if args.demo:
        from strixwizard.services.nodes import demo_site

        return Discovery(demo_site(), ())
    from strixwizard.services.discover import read_nodes
    from strixwizard.services.nodes import RunRequest

    if args.site is None:
        raise UsageError("say which site to test: --site FILE (or --demo)")
    return read_nodes(RunRequest(site_file=args.site, trust_new_hosts=args.trust_new_hosts,
                                 allow_soft_rdma=getattr(args, "allow_soft_rdma", False)))


def _stream(args: argparse.Namespace, kind: MeasurementKind, settings: MeasurementSettings,
            timing: MatrixTiming, cancel: Cancel) -> tuple[Site, list[str], Iterator[Measurement]]:
    found = _site(args)
    site = found.site
    settings.thresholds = site.thresholds
    names = [spec.name for spec in site.nodes]
    chosen, pairs = choose(kind.name, names, _pair(args, names),
                           bool(getattr(args, "all_pairs", False)))
    if args.demo:
        return site, chosen, demo_stream(kind.name, chosen, pairs, settings, cancel)
    return site, chosen, site_stream(found, kind.name, chosen, pairs, settings, cancel, timing,
                                     args.trust_new_hosts)


def run_command(args: argparse.Namespace) -> int:
    kind = kind_of(args.kind)
    report = MeasurementReport(command=args.kind, site="?", thresholds=MeasurementSettings().thresholds,
                               demo=args.demo)
    timing = MatrixTiming()
    cancel = Cancel()
    started_at = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    out = sys.stdout
    try:
        settings = _settings(args, kind)
        site, chosen, stream = _stream(args, kind, settings, timing, cancel)
        report.site, report.thresholds = site.name, site.thresholds
        if not args.json:
            label = (" (demo: figures replayed from recordings of two real nodes, labelled so)"
                     if args.demo else "")
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
            print(json.dumps(report.to_json(), indent=2, allow_nan=False))
        return EXIT_NO_VERDICT
    if kind.finish is not None:
        kind.finish(report, Finished(chosen, settings, timing, args.demo, time.monotonic() - began,
                                     site_nodes=len(site.nodes)))
    if not args.no_history and kind.history and report.signal is None:
        _history(args, report, started_at)
    if getattr(args, "prometheus", None) is not None:  # before the verdict: it stays true
        from strixwizard.cli.prometheus import export_problem, write_test_metrics

        document = report.to_json()
        report.export_error = export_problem(
            args.prometheus, lambda: write_test_metrics(args.prometheus, document))
        if report.export_error:
            print(f"strixwizard: error: {report.export_error}", file=sys.stderr)
    if args.json:
        json.dump(report.to_json(), out, indent=2, allow_nan=False)
        out.write("\n")
    else:
        argv = getattr(args, "argv", None)
        print_summary(report, out, same_command(argv, add=("--transport", "tcp")) if argv else None)
    return report.exit_code


def _check_history_path(path: Path | None) -> None:
    """Before the run, nothing changed: `--history` must be a regular file or a new one; the
    default lives in strixwizard's state folder, which must be private and the user's."""
    from strixwizard.files import not_regular, private_dir, state_dir

    if path is None:
        private_dir(state_dir(), "or point XDG_STATE_HOME elsewhere")
    elif (what := not_regular(path)) is not None:
        raise UsageError(f"--history {path}: is {what}; a test history is a regular file (or a "
                         "new one): name another path (nothing was changed)")


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

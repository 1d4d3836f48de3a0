"""One `strixwizard test` command from arguments to output: site, facts, plans, run, history."""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import sys
import time
from collections.abc import Iterator, Sequence

from strixwizard.engine import Node
from strixwizard.errors import UsageError
from strixwizard.live.hosts import Host, LocalHost, SshHost
from strixwizard.live.plan import PairPlan, plan_pair
from strixwizard.live.rccl import RcclSettings
from strixwizard.live.render import print_result, print_summary
from strixwizard.live.report import TestReport, matrix_json
from strixwizard.live.results import Measurement
from strixwizard.live.runner import MatrixTiming, TestSettings, run_tests
from strixwizard.live.schedule import rounds
from strixwizard.live.tcp import TcpSettings
from strixwizard.model import Status
from strixwizard.site import Site

MAX_SECONDS = 300.0


def _settings(args: argparse.Namespace, site: Site) -> TestSettings:
    if not 0 < args.seconds <= MAX_SECONDS:
        raise UsageError(f"--seconds must be between 0 and {MAX_SECONDS:g}")
    if not 14 <= args.size <= 1 << 20:
        raise UsageError("--size must be between 14 and 1048576 bytes (sockperf needs 14)")
    tcp = TcpSettings(size=args.size, seconds=args.seconds, references=not args.no_references,
                      reference_seconds=min(args.seconds, 3.0))
    settings = TestSettings(thresholds=site.thresholds, tcp=tcp, rccl=RcclSettings(launcher=args.launcher))
    settings.perftest = type(settings.perftest)(size=args.size)
    return settings


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


def _unreachable(kind: str, pair: tuple[str, str], reason: str) -> Measurement:
    return Measurement(kind if kind != "matrix" else "latency", "tcp", "ssh", pair, Status.ERROR, reason)


def site_hosts(site: Site, nodes: Sequence[Node], trust_new_hosts: bool = False
               ) -> tuple[dict[str, Host], dict[str, str]]:
    """Where tests can run: a host per reachable node (local or over SSH), and for every other
    node the reason it cannot take part (unreachable, or a snapshot with nothing to run on)."""
    from strixwizard.targets import ssh_target

    unreachable = {n.report.name: n.report.error or "unreachable" for n in nodes if not n.report.reachable}
    hosts: dict[str, Host] = {}
    for spec in site.nodes:
        if spec.snapshot is not None:
            unreachable[spec.name] = f"{spec.name} is a snapshot: there is nothing to run a test on"
        elif spec.is_local:
            hosts[spec.name] = LocalHost(spec.name)
        elif spec.name not in unreachable:
            hosts[spec.name] = SshHost(ssh_target(site, spec, trust_new_hosts))
    return hosts, unreachable


def _live(args: argparse.Namespace, report: TestReport, timing: MatrixTiming
          ) -> tuple[Site, Iterator[Measurement], list[str]]:
    from strixwizard.targets import RunRequest, resolve_run

    if args.site is None:
        raise UsageError("say which site to test: --site FILE (or --demo)")
    site, nodes = resolve_run(RunRequest(site_file=args.site, trust_new_hosts=args.trust_new_hosts))
    if getattr(args, "allow_soft_rdma", False):
        site = dataclasses.replace(site, allow_soft_rdma=True)
    report.site = site.name
    names = [spec.name for spec in site.nodes]
    specs = {spec.name: spec for spec in site.nodes}
    facts = {n.report.name: n.facts for n in nodes if n.facts is not None}
    hosts, unreachable = site_hosts(site, nodes, args.trust_new_hosts)
    settings = _settings(args, site)
    if args.kind == "matrix":
        chosen = names if not args.pair else list(_pair(args, names))
        pairs = [p for r in rounds(chosen) for p in r]
    elif args.kind == "rccl":
        chosen = names if not args.pair else list(_pair(args, names))
        pairs = [(chosen[i], chosen[i + 1]) for i in range(len(chosen) - 1)]
    else:
        pair = _pair(args, names)
        chosen, pairs = list(pair), [pair]
    down = [n for n in chosen if n in unreachable]
    if down:
        results = iter([_unreachable(args.kind, (chosen[0], chosen[-1]), f"{n}: {unreachable[n]}")
                        for n in down])
        return site, results, chosen
    plans: dict[tuple[str, str], PairPlan] = {p: plan_pair(site, facts, *p) for p in pairs}
    addresses = {n: (specs[n].host or n) for n in chosen}
    stream = run_tests(args.kind, {n: hosts[n] for n in chosen}, plans, chosen, settings, addresses, timing)
    return site, stream, chosen


def run_command(args: argparse.Namespace) -> int:
    report = TestReport(command=args.kind, site="?", thresholds=TestSettings().thresholds, demo=args.demo)
    timing = MatrixTiming()
    started_at = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    out = sys.stdout
    try:
        if args.demo:
            from strixwizard.live.demo import demo_results
            from strixwizard.targets import demo_site

            site = demo_site()
            settings = _settings(args, site)
            names = [spec.name for spec in site.nodes]
            chosen = list(_pair(args, names)) if args.pair or args.kind != "matrix" else names
            stream: Iterator[Measurement] = demo_results(args.kind, chosen, site.thresholds, settings.tcp)
            timing.rounds = rounds(chosen)
        else:
            site, stream, chosen = _live(args, report, timing)
        report.site, report.thresholds = site.name, site.thresholds
        if not args.json:
            label = " (demo: TCP on loopback, RDMA replayed from recordings)" if args.demo else ""
            print(f"strixwizard test {args.kind} on {site.name}{label}", file=out, flush=True)
        began = time.monotonic()
        for result in stream:
            report.results.append(result)
            if not args.json:
                print_result(result, out)
    except UsageError as error:
        report.error = str(error)
        print(f"strixwizard: error: {error}", file=sys.stderr)
        if args.json:
            print(json.dumps(report.to_json(), indent=2))
        return 2
    if args.kind == "matrix" and args.demo:
        timing.round_seconds = [time.monotonic() - began]
    if args.kind == "matrix":
        report.matrix = matrix_json(chosen, report.results, timing.rounds, timing.round_seconds)
    if not args.no_history and not args.demo:
        _history(args, report, started_at)
    if args.json:
        json.dump(report.to_json(), out, indent=2)
        out.write("\n")
    else:
        print_summary(report, out)
    return report.exit_code


def _history(args: argparse.Namespace, report: TestReport, started_at: str) -> None:
    from strixwizard.live.history import HistoryError, record_run

    try:
        recorded = record_run(report.site, f"test {args.kind}", started_at, report.results,
                              args.history)
    except HistoryError as error:
        print(f"strixwizard: {error}", file=sys.stderr)
        return
    report.comparisons = recorded.comparisons
    report.history = recorded.to_json()

"""Measure: the live measurements as one stream of `Measurement`s, their one cancel, and the history.

`strixwizard test` and the wizard's Test step both build their stream here. The
one cancel mechanism is `Cancel`: every program the stream starts is registered with
the caller's Cancel, so `cancel()` (from any thread) ends them at once and no new one
starts; closing the stream stops what is still running too.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from strixwizard.checking.engine import Node
from strixwizard.errors import UsageError
from strixwizard.live.counters import Target, sampled
from strixwizard.live.counters import targets as counter_targets
from strixwizard.live.hosts import Host
from strixwizard.live.plan import PairPlan, RdmaEnd
from strixwizard.live.results import Measurement
from strixwizard.live.runner import MatrixTiming, MeasurementSettings
from strixwizard.live.soak import SoakSettings
from strixwizard.live.tcp import TcpSettings
from strixwizard.model import Status
from strixwizard.node.cancel import Cancel as Cancel  # the one cancel of a test run
from strixwizard.node.connect import connect
from strixwizard.node.session import Connector
from strixwizard.node.target import LocalTarget, SnapshotTarget, target_for
from strixwizard.site import Site, Thresholds

if TYPE_CHECKING:
    from strixwizard.decode.measure import DecodeSettings
    from strixwizard.live.history import Recorded


def choose(kind: str, names: Sequence[str], pair: tuple[str, str] | None = None,
           all_pairs: bool = False) -> tuple[list[str], list[tuple[str, str]]]:
    """The nodes a test command takes part with, and the pairs it measures (in round order).
    `all_pairs` (the soak's): every pair, in the matrix's rounds of disjoint pairs."""
    from strixwizard.live.schedule import rounds

    if kind == "soak" and all_pairs:
        return list(names), [p for r in rounds(names) for p in r]
    if kind in ("matrix", "rccl"):
        chosen = list(pair) if pair else list(names)
        if kind == "matrix":
            return chosen, [p for r in rounds(chosen) for p in r]
        return chosen, [(chosen[i], chosen[i + 1]) for i in range(len(chosen) - 1)]
    if pair is None:
        if len(names) < 2:
            raise UsageError("a live test needs two nodes; the site has " + (names[0] if names else "none"))
        pair = (names[0], names[1])
    return list(pair), [pair]


def planned_pairs(site: Site) -> list[tuple[str, str]]:
    """Every pair the all-pairs matrix measures, in the order of the rounds."""
    return choose("matrix", [spec.name for spec in site.nodes])[1]


def unreachable(kind: str, pair: tuple[str, str], reason: str) -> Measurement:
    return Measurement(kind if kind != "matrix" else "latency", "tcp", "ssh", pair, Status.ERROR, reason)


def site_hosts(site: Site, nodes: Sequence[Node], trust_new_hosts: bool = False,
               connector: Connector | None = None) -> tuple[dict[str, Host], dict[str, str]]:
    """Where tests can run: a session from `connector` (`connect` by default) per reachable
    node (local or over SSH), and for every other node the reason it cannot take part
    (unreachable, or a snapshot with nothing to run on)."""
    down = {n.report.name: n.report.error or "unreachable" for n in nodes if not n.report.reachable}
    hosts: dict[str, Host] = {}
    for spec in site.nodes:
        target = target_for(site, spec, trust_new_hosts=trust_new_hosts)
        if isinstance(target, SnapshotTarget):
            down[spec.name] = f"{spec.name} is a snapshot: there is nothing to run a test on"
        elif isinstance(target, LocalTarget) or spec.name not in down:
            hosts[spec.name] = (connector or connect)(target)
    return hosts, down


def demo_paths(chosen: Sequence[str]) -> dict[tuple[str, str], tuple[RdmaEnd, RdmaEnd] | None]:
    """The RDMA path of every pair of the demo's nodes, from the demo's own snapshots: what
    `doctor --demo` judges is what `test --demo` shows."""
    import itertools

    from strixwizard.live.plan import plan_pair
    from strixwizard.services.nodes import RunRequest, resolve_run

    site, nodes = resolve_run(RunRequest(demo=True))
    facts = {n.report.name: n.facts for n in nodes if n.facts is not None}
    paths: dict[tuple[str, str], tuple[RdmaEnd, RdmaEnd] | None] = {}
    for a, b in itertools.permutations(chosen, 2):
        paths[(a, b)] = plan_pair(site, facts, a, b).rdma
    return paths


def demo_stream(kind: str, chosen: list[str], thresholds: Thresholds, tcp: TcpSettings,
                cancel: Cancel | None = None) -> Iterator[Measurement]:
    """The demo: TCP measured for real on loopback, RDMA and RCCL replayed from recordings."""
    from strixwizard.live.demo import demo_counters, demo_results

    results = []
    for measurement in demo_results(kind, chosen, thresholds, tcp, demo_paths(chosen)):
        if cancel is not None and cancel.cancelled:
            return
        results.append(measurement)
        yield measurement
    if kind == "matrix":  # the counters recorded around the RDMA run
        yield demo_counters(results, (chosen[0], chosen[-1]))


@dataclass(frozen=True)
class Prepared:
    """What a site's test run needs: hosts (tracked by the cancel), plans, addresses."""

    hosts: dict[str, Host]
    down: dict[str, str]
    plans: dict[tuple[str, str], PairPlan]
    addresses: dict[str, str]
    sessions: dict[str, Host] = field(default_factory=dict)  # the same hosts, unscoped (collect)
    counters: dict[str, Target] = field(default_factory=dict)  # fabric counters read around a run
    cancel: Cancel | None = None

    def close(self) -> None:
        for host in self.hosts.values():
            host.close()


def prepare(site: Site, nodes: Sequence[Node], pairs: Sequence[tuple[str, str]], cancel: Cancel,
            trust_new_hosts: bool = False, connector: Connector | None = None) -> Prepared:
    from strixwizard.live.plan import plan_pair

    facts = {n.report.name: n.facts for n in nodes if n.facts is not None}
    plain, down = site_hosts(site, nodes, trust_new_hosts, connector)
    hosts: dict[str, Host] = {name: cancel.scope(host) for name, host in plain.items()}
    plans = {pair: plan_pair(site, facts, *pair) for pair in pairs
             if pair[0] not in down and pair[1] not in down}
    addresses = {spec.name: spec.host or spec.name for spec in site.nodes}
    return Prepared(hosts, down, plans, addresses, plain, counter_targets(site, facts, list(plain)),
                    cancel)


def run_prepared(prepared: Prepared, kind: str, chosen: list[str], pairs: Sequence[tuple[str, str]],
                 settings: MeasurementSettings, timing: MatrixTiming | None = None) -> Iterator[Measurement]:
    """One test command on prepared hosts; a node that cannot take part is an error result."""
    from strixwizard.live.runner import run_tests

    down = [n for n in chosen if n in prepared.down]
    if down:
        for name in down:
            yield unreachable(kind, (chosen[0], chosen[-1]), f"{name}: {prepared.down[name]}")
        return
    hosts = {n: prepared.hosts[n] for n in chosen}
    plans = {pair: prepared.plans[pair] for pair in pairs}
    stream = run_tests(kind, hosts, plans, chosen, settings, prepared.addresses, timing)
    wanted = {n: t for n, t in prepared.counters.items() if n in chosen}
    cancel = prepared.cancel
    yield from sampled(stream, prepared.sessions, wanted, (chosen[0], chosen[-1]),
                       lambda: cancel is not None and cancel.cancelled)


def site_stream(site: Site, nodes: Sequence[Node], kind: str, chosen: list[str],
                pairs: Sequence[tuple[str, str]], settings: MeasurementSettings, cancel: Cancel,
                timing: MatrixTiming | None = None, trust_new_hosts: bool = False,
                connector: Connector | None = None) -> Iterator[Measurement]:
    """One test command (`strixwizard test KIND`) on a site's real nodes."""
    prepared = prepare(site, nodes, pairs, cancel, trust_new_hosts, connector)
    try:
        yield from run_prepared(prepared, kind, chosen, pairs, settings, timing)
    finally:
        prepared.close()


def wizard_stream(site: Site, nodes: Sequence[Node], demo: bool, cancel: Cancel,
                  tcp: TcpSettings | None = None, demo_seconds: float = 2.0,
                  connector: Connector | None = None) -> Iterator[Measurement]:
    """The Test step's run: the all-pairs matrix, then RCCL across the nodes (one set of hosts)."""
    from strixwizard.live.demo import demo_rccl, on_site_path

    names = [spec.name for spec in site.nodes]
    if demo:
        quick = tcp or TcpSettings(seconds=demo_seconds, reference_seconds=min(demo_seconds, 3.0))
        yield from demo_stream("matrix", names, site.thresholds, quick, cancel)
        if not cancel.cancelled:
            rccl = demo_rccl()
            yield on_site_path(rccl, demo_paths(names).get(rccl.pair))
        return
    if len(names) < 2:
        only = names[0] if names else "?"
        yield unreachable("latency", (only, only), "a live test needs two nodes; the site has fewer")
        return
    settings = MeasurementSettings(thresholds=site.thresholds, tcp=tcp or TcpSettings())
    pairs, chain = planned_pairs(site), choose("rccl", names)[1]
    prepared = prepare(site, nodes, list(dict.fromkeys([*pairs, *chain])), cancel, connector=connector)
    try:
        if prepared.down:
            yield from run_prepared(prepared, "latency", names, [], settings)
            return
        yield from run_prepared(prepared, "matrix", names, pairs, settings)
        if not cancel.cancelled:
            yield from run_prepared(prepared, "rccl", names, chain, settings)
    finally:
        prepared.close()


def demo_soak(pairs: Sequence[tuple[str, str]], settings: SoakSettings, cancel: Cancel
              ) -> Iterator[Measurement]:
    """The demo's soak: the demo nodes are snapshots, so the soak runs for real on this
    machine's loopback (like the demo's TCP baseline), labelled so."""
    from strixwizard.live.demo import LOOPBACK
    from strixwizard.live.soak import tcp_soak

    host = cancel.scope(connect(LocalTarget("this machine")))
    path = f"{LOOPBACK} loopback on this machine (the demo nodes are snapshots; not a fabric link)"
    try:
        for pair in pairs:
            if cancel.cancelled:
                return
            yield tcp_soak(host, host, pair, LOOPBACK, path, settings)
    finally:
        host.close()


#: The Test step's soak: the durations offered (the first is the default), each pair's bound.
SOAK_SECONDS = (30.0, 10.0, 60.0, 300.0)
#: Bytes each way at most in the wizard's soak: high enough that the duration ends the run on
#: any link this tool meets (40 Gb/s for 300 s is 1.5 TB; the CLI's --bytes bound is 1 TiB).
SOAK_BYTES = 1 << 40


def soak_stream(site: Site, nodes: Sequence[Node], pairs: Sequence[tuple[str, str]],
                settings: SoakSettings, cancel: Cancel, demo: bool = False,
                connector: Connector | None = None) -> Iterator[Measurement]:
    """The soak on `pairs` (disjoint ones at once, in the matrix's rounds), the fabric counters
    read around it; `settings.progress` hears from each running pair about once a second."""
    if demo:
        yield from demo_soak(pairs, settings, cancel)
        return
    chosen = list(dict.fromkeys(n for pair in pairs for n in pair))
    tests = MeasurementSettings(thresholds=site.thresholds, soak=settings)
    yield from site_stream(site, nodes, "soak", chosen, pairs, tests, cancel, connector=connector)


def decode_stream(site: Site, nodes: Sequence[Node], pair: tuple[str, str], settings: DecodeSettings,
                  cancel: Cancel, demo: bool = False, trust_new_hosts: bool = False
                  ) -> Iterator[Measurement]:
    """`strixwizard test decode`: the all-reduce at a model's decode sizes, over RCCL and TCP
    (see `strixwizard.decode`); on the demo, RCCL replayed and TCP on loopback."""
    from strixwizard.decode.links import usb4_paths
    from strixwizard.decode.measure import decode_pair, demo_decode

    if demo:
        yield from demo_decode(pair, settings)
        return
    prepared = prepare(site, nodes, [pair], cancel, trust_new_hosts)
    try:
        down = [n for n in pair if n in prepared.down]
        if down:
            for name in down:
                yield unreachable("decode", pair, f"{name}: {prepared.down[name]}")
            return
        plan = prepared.plans[pair]
        facts = {n.report.name: n.facts for n in nodes if n.facts is not None}
        yield from decode_pair(prepared.hosts, plan, prepared.addresses, settings,
                               usb4_paths(site, facts, plan))
    finally:
        prepared.close()


def record(site: str, command: str, started_at: str, results: list[Measurement],
           path: Path | None = None) -> Recorded:
    """Compare a finished real-site run with the last good one, then store it (HistoryError)."""
    from strixwizard.live.history import record_run

    return record_run(site, command, started_at, results, path)


def store(site: str, command: str, started_at: str, results: list[Measurement],
          path: Path | None = None) -> tuple[str, Recorded | None]:
    """Store a finished run in the test history (`path`, else the default file) through
    `record`, as `strixwizard test` does; say where, and how it compared with the last good
    run, in one line. The record is None when the history could not be written."""
    from strixwizard.live.history import HistoryError

    try:
        recorded = record(site, command, started_at, results, path)
    except HistoryError as error:
        return f"Not stored: {error}", None
    compared = [c for c in recorded.comparisons if c.compared]
    worse = [c.summary for c in compared if c.worse]
    if worse:
        note = f"; worse than the last good run: {'; '.join(worse)}"
    elif compared:
        note = f"; {len(compared)} figure(s) compared with the last good run, none worse"
    else:
        note = "; no earlier good run to compare with"
    from strixwizard.files import display_path

    return f"Stored in the test history {display_path(recorded.path)}{note}.", recorded


def history_line(site: str, command: str, started_at: str, results: list[Measurement],
                 path: Path | None = None) -> str:
    """Store a real-site run in the test history; say where, and how it compared with the last
    good run, in one line."""
    return store(site, command, started_at, results, path)[0]

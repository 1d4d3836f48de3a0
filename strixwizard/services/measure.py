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

from strixwizard.discovery import Discovery
from strixwizard.live.counters import Target, sampled
from strixwizard.live.counters import targets as counter_targets
from strixwizard.live.hosts import Host
from strixwizard.live.kinds import DemoJob, every_pair, kind_of, registry
from strixwizard.live.kinds.soak import KIND as SOAK  # the Test step's soak (s) is the soak's panel
from strixwizard.live.plan import PairPlan, RdmaEnd
from strixwizard.live.results import Measurement
from strixwizard.live.settings import MatrixTiming, MeasurementSettings
from strixwizard.live.soak import SoakSettings
from strixwizard.live.tcp import TcpSettings
from strixwizard.model import Status
from strixwizard.node.cancel import Cancel as Cancel  # the one cancel of a test run
from strixwizard.node.connect import connect
from strixwizard.node.session import Connector
from strixwizard.node.target import LocalTarget, SnapshotTarget, target_for
from strixwizard.site import Site

if TYPE_CHECKING:
    from strixwizard.live.history import Recorded


def choose(kind: str, names: Sequence[str], pair: tuple[str, str] | None = None,
           all_pairs: bool = False) -> tuple[list[str], list[tuple[str, str]]]:
    """The nodes a measurement takes part with, and the pairs it measures (in round order), as
    the kind pairs them: from the site's node names, the pair asked for and `all_pairs`."""
    return kind_of(kind).pairs(names, pair, all_pairs)


def planned_pairs(site: Site) -> list[tuple[str, str]]:
    """Every pair of the site's nodes, in rounds of disjoint pairs (the Test step's pairs)."""
    return every_pair([spec.name for spec in site.nodes], None)[1]


def unreachable(kind: str, pair: tuple[str, str], reason: str) -> Measurement:
    return Measurement(kind_of(kind).result_kind, "tcp", "ssh", pair, Status.ERROR, reason)


def site_hosts(found: Discovery, trust_new_hosts: bool = False,
               connector: Connector | None = None) -> tuple[dict[str, Host], dict[str, str]]:
    """Where tests can run: a session from `connector` (`connect` by default) per reachable
    node (local or over SSH), and for every other node the reason it cannot take part
    (unreachable, or a snapshot with nothing to run on)."""
    site = found.site
    down = {n.name: n.report.error or "unreachable" for n in found.nodes if not n.report.reachable}
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

    found = Discovery.of(*resolve_run(RunRequest(demo=True)))
    paths: dict[tuple[str, str], tuple[RdmaEnd, RdmaEnd] | None] = {}
    for a, b in itertools.permutations(chosen, 2):
        paths[(a, b)] = plan_pair(found, a, b).rdma
    return paths


def demo_stream(kind: str, chosen: list[str], pairs: Sequence[tuple[str, str]],
                settings: MeasurementSettings, cancel: Cancel) -> Iterator[Measurement]:
    """The demo: TCP measured for real on loopback, RDMA and RCCL replayed from recordings (each
    kind says what it replays); `--transport tcp` keeps TCP alone."""
    job = DemoJob(list(chosen), list(pairs), settings, cancel, lambda: demo_paths(chosen))
    for measurement in kind_of(kind).demo(job):
        if cancel.cancelled:
            return
        if settings.tcp_only and measurement.transport == "rdma":
            continue
        yield measurement


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


def prepare(found: Discovery, pairs: Sequence[tuple[str, str]], cancel: Cancel,
            trust_new_hosts: bool = False, connector: Connector | None = None) -> Prepared:
    from strixwizard.live.plan import plan_pair

    site, facts = found.site, found.facts_by_name
    plain, down = site_hosts(found, trust_new_hosts, connector)
    hosts: dict[str, Host] = {name: cancel.scope(host) for name, host in plain.items()}
    plans = {pair: plan_pair(found, *pair) for pair in pairs
             if pair[0] not in down and pair[1] not in down}
    addresses = {spec.name: spec.host or spec.name for spec in site.nodes}
    return Prepared(hosts, down, plans, addresses, plain, counter_targets(site, facts, list(plain)),
                    cancel)


def run_prepared(prepared: Prepared, kind: str, chosen: list[str], pairs: Sequence[tuple[str, str]],
                 settings: MeasurementSettings, timing: MatrixTiming | None = None,
                 found: Discovery | None = None) -> Iterator[Measurement]:
    """One measurement on prepared hosts; a node that cannot take part is an error result."""
    from strixwizard.live.runner import run_measurement

    down = [n for n in chosen if n in prepared.down]
    if down:
        for name in down:
            yield unreachable(kind, (chosen[0], chosen[-1]), f"{name}: {prepared.down[name]}")
        return
    hosts = {n: prepared.hosts[n] for n in chosen}
    plans = {pair: prepared.plans[pair] for pair in pairs}
    stream = run_measurement(kind, hosts, plans, chosen, settings, prepared.addresses, timing,
                             found=found)
    if not kind_of(kind).counters:
        yield from stream
        return
    wanted = {n: t for n, t in prepared.counters.items() if n in chosen}
    cancel = prepared.cancel
    yield from sampled(stream, prepared.sessions, wanted, (chosen[0], chosen[-1]),
                       lambda: cancel is not None and cancel.cancelled)


def site_stream(found: Discovery, kind: str, chosen: list[str],
                pairs: Sequence[tuple[str, str]], settings: MeasurementSettings, cancel: Cancel,
                timing: MatrixTiming | None = None, trust_new_hosts: bool = False,
                connector: Connector | None = None) -> Iterator[Measurement]:
    """One measurement (`strixwizard test KIND`) on a site's real nodes."""
    prepared = prepare(found, pairs, cancel, trust_new_hosts, connector)
    try:
        yield from run_prepared(prepared, kind, chosen, pairs, settings, timing, found)
    finally:
        prepared.close()


def wizard_kinds() -> list[str]:
    """The kinds of the Test step's run (r), in their order."""
    run = sorted((k.wizard_run, k.name) for k in registry().values() if k.wizard_run is not None)
    return [name for _, name in run]


def wizard_stream(found: Discovery, demo: bool, cancel: Cancel,
                  tcp: TcpSettings | None = None, demo_seconds: float = 2.0,
                  connector: Connector | None = None) -> Iterator[Measurement]:
    """The Test step's run: each kind of it in turn (the all-pairs matrix, then RCCL across the
    nodes), on one set of hosts."""
    site = found.site
    names = [spec.name for spec in site.nodes]
    kinds = wizard_kinds()
    if demo:
        quick = tcp or TcpSettings(seconds=demo_seconds, reference_seconds=min(demo_seconds, 3.0))
        settings = MeasurementSettings(thresholds=site.thresholds, tcp=quick)
        for kind in kinds:
            if cancel.cancelled:
                return
            chosen, pairs = choose(kind, names)
            yield from demo_stream(kind, chosen, pairs, settings, cancel)
        return
    if len(names) < 2:
        only = names[0] if names else "?"
        yield unreachable(kinds[0], (only, only), "a live test needs two nodes; the site has fewer")
        return
    settings = MeasurementSettings(thresholds=site.thresholds, tcp=tcp or TcpSettings())
    planned = {kind: choose(kind, names) for kind in kinds}
    every = list(dict.fromkeys(pair for _, pairs in planned.values() for pair in pairs))
    prepared = prepare(found, every, cancel, connector=connector)
    try:
        if prepared.down:
            yield from run_prepared(prepared, kinds[0], names, [], settings)
            return
        for kind in kinds:
            if cancel.cancelled:
                return
            chosen, pairs = planned[kind]
            yield from run_prepared(prepared, kind, chosen, pairs, settings, found=found)
    finally:
        prepared.close()


#: The Test step's soak: the durations offered (the first is the default), each pair's bound.
SOAK_SECONDS = (30.0, 10.0, 60.0, 300.0)
#: Bytes each way at most in the wizard's soak: high enough that the duration ends the run on
#: any link this tool meets (40 Gb/s for 300 s is 1.5 TB; the CLI's --bytes bound is 1 TiB).
SOAK_BYTES = 1 << 40


def soak_stream(found: Discovery, pairs: Sequence[tuple[str, str]],
                settings: SoakSettings, cancel: Cancel, demo: bool = False,
                connector: Connector | None = None) -> Iterator[Measurement]:
    """The soak on `pairs` (disjoint ones at once, in the matrix's rounds), the fabric counters
    read around it; `settings.progress` hears from each running pair about once a second."""
    chosen = list(dict.fromkeys(n for pair in pairs for n in pair))
    measuring = MeasurementSettings(thresholds=found.site.thresholds, soak=settings)
    if demo:
        yield from demo_stream(SOAK.name, chosen, pairs, measuring, cancel)
        return
    yield from site_stream(found, SOAK.name, chosen, pairs, measuring, cancel,
                           connector=connector)


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
    if recorded.run_id is None:
        return ("Not stored in the test history: nothing was measured (replayed recordings are not "
                "measurements)."), recorded
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

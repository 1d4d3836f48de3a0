"""The live-test engine calls the wizard makes (step 6), run inside a Textual thread worker.

`test_stream` builds the same stream `strixwizard test` builds (`live.session`):
- the demo: the TCP baseline measured for real on loopback (`live.demo.demo_tcp`, bounded
  by `DEMO_SECONDS`), RDMA latency/bandwidth and RCCL replayed from the demo's recordings;
- a site: `live.plan.plan_pair` for every pair (in `live.schedule.rounds`), then
  `live.runner.run_tests("matrix", ...)` (TCP + RDMA latency, RDMA bandwidth per pair) and
  `run_tests("rccl", ...)` across the nodes.
The worker closes the generator when it is cancelled (the runner then stops every program
still running); `Stopper` also stops the programs this stream started at once, so a
cancel does not wait for the measurement in flight to end.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from strixwizard.engine import Node
from strixwizard.live.hosts import Host, Process
from strixwizard.live.results import Measurement
from strixwizard.model import Status
from strixwizard.site import Site

DEMO_SECONDS = 2.0  # time bound of the demo's loopback TCP loop (each tool)


@dataclass
class Stopper:
    """Remembers the programs started through its hosts; `stop()` ends them (any thread)."""

    stopped: threading.Event = field(default_factory=threading.Event)
    _processes: list[Process] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, process: Process) -> None:
        with self._lock:
            self._processes.append(process)

    def stop(self) -> None:
        self.stopped.set()
        with self._lock:
            live = [p for p in self._processes if not p.ended]
        for process in live:
            process.stop()


class StoppableHost:
    """A `live.hosts.Host` whose programs the wizard can stop when the user cancels."""

    def __init__(self, inner: Host, stopper: Stopper) -> None:
        self.inner = inner
        self.name = inner.name
        self.python = inner.python
        self.stopper = stopper

    def start(self, argv: Sequence[str], limit_s: float, label: str = "") -> Process:
        from strixwizard.live.hosts import HostError

        if self.stopper.stopped.is_set():
            raise HostError(f"{self.name}: the tests were cancelled")
        process = self.inner.start(argv, limit_s, label)
        self.stopper.add(process)
        return process

    def close(self) -> None:
        self.inner.close()


def planned_pairs(site: Site) -> list[tuple[str, str]]:
    """Every pair the tests measure, in the order of the rounds."""
    from strixwizard.live.schedule import rounds

    return [pair for r in rounds([spec.name for spec in site.nodes]) for pair in r]


def demo_stream(site: Site, seconds: float = DEMO_SECONDS) -> Iterator[Measurement]:
    from strixwizard.live.demo import demo_rccl, demo_results
    from strixwizard.live.tcp import TcpSettings

    tcp = TcpSettings(seconds=seconds, reference_seconds=min(seconds, 3.0))
    names = [spec.name for spec in site.nodes]
    yield from demo_results("matrix", names, site.thresholds, tcp)
    yield demo_rccl()


def _error(pair: tuple[str, str], reason: str) -> Measurement:
    return Measurement("latency", "tcp", "ssh", pair, Status.ERROR, reason)


def site_stream(site: Site, nodes: Sequence[Node], stopper: Stopper) -> Iterator[Measurement]:
    from strixwizard.live.plan import plan_pair
    from strixwizard.live.runner import TestSettings, run_tests
    from strixwizard.services.test import site_hosts

    names = [spec.name for spec in site.nodes]
    facts = {n.report.name: n.facts for n in nodes if n.facts is not None}
    plain, down = site_hosts(site, nodes)
    hosts: dict[str, Host] = {name: StoppableHost(host, stopper) for name, host in plain.items()}
    try:
        if down:
            for name, why in down.items():
                yield _error((names[0], names[-1]), f"{name}: {why}")
            return
        pairs = planned_pairs(site)
        plans = {pair: plan_pair(site, facts, *pair) for pair in pairs}
        settings = TestSettings(thresholds=site.thresholds)
        addresses = {spec.name: spec.host or spec.name for spec in site.nodes}
        yield from run_tests("matrix", hosts, plans, names, settings, addresses)
        chain = {(names[i], names[i + 1]): plans.get((names[i], names[i + 1]))
                 or plan_pair(site, facts, names[i], names[i + 1]) for i in range(len(names) - 1)}
        yield from run_tests("rccl", hosts, chain, names, settings, addresses)
    finally:
        for host in hosts.values():
            host.close()


def test_stream(site: Site, nodes: Sequence[Node], demo: bool, stopper: Stopper
                ) -> Iterator[Measurement]:
    """The stream of one Test-step run; close it to stop (the runner stops remote programs)."""
    if demo:
        return demo_stream(site)
    if len(site.nodes) < 2:
        return iter([_error((site.nodes[0].name if site.nodes else "?",) * 2,
                            "a live test needs two nodes; the site has fewer")])
    return site_stream(site, nodes, stopper)


def store_in_history(site: str, started_at: str, results: list[Measurement]) -> str:
    """Store a real-site run in the test history (as `strixwizard test` does); say where, and
    how it compared with the last good run, in one line."""
    from strixwizard.live.history import HistoryError, record_run

    try:
        recorded = record_run(site, "wizard test", started_at, results)
    except HistoryError as error:
        return f"Not stored: {error}"
    compared = [c for c in recorded.comparisons if c.compared]
    worse = [c.summary for c in compared if c.worse]
    if worse:
        note = f"; worse than the last good run: {'; '.join(worse)}"
    elif compared:
        note = f"; {len(compared)} figure(s) compared with the last good run, none worse"
    else:
        note = "; no earlier good run to compare with"
    return f"Stored in the test history {recorded.path}{note}."

"""`strixwizard test matrix`: latency and bandwidth of every pair, in rounds of disjoint pairs
(no node is in two pairs of a round; a round starts when the previous one is done)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, TextIO

from strixwizard.live.kinds import DemoJob, Finished, Job, MeasurementKind, WizardPanel, every_pair
from strixwizard.live.kinds.shared import NO_REFERENCES, TRANSPORT
from strixwizard.live.results import Measurement

if TYPE_CHECKING:
    from strixwizard.live.report import MeasurementReport


def run(job: Job) -> Iterator[Measurement]:
    from strixwizard.live.pairs import bandwidth_pair, latency_pair
    from strixwizard.live.schedule import rounds

    schedule = rounds(list(job.nodes))
    if job.timing is not None:
        job.timing.rounds = schedule
    for pairs in schedule:
        started = time.monotonic()

        def task(pair: tuple[str, str]) -> Callable[[], Iterator[Measurement]]:
            def run_pair() -> Iterator[Measurement]:
                plan = job.plans[pair]
                yield from latency_pair(job.hosts, plan, job.settings)
                if plan.rdma is not None and not job.settings.tcp_only:
                    yield from bandwidth_pair(job.hosts, plan, job.settings)
            return run_pair

        yield from job.in_threads([task(pair) for pair in pairs])
        if job.timing is not None:
            job.timing.round_seconds.append(time.monotonic() - started)


def demo(job: DemoJob) -> Iterator[Measurement]:
    from strixwizard.live.demo import demo_counters, demo_results

    results = []
    for measurement in demo_results("matrix", job.nodes, job.settings.thresholds,
                                    job.paths()):
        results.append(measurement)
        yield measurement
    yield demo_counters(results, (job.nodes[0], job.nodes[-1]))  # read around the RDMA run


def finish(report: MeasurementReport, done: Finished) -> None:
    from strixwizard.live.report import matrix_json
    from strixwizard.live.schedule import rounds

    if done.demo:  # one round: the demo runs its pairs one after the other
        done.timing.rounds, done.timing.round_seconds = rounds(done.nodes), [done.seconds]
    report.matrix = matrix_json(done.nodes, report.results, done.timing.rounds,
                                done.timing.round_seconds)


def summary(report: MeasurementReport, out: TextIO) -> None:
    """The grid of median one-way µs, TCP / RDMA, one row and column per node."""
    if not report.matrix:
        return
    nodes = report.matrix["nodes"]
    grid = report.matrix["tcp_latency_us"]
    rdma = report.matrix["rdma_latency_us"]
    count = len(report.matrix["rounds"])
    averages = any(m.kind == "latency" and m.role == "verdict" and m.latency is not None
                   and m.latency.median_us is None and m.figure is not None for m in report.results)
    what = ("one-way µs, the median (an average where none was printed or published)" if averages
            else "median one-way µs")
    print(f"\nMatrix ({count} round{'' if count == 1 else 's'}, "
          f"{report.matrix['elapsed_s']:.1f} s): {what}, TCP / RDMA", file=out)
    width = max(len(n) for n in nodes) + 2
    print(" " * width + "".join(n.rjust(16) for n in nodes), file=out)
    for a in nodes:
        cells = []
        for b in nodes:
            if a == b:
                cells.append("-".rjust(16))
                continue
            tcp, r = grid[a].get(b), rdma[a].get(b)
            text = (f"{tcp:.1f}" if tcp is not None else "?") + " / " + (f"{r:.2f}" if r is not None
                                                                         else "-")
            cells.append(text.rjust(16))
        print(a.ljust(width) + "".join(cells), file=out)


KIND = MeasurementKind(
    name="matrix", order=40, pairs=every_pair, run=run, demo=demo, finish=finish, summary=summary,
    options=(NO_REFERENCES, TRANSPORT), reports_as="latency",
    help="every pair, in rounds of disjoint pairs",
    panel=WizardPanel("strixwizard.tui.widgets.measurement:MeasurementPanel",
                      "a panel per link, and the all-pairs grid"),
    wizard_run=1)

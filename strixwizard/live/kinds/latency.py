"""`strixwizard test latency`: the TCP ping-pong (and sockperf/qperf) and perftest
`ib_write_lat` between two nodes, one-way µs with the same statistics."""

from __future__ import annotations

from collections.abc import Iterator

from strixwizard.live.kinds import DemoJob, Job, MeasurementKind, one_pair
from strixwizard.live.kinds.shared import NO_REFERENCES, TRANSPORT
from strixwizard.live.results import Measurement


def run(job: Job) -> Iterator[Measurement]:
    from strixwizard.live.pairs import latency_pair

    for plan in job.plans.values():
        yield from job.in_threads([lambda p=plan: latency_pair(job.hosts, p, job.settings)])  # type: ignore[misc]


def demo(job: DemoJob) -> Iterator[Measurement]:
    from strixwizard.live.demo import demo_results

    yield from demo_results("latency", job.nodes, job.settings.thresholds,
                            job.paths())


KIND = MeasurementKind(
    name="latency", order=10, pairs=one_pair, run=run, demo=demo,
    options=(NO_REFERENCES, TRANSPORT),
    help="TCP ping-pong (plus sockperf/qperf) and perftest ib_write_lat, compared like for "
    "like (one-way µs, same statistics)")

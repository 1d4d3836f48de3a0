"""`strixwizard test bandwidth`: perftest `ib_write_bw` between two nodes, against the link rate."""

from __future__ import annotations

from collections.abc import Iterator

from strixwizard.live.kinds import DemoJob, Job, MeasurementKind, one_pair
from strixwizard.live.results import Measurement


def run(job: Job) -> Iterator[Measurement]:
    from strixwizard.live.pairs import bandwidth_pair

    for plan in job.plans.values():
        yield from job.in_threads([lambda p=plan: bandwidth_pair(job.hosts, p, job.settings)])  # type: ignore[misc]


def demo(job: DemoJob) -> Iterator[Measurement]:
    from strixwizard.live.demo import demo_results

    yield from demo_results("bandwidth", job.nodes, job.settings.thresholds,
                            job.paths())


KIND = MeasurementKind(
    name="bandwidth", order=20, pairs=one_pair, run=run, demo=demo,
    help="ib_write_bw against the link rate")

"""`strixwizard test rccl`: RCCL's `all_reduce_perf` across the nodes with NCCL_DEBUG=INFO,
failing a NET/Socket fallback."""

from __future__ import annotations

from collections.abc import Iterator

from strixwizard.live.kinds import DemoJob, Job, MeasurementKind, WizardPanel, chain
from strixwizard.live.kinds.shared import LAUNCHER
from strixwizard.live.results import Measurement


def run(job: Job) -> Iterator[Measurement]:
    from strixwizard.live.pairs import rccl_run

    yield from job.in_threads([lambda: rccl_run(job.hosts, job.nodes, list(job.plans.values()),
                                                job.addresses, job.settings)])


def demo(job: DemoJob) -> Iterator[Measurement]:
    from strixwizard.live.demo import demo_results

    yield from demo_results("rccl", job.nodes, job.settings.thresholds,
                            job.paths())


KIND = MeasurementKind(
    name="rccl", order=30, pairs=chain, run=run, demo=demo, options=(LAUNCHER,),
    help="all_reduce_perf with NCCL_DEBUG=INFO, failing a NET/Socket fallback",
    panel=WizardPanel("strixwizard.tui.widgets.measurement:MeasurementPanel", "RCCL all-reduce"),
    wizard_run=2)

"""Run a measurement and stream its results as they come.

`run_measurement(...)` is a generator of `Measurement`s: the CLI prints each as it arrives, a
Textual worker can post each to the UI. What runs is the kind's own runner
(`strixwizard.live.kinds`); this module gives it the nodes' sessions under one cancel. Closing
the generator early (Ctrl-C, a cancelled worker) stops every program still running, on every
node.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from strixwizard.discovery import Discovery
from strixwizard.live.hosts import Host
from strixwizard.live.kinds import Job, kind_of
from strixwizard.live.plan import PairPlan
from strixwizard.live.results import Measurement
from strixwizard.live.settings import MatrixTiming, MeasurementSettings
from strixwizard.node.cancel import Cancel


def run_measurement(kind: str, hosts: dict[str, Host], plans: dict[tuple[str, str], PairPlan],
                    nodes: Sequence[str], settings: MeasurementSettings,
                    addresses: dict[str, str] | None = None, timing: MatrixTiming | None = None,
                    cancel: Cancel | None = None, found: Discovery | None = None
                    ) -> Iterator[Measurement]:
    """Stream the results of one measurement. `plans` holds a plan per pair to measure.

    Every program runs under a Cancel of this run (a child of `cancel` when given): closing
    the stream stops this run's programs; `cancel.cancel()` (any thread) stops them at once."""
    registry = Cancel(cancel)
    tracked: dict[str, Host] = {name: registry.scope(host) for name, host in hosts.items()}
    job = Job(tracked, plans, nodes, settings, addresses or {}, registry, timing, found)
    try:
        yield from kind_of(kind).run(job)
    finally:
        registry.cancel()

"""Run the live tests and stream their results as they come.

`run_tests(...)` is a generator of `Measurement`s: the CLI prints each as it
arrives, a Textual worker can post each to the UI. Pairs of one matrix round
run at the same time (no node is in two pairs of a round); a round starts when
the previous one is done. Closing the generator early (Ctrl-C, a cancelled
worker) stops every program still running, on every node.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace

from strixwizard.live.hosts import Host
from strixwizard.live.native import native_latency
from strixwizard.live.perftest import PerftestSettings, rdma_test
from strixwizard.live.plan import PairPlan
from strixwizard.live.rccl import RcclSettings, rccl_test
from strixwizard.live.results import Measurement
from strixwizard.live.schedule import in_rounds, rounds
from strixwizard.live.soak import SoakSettings, tcp_soak
from strixwizard.live.soft_rdma import labelled, side_by_side, soft_perftest, soft_settings
from strixwizard.live.tcp import TcpSettings, qperf_reference, sockperf_reference, tcp_latency
from strixwizard.model import Status
from strixwizard.node.cancel import Cancel
from strixwizard.site import Thresholds

KINDS = ("latency", "bandwidth", "rccl", "matrix", "soak")


@dataclass
class MeasurementSettings:
    thresholds: Thresholds = field(default_factory=Thresholds)
    tcp: TcpSettings = field(default_factory=TcpSettings)
    perftest: PerftestSettings = field(default_factory=PerftestSettings)
    rccl: RcclSettings = field(default_factory=RcclSettings)
    latency_tool: str = "ib_write_lat"
    bandwidth_tool: str = "ib_write_bw"
    tcp_only: bool = False  # `--transport tcp`: the TCP baseline alone, no RDMA asked for
    soak: SoakSettings = field(default_factory=SoakSettings)


def _skip(kind: str, tool: str, plan: PairPlan, why: str) -> Measurement:
    return Measurement(kind, "rdma", tool, plan.pair, Status.SKIP, f"RDMA not measured: {why}",
                       path=plan.tcp_path, unit="µs" if kind == "latency" else "Gb/s")


def latency_pair(hosts: dict[str, Host], plan: PairPlan, settings: MeasurementSettings
                 ) -> Iterator[Measurement]:
    client, server = hosts[plan.a], hosts[plan.b]
    yield tcp_latency(client, server, plan.pair, plan.tcp_address, plan.tcp_path, settings.thresholds,
                      settings.tcp)
    if settings.tcp.references:
        yield sockperf_reference(client, server, plan.pair, plan.tcp_address, plan.tcp_path, settings.tcp)
        yield qperf_reference(client, server, plan.pair, plan.tcp_address, plan.tcp_path, settings.tcp)
    if settings.tcp_only:
        return
    if plan.rdma is None:
        yield _skip("latency", settings.latency_tool, plan, plan.rdma_why_not)
        return
    result = rdma_test(settings.latency_tool, client, server, plan.rdma, settings.thresholds,
                       settings.perftest)
    if result.status is Status.ERROR and "is not installed" in result.summary:
        native = native_latency(client, server, plan.rdma, settings.thresholds, settings.tcp)
        yield replace(native, detail={**native.detail, "instead_of": result.summary})
        return
    if plan.software_rdma:
        yield from side_by_side(result, native_latency(client, server, plan.rdma, settings.thresholds,
                                                       soft_settings(settings.tcp)))
        return
    yield result


def soak_pair(hosts: dict[str, Host], plan: PairPlan, settings: MeasurementSettings
                 ) -> Iterator[Measurement]:
    yield tcp_soak(hosts[plan.a], hosts[plan.b], plan.pair, plan.tcp_address, plan.tcp_path,
                   settings.soak)


def bandwidth_pair(hosts: dict[str, Host], plan: PairPlan, settings: MeasurementSettings
                 ) -> Iterator[Measurement]:
    if plan.rdma is None:
        yield _skip("bandwidth", settings.bandwidth_tool, plan, plan.rdma_why_not)
        return
    perftest = soft_perftest(settings.perftest) if plan.software_rdma else settings.perftest
    result = rdma_test(settings.bandwidth_tool, hosts[plan.a], hosts[plan.b], plan.rdma, settings.thresholds,
                       perftest, plan.link_rate_gbps, pcie_gbps=plan.pcie_gbps)
    yield labelled(result) if plan.software_rdma else result


def rccl_run(hosts: dict[str, Host], nodes: Sequence[str], plans: Sequence[PairPlan],
             addresses: dict[str, str], settings: MeasurementSettings
                 ) -> Iterator[Measurement]:
    ends = [end for plan in plans if plan.rdma for end in plan.rdma]
    unique = {(e.node, e.device, e.port): e for e in ends}
    pair = (nodes[0], nodes[-1])
    launch_hosts = [addresses.get(n, n) for n in nodes]
    yield rccl_test(hosts[nodes[0]], launch_hosts, pair, list(unique.values()), settings.rccl)


def _stream(jobs: Sequence[Callable[[], Iterator[Measurement]]], cancel: Cancel
            ) -> Iterator[Measurement]:
    """Run the jobs in threads; yield their results in the order they arrive."""
    if not jobs:
        return
    inbox: queue.Queue[Measurement | BaseException | None] = queue.Queue()

    def work(job: Callable[[], Iterator[Measurement]]) -> None:
        try:
            for result in job():
                inbox.put(result)
        except BaseException as error:  # surfaced in the consumer, never lost in a thread
            inbox.put(error)
        finally:
            inbox.put(None)

    threads = [threading.Thread(target=work, args=(job,), daemon=True) for job in jobs]
    for thread in threads:
        thread.start()
    done = 0
    while done < len(jobs):
        item = inbox.get()
        if item is None:
            done += 1
        elif isinstance(item, BaseException):
            cancel.cancel()
            raise item
        else:
            yield item


@dataclass
class MatrixTiming:
    rounds: list[list[tuple[str, str]]] = field(default_factory=list)
    round_seconds: list[float] = field(default_factory=list)


def run_tests(kind: str, hosts: dict[str, Host], plans: dict[tuple[str, str], PairPlan],
              nodes: Sequence[str], settings: MeasurementSettings, addresses: dict[str, str] | None = None,
              timing: MatrixTiming | None = None, matrix_bandwidth: bool = True,
              cancel: Cancel | None = None) -> Iterator[Measurement]:
    """Stream the results of one test command. `plans` holds a plan per pair to test.

    Every program runs under a Cancel of this run (a child of `cancel` when given): closing
    the stream stops this run's programs; `cancel.cancel()` (any thread) stops them at once."""
    registry = Cancel(cancel)
    tracked: dict[str, Host] = {name: registry.scope(host) for name, host in hosts.items()}
    try:
        if kind == "rccl":
            yield from _stream([lambda: rccl_run(tracked, nodes, list(plans.values()), addresses or {},
                                                 settings)], registry)
            return
        if kind == "soak":  # pairs in rounds of disjoint pairs, each round bounded by the soak's time
            for group in in_rounds(list(plans), nodes):
                yield from _stream([lambda p=plans[pair]: soak_pair(tracked, p, settings)  # type: ignore[misc]
                                    for pair in group], registry)
            return
        if kind in ("latency", "bandwidth"):
            run = {"latency": latency_pair, "bandwidth": bandwidth_pair}[kind]
            for plan in plans.values():
                yield from _stream([lambda p=plan: run(tracked, p, settings)], registry)  # type: ignore[misc]
            return
        schedule = rounds(nodes)
        if timing is not None:
            timing.rounds = schedule
        for pairs in schedule:
            started = time.monotonic()

            def job(pair: tuple[str, str]) -> Callable[[], Iterator[Measurement]]:
                def run_pair() -> Iterator[Measurement]:
                    plan = plans[pair]
                    yield from latency_pair(tracked, plan, settings)
                    if matrix_bandwidth and plan.rdma is not None and not settings.tcp_only:
                        yield from bandwidth_pair(tracked, plan, settings)
                return run_pair

            yield from _stream([job(pair) for pair in pairs], registry)
            if timing is not None:
                timing.round_seconds.append(time.monotonic() - started)
    finally:
        registry.cancel()

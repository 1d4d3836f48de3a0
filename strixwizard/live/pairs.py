"""What runs between two nodes (or across a group of them) for the kinds that share it: the
latency of a pair (TCP baseline, references, RDMA), its RDMA bandwidth, the RCCL all-reduce
and the soak."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace

from strixwizard.live.hosts import Host
from strixwizard.live.native import native_latency
from strixwizard.live.perftest import rdma_test
from strixwizard.live.plan import PairPlan
from strixwizard.live.rccl import rccl_test
from strixwizard.live.results import Measurement
from strixwizard.live.settings import MeasurementSettings
from strixwizard.live.soak import tcp_soak
from strixwizard.live.soft_rdma import labelled, side_by_side, soft_perftest, soft_settings
from strixwizard.live.tcp import qperf_reference, sockperf_reference, tcp_latency
from strixwizard.model import Status


def _skip(kind: str, unit: str, tool: str, plan: PairPlan, why: str) -> Measurement:
    return Measurement(kind, "rdma", tool, plan.pair, Status.SKIP, f"RDMA not measured: {why}",
                       path=plan.tcp_path, unit=unit)


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
        yield _skip("latency", "µs", settings.latency_tool, plan, plan.rdma_why_not)
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
        yield _skip("bandwidth", "Gb/s", settings.bandwidth_tool, plan, plan.rdma_why_not)
        return
    perftest = soft_perftest(settings.perftest) if plan.software_rdma else settings.perftest
    result = rdma_test(settings.bandwidth_tool, hosts[plan.a], hosts[plan.b], plan.rdma, settings.thresholds,
                       perftest, plan.link_rate_gbps, pcie_gbps=plan.pcie_gbps)
    yield labelled(result) if plan.software_rdma else result


def rccl_run(hosts: dict[str, Host], nodes: Sequence[str], plans: Sequence[PairPlan],
             addresses: dict[str, str], settings: MeasurementSettings) -> Iterator[Measurement]:
    ends = [end for plan in plans if plan.rdma for end in plan.rdma]
    unique = {(e.node, e.device, e.port): e for e in ends}
    pair = (nodes[0], nodes[-1])
    launch_hosts = [addresses.get(n, n) for n in nodes]
    yield rccl_test(hosts[nodes[0]], launch_hosts, pair, list(unique.values()), settings.rccl)

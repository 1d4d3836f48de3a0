"""RCCL across the nodes: `all_reduce_perf` (rccl-tests) launched with mpirun from the first node.

The environment is exact, from the facts: `NCCL_IB_HCA==dev:port` (the `=`
asks for an exact match, a prefix may catch several devices),
`NCCL_IB_GID_INDEX` read from sysfs, `NCCL_SOCKET_IFNAME` the fabric netdev,
and `NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET` so the log says which
transport carried the traffic. A run that used `NET/Socket` fails, whatever
its bandwidth; one that used `NET/IB` on another device than the tested one
fails too, and so does a run of single-rank copies (a binary built without
MPI under `mpirun -np N`), which measures no network at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from strixwizard.live.hosts import NOT_INSTALLED, TIMED_OUT, Host, HostError, Process, stop_all
from strixwizard.live.plan import RdmaEnd
from strixwizard.live.rccl_output import (
    CollectiveTable,
    RcclOutputError,
    TransportEvidence,
    parse_all_reduce,
    parse_transport,
)
from strixwizard.live.results import MEASURED, Measurement
from strixwizard.model import Status

TOOL = "all_reduce_perf"


@dataclass(frozen=True)
class RcclSettings:
    launcher: str = "mpirun"
    binary: str = "all_reduce_perf"
    min_bytes: str = "8"
    max_bytes: str = "128M"
    timeout: float = 300.0


def rccl_argv(hosts: Sequence[str], ends: Sequence[RdmaEnd], settings: RcclSettings) -> list[str]:
    env = {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,NET"}
    if ends:
        devices = sorted({f"{e.device}:{e.port}" for e in ends})
        env["NCCL_IB_HCA"] = "=" + ",".join(devices)
        gids = {e.gid_index for e in ends}
        if len(gids) == 1 and None not in gids:
            env["NCCL_IB_GID_INDEX"] = str(gids.pop())
        netdevs = {e.netdev for e in ends if e.netdev}
        if len(netdevs) == 1:
            env["NCCL_SOCKET_IFNAME"] = "=" + netdevs.pop()
    argv = [settings.launcher, "--allow-run-as-root", "-np", str(len(hosts)),
            "-H", ",".join(f"{h}:1" for h in hosts)]
    for key, value in env.items():
        argv += ["-x", f"{key}={value}"]
    return [*argv, settings.binary, "-b", settings.min_bytes, "-e", settings.max_bytes, "-f", "2", "-g", "1"]


def judge_rccl(table: CollectiveTable | None, evidence: TransportEvidence,
               expected_devices: Sequence[str], expected_ranks: int | None = None
               ) -> tuple[Status, str]:
    """The transport first (a Socket fallback fails however fast), then whether one test
    spanned the nodes (not single-rank copies), then the table."""
    transport = evidence.transport
    speed = ""
    if table is not None and table.max_busbw_gbs is not None:
        speed = f" (busbw up to {table.max_busbw_gbs:.2f} GB/s)"
    if transport == "NET/Socket":
        via = f" over {', '.join(evidence.socket_devices)}" if evidence.socket_devices else ""
        return Status.FAIL, (f"RCCL fell back to NET/Socket (TCP){via}: not RDMA, however fast it "
                             f"looks{speed}; the log shows it by {evidence.how}")
    copies = table.single_rank_copies if table is not None else None
    if copies is not None:
        return Status.FAIL, (f"{copies} single-rank copies of the test ran (each process printed "
                             "its own header as rank 0), not one test across the nodes: the "
                             "binary was built without MPI (rebuild rccl-tests with MPI=1)")
    world = table.world_size if table is not None else None
    if expected_ranks and world is not None and world < expected_ranks:
        return Status.FAIL, (f"the test ran with {world} rank(s), not the {expected_ranks} "
                             "expected: it did not span the nodes")
    if transport is None and evidence.plugin is not None:
        return Status.WARN, (f"RCCL used the net plugin {evidence.plugin!r}, not NET/IB: whether "
                             "it is RDMA on the tested device cannot be told from the log")
    if transport is None and evidence.channels:
        return Status.ERROR, (f"every channel stayed inside one node ({', '.join(evidence.channels)}): "
                              "the log shows no network between the nodes")
    if transport is None:
        return Status.ERROR, ("the log names no transport: was NCCL_DEBUG=INFO in effect? "
                              "(at WARN level RCCL says nothing about it)")
    if expected_devices and not set(expected_devices) & set(evidence.ib_devices):
        used = ", ".join(evidence.ib_devices) or "an unnamed device"
        return Status.FAIL, (f"RCCL used NET/IB on {used}, not on the tested "
                             f"{', '.join(expected_devices)}")
    if table is None or not table.complete:
        return Status.ERROR, "NET/IB was used, but the all_reduce_perf output was cut short"
    if table.wrong_rows:
        sizes = ", ".join(str(r.size_bytes) for r in table.wrong_rows[:3])
        return Status.FAIL, f"NET/IB was used, but results were wrong at sizes {sizes} B"
    if table.errors:
        return Status.FAIL, f"NET/IB was used, but RCCL reported: {table.errors[-1]}"
    on = ", ".join(evidence.ib_devices) or "IB"
    return Status.PASS, f"RCCL used NET/IB on {on}{speed}, average busbw {table.avg_busbw_gbs:.2f} GB/s"


def rccl_measurement(pair: tuple[str, str], output: str, expected_devices: Sequence[str], path: str,
                     source: str = MEASURED, detail: dict[str, object] | None = None,
                     expected_ranks: int | None = None) -> Measurement:
    try:
        table: CollectiveTable | None = parse_all_reduce(output)
    except RcclOutputError:
        table = None
    evidence = parse_transport(output)
    status, summary = judge_rccl(table, evidence, expected_devices, expected_ranks)
    info: dict[str, object] = {
        "transport": evidence.transport, "ib_devices": list(evidence.ib_devices),
        "socket_devices": list(evidence.socket_devices), "channels": list(evidence.channels),
        "evidence": list(evidence.lines[:6]), "networks": list(evidence.networks),
        "plugin": evidence.plugin, "rccl_version": evidence.version, **(detail or {}),
    }
    if table is not None:
        info.update({"layout": table.layout, "rccl_version": table.version or evidence.version,
                     "rows": len(table.rows),
                     "avg_busbw_gbs": table.avg_busbw_gbs, "complete": table.complete,
                     "world_size": table.world_size, "single_rank_copies": table.single_rank_copies,
                     "in_place_us": {str(r.size_bytes): r.in_time_us for r in table.rows}})
    figure = table.max_busbw_gbs if table is not None else None
    return Measurement("rccl", "rdma" if evidence.transport == "NET/IB" else "tcp", TOOL, pair, status,
                       summary, figure=figure, unit="GB/s busbw", threshold="NET/IB on the tested device",
                       path=path, source=source, detail=info)


def rccl_test(head: Host, hosts: Sequence[str], pair: tuple[str, str], ends: Sequence[RdmaEnd],
              settings: RcclSettings = RcclSettings()) -> Measurement:
    argv = rccl_argv(hosts, ends, settings)
    expected = sorted({f"{e.device}:{e.port}" for e in ends})
    path = ", ".join(e.label for e in ends) or "(no RDMA ports known)"
    process: Process | None = None
    try:
        process = head.start(argv, settings.timeout, "all_reduce_perf")
        process.wait(settings.timeout + 10)
        if process.lost:
            return Measurement("rccl", "rdma", TOOL, pair, Status.ERROR,
                               f"{head.name}: connection lost during the RCCL test", path=path)
        if process.status == NOT_INSTALLED:
            return Measurement("rccl", "rdma", TOOL, pair, Status.ERROR,
                               f"{settings.launcher} is not installed on {head.name}", path=path)
        output = process.stdout + "\n" + process.stderr
        detail: dict[str, object] = {"argv": argv, "exit_status": process.status}
        if process.status == TIMED_OUT:
            detail["note"] = f"stopped after {settings.timeout:g} s"
        return rccl_measurement(pair, output, expected, path, detail=detail,
                                expected_ranks=len(hosts))
    except HostError as error:
        return Measurement("rccl", "rdma", TOOL, pair, Status.ERROR, str(error), path=path)
    finally:
        stop_all([process])

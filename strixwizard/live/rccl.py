"""RCCL across the nodes: `all_reduce_perf` (rccl-tests) launched with mpirun from the first node.

The environment is exact, from the facts: `NCCL_IB_HCA==dev:port` (the `=`
asks for an exact match, a prefix may catch several devices),
`NCCL_IB_GID_INDEX` read from sysfs, `NCCL_SOCKET_IFNAME` the fabric netdev,
and `NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET` so the log says which
transport carried the traffic. A run that used `NET/Socket` fails, whatever
its bandwidth; one that used `NET/IB` on another device than the tested one
fails too, and so does a run of single-rank copies (a binary built without
MPI under `mpirun -np N`), which measures no network at all.

Where the binary's `--help` offers `-J, --output_file` (nccl-tests since October 2025,
rccl-tests since its 2.17.9 sync), the figures are read from that JSON document, written on
the head (rank 0 runs there); older builds are read from the text table. The transport is
always read from the log.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from strixwizard.live.hosts import (
    NOT_INSTALLED,
    TIMED_OUT,
    Host,
    HostError,
    Process,
    json_report_path,
    stop_all,
)
from strixwizard.live.plan import RdmaEnd
from strixwizard.live.rccl_output import (
    JSON_FILE_OPTION,
    CollectiveTable,
    RcclOutputError,
    TransportEvidence,
    json_files_written,
    parse_all_reduce,
    parse_collective_json,
    parse_transport,
    supports_json_file,
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
    #: also read the figures from the `-J` JSON document where the binary offers it (its
    #: `--help` says so); the log is read for the transport either way
    json_report: bool = True
    help_timeout: float = 5.0


def rccl_argv(hosts: Sequence[str], ends: Sequence[RdmaEnd], settings: RcclSettings,
              json_path: str | None = None) -> list[str]:
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
    report = [JSON_FILE_OPTION, json_path] if json_path else []
    return [*argv, settings.binary, *report, "-b", settings.min_bytes, "-e", settings.max_bytes,
            "-f", "2", "-g", "1"]


def judge_rccl(table: CollectiveTable | None, evidence: TransportEvidence,
               expected_devices: Sequence[str], expected_ranks: int | None = None
               ) -> tuple[Status, str]:
    """The transport first (a Socket fallback fails however fast), then whether one test
    spanned the nodes (not single-rank copies), then the table."""
    transport = evidence.transport
    speed = ""
    broken = table.non_finite if table is not None else None
    if table is not None and table.max_busbw_gbs is not None and broken is None:
        speed = f" (busbw up to {table.max_busbw_gbs:.2f} GB/s)"
    if transport == "NET/Socket":
        via = f" over {', '.join(evidence.socket_devices)}" if evidence.socket_devices else ""
        why = f"; {evidence.why_not_ib}" if evidence.why_not_ib else ""
        return Status.FAIL, (f"RCCL fell back to NET/Socket (TCP){via}: not RDMA, however fast it "
                             f"looks{speed}; the log shows it by {evidence.how}{why}")
    if broken is not None:
        return Status.ERROR, (f"all_reduce_perf printed a figure that is not a finite number "
                              f"({broken}): no verdict on this run, and no figure of it stored")
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
    if expected_devices and not evidence.ib_devices:
        return Status.ERROR, ("NET/IB was used, but the log names no RDMA device (no `NET/IB : "
                              "Using` or `NET/IB: [0] dev:uverbsN:port` line): whether it was the "
                              f"tested {', '.join(expected_devices)} cannot be told "
                              "(NCCL_DEBUG_SUBSYS must include INIT and NET)")
    if expected_devices and not set(expected_devices) & set(evidence.ib_devices):
        return Status.FAIL, (f"RCCL used NET/IB on {', '.join(evidence.ib_devices)}, not on the "
                             f"tested {', '.join(expected_devices)}")
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
                     expected_ranks: int | None = None,
                     from_json: CollectiveTable | None = None) -> Measurement:
    """The verdict on one run; `from_json` is the table read from the `-J` document, which
    stands for the text table when given, unless the text shows single-rank copies (each
    copy writes its own document, which alone looks like a one-rank run)."""
    try:
        text: CollectiveTable | None = parse_all_reduce(output)
    except RcclOutputError:
        text = None
    copies = text is not None and text.single_rank_copies is not None
    table = from_json if from_json is not None and not copies else text
    evidence = parse_transport(output)
    status, summary = judge_rccl(table, evidence, expected_devices, expected_ranks)
    info: dict[str, object] = {
        "transport": evidence.transport, "ib_devices": list(evidence.ib_devices),
        "socket_devices": list(evidence.socket_devices), "channels": list(evidence.channels),
        "evidence": list(evidence.lines[:6]), "networks": list(evidence.networks),
        "plugin": evidence.plugin, "rccl_version": evidence.version, **(detail or {}),
    }
    if table is not None and table.non_finite is not None:
        info.update({"layout": table.layout, "rows": len(table.rows), "complete": table.complete})
        table = None  # its figures are not kept: nothing non-finite in a document or the history
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


def _json_report_path(head: Host, settings: RcclSettings) -> str | None:
    """The `-J` document's path, or None when the head's binary is older than the option."""
    if not settings.json_report:
        return None
    return json_report_path(head, settings.binary, settings.help_timeout, supports_json_file)


def _json_document(head: Host, output: str, asked: str) -> CollectiveTable | None:
    """The `-J` document read back from the head (then every file the run wrote removed);
    None when it was not written or cannot be read (the text table stands)."""
    written = json_files_written(output, asked) or (asked,)
    reader = head.start(["cat", written[0]], 10, f"{JSON_FILE_OPTION} report")
    try:
        reader.wait(10)
        body = reader.stdout if reader.status == 0 else ""
    finally:
        reader.stop()
        head.start(["rm", "-f", "--", asked, *written], 10,
                   f"remove the {JSON_FILE_OPTION} report").wait(10)
    try:
        return parse_collective_json(body)
    except RcclOutputError:
        return None


def rccl_test(head: Host, hosts: Sequence[str], pair: tuple[str, str], ends: Sequence[RdmaEnd],
              settings: RcclSettings = RcclSettings()) -> Measurement:
    json_path = _json_report_path(head, settings)
    argv = rccl_argv(hosts, ends, settings, json_path)
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
        from_json = _json_document(head, output, json_path) if json_path is not None else None
        if from_json is not None:
            detail["figures_from"] = f"{settings.binary} {JSON_FILE_OPTION}"
        return rccl_measurement(pair, output, expected, path, detail=detail,
                                expected_ranks=len(hosts), from_json=from_json)
    except HostError as error:
        return Measurement("rccl", "rdma", TOOL, pair, Status.ERROR, str(error), path=path)
    finally:
        stop_all([process])

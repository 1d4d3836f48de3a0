"""perftest between two nodes: the server on B, the client on A, both supervised.

The argv is built from the link's facts (`plan.RdmaEnd`): `-d DEVICE -i PORT`,
`-x GID` for RoCE (the RoCE v2 IPv4 GID read from sysfs), `-m MTU` from the
port's active MTU. The server is started first and the client only once the
server says `Waiting for client to connect`. A server that cannot listen
(`Couldn't listen to port`) is retried on the next TCP port. The client's
table is parsed (see `perftest_output`); a run cut short is reported as such,
never turned into a figure.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from strixwizard.live.hosts import (
    NOT_INSTALLED,
    TIMED_OUT,
    Host,
    HostError,
    Process,
    json_report_path,
    stop_all,
)
from strixwizard.live.perftest_output import (
    JSON_OPTION,
    PerftestParseError,
    PerftestTable,
    bandwidth_gbps,
    latency_stats,
    parse_perftest,
    parse_perftest_json,
    supports_json,
)
from strixwizard.live.plan import RdmaEnd
from strixwizard.live.results import MEASURED, Measurement
from strixwizard.live.verdict import bandwidth_band, judge_bandwidth, judge_rdma_latency
from strixwizard.model import Status
from strixwizard.site import Thresholds

LATENCY_TOOLS = ("ib_write_lat", "ib_send_lat")
BANDWIDTH_TOOLS = ("ib_write_bw", "ib_send_bw")
READY = "Waiting for client to connect"
#: perftest's stdout is a pipe here, so stdio buffers its READY banner until it exits
LINE_BUFFERED = ("stdbuf", "-oL")
PORT_BUSY = ("Couldn't listen to port", "Address already in use", "Couldn't bind")


@dataclass(frozen=True)
class PerftestSettings:
    size: int = 64  # bytes, the same as the TCP baseline's
    iterations: int = 1000  # latency: -n
    bw_size: int = 65536
    bw_iterations: int = 5000
    tcp_port: int = 18515
    port_attempts: int = 3
    start_timeout: float = 10.0
    run_timeout: float = 60.0
    #: also read the figures from `--out_json` where the client's perftest offers it (its
    #: `--help` says so); the text table is read and checked either way
    json_report: bool = True
    help_timeout: float = 3.0


class PerftestError(Exception):
    """No figure: the reason, as the user should read it."""


@dataclass(frozen=True)
class PerftestRun:
    table: PerftestTable
    server_argv: tuple[str, ...]
    client_argv: tuple[str, ...]
    notes: tuple[str, ...]


def perftest_argv(tool: str, end: RdmaEnd, settings: PerftestSettings, port: int,
                  server_address: str | None = None) -> list[str]:
    """The argv for one side; the client is the side given `server_address`."""
    bandwidth = tool in BANDWIDTH_TOOLS
    argv = [tool, "-d", end.device, "-i", str(end.port),
            "-s", str(settings.bw_size if bandwidth else settings.size),
            "-n", str(settings.bw_iterations if bandwidth else settings.iterations),
            "-p", str(port), "-F"]
    if end.gid_index is not None:
        argv += ["-x", str(end.gid_index)]
    if end.mtu:
        argv += ["-m", str(end.mtu)]
    if bandwidth:
        argv.append("--report_gbits")
    if server_address:
        argv.append(server_address)
    return argv


def _tail(process: Process) -> str:
    lines = [line.strip() for line in (process.stdout + "\n" + process.stderr).splitlines() if line.strip()]
    return lines[-1] if lines else "no output"


def _lost(process: Process) -> PerftestError:
    return PerftestError(f"{process.host}: connection lost while {process.label} ran "
                         "(node down or SSH dropped)")


def _start_server(tool: str, server: Host, end: RdmaEnd, settings: PerftestSettings
                  ) -> tuple[Process, int, list[str], list[str]]:
    notes: list[str] = []
    for attempt in range(settings.port_attempts):
        port = settings.tcp_port + attempt
        argv = [*LINE_BUFFERED, *perftest_argv(tool, end, settings, port)]
        process = server.start(argv, settings.start_timeout + settings.run_timeout + 10, f"{tool} server")
        if process.wait_for(lambda out: READY in out, settings.start_timeout):
            return process, port, argv, notes
        process.stop()
        if process.lost:
            raise _lost(process)
        if process.status == NOT_INSTALLED:
            raise PerftestError(f"{tool} is not installed on {server.name} (package perftest)")
        output = process.stdout + process.stderr
        if any(mark in output for mark in PORT_BUSY):
            notes.append(f"TCP port {port} on {server.name} was in use")
            continue
        if not process.ended:
            raise PerftestError(f"{server.name}: {tool} server did not get ready within "
                                f"{settings.start_timeout:g} s ({_tail(process)})")
        raise PerftestError(f"{server.name}: {tool} server failed: {_tail(process)}")
    raise PerftestError(f"{server.name}: TCP ports {settings.tcp_port}-"
                        f"{settings.tcp_port + settings.port_attempts - 1} are all in use")


def _json_report_path(tool: str, client: Host, settings: PerftestSettings) -> str | None:
    """The client's `--out_json` report path, or None when its perftest is older than the option."""
    if not settings.json_report:
        return None
    return json_report_path(client, tool, settings.help_timeout, supports_json)


def _json_table(client: Host, path: str, text: PerftestTable) -> PerftestTable | None:
    """The `--out_json` report read back (then removed), with the text table's warnings and
    parameters; None when it cannot be read or parsed (the text table stands)."""
    reader = client.start(["cat", path], 10, "perftest --out_json report")
    try:
        reader.wait(10)
        body = reader.stdout if reader.status == 0 else ""
    finally:
        reader.stop()
        client.start(["rm", "-f", path], 10, "remove the perftest report").wait(10)
    try:
        table = parse_perftest_json(body, report_gbits=text.unit("BW average") == "Gb/sec"
                                    if text.is_bandwidth else None)
    except PerftestParseError:
        return None
    return replace(table, test=table.test or text.test, params={**text.params, **table.params},
                   warnings=text.warnings)


def run_perftest(tool: str, client: Host, server: Host, client_end: RdmaEnd, server_end: RdmaEnd,
                 settings: PerftestSettings = PerftestSettings()) -> PerftestRun:
    """Run one perftest pair to its end and parse the client's table; raises PerftestError."""
    server_proc: Process | None = None
    client_proc: Process | None = None
    address = server_end.address
    if not address:
        raise PerftestError(f"{server_end.node}: no IPv4 address on {server_end.netdev} for perftest "
                            "to exchange its connection data")
    try:
        server_proc, port, server_argv, notes = _start_server(tool, server, server_end, settings)
        json_path = _json_report_path(tool, client, settings)
        client_argv = perftest_argv(tool, client_end, settings, port, address)
        if json_path is not None:  # before the server's address, which stays last
            client_argv[-1:-1] = [JSON_OPTION, f"--out_json_file={json_path}"]
        client_proc = client.start(client_argv, settings.run_timeout, f"{tool} client")
        deadline = time.monotonic() + settings.run_timeout + 5
        while not client_proc.wait(0.1):
            if server_proc.lost:
                raise _lost(server_proc)
            if time.monotonic() > deadline:
                break
        if client_proc.lost:
            raise _lost(client_proc)
        if client_proc.status == NOT_INSTALLED:
            raise PerftestError(f"{tool} is not installed on {client.name} (package perftest)")
        server_proc.wait(3)
        if server_proc.lost:
            raise _lost(server_proc)
        try:
            table = parse_perftest(client_proc.stdout)
        except PerftestParseError as error:
            raise PerftestError(f"{client.name}: {tool} gave no result: {error}; "
                                f"last output: {_tail(client_proc)}") from None
        if client_proc.status == TIMED_OUT or not client_proc.ended:
            raise PerftestError(f"{client.name}: {tool} did not finish within {settings.run_timeout:g} s"
                                + ("; output cut short" if not table.complete else ""))
        if table.refused_rows:
            raise PerftestError(f"{client.name}: {tool} printed a row with more cells than its "
                                f"header has columns: {table.refused_rows[0]!r}; not read (the "
                                "figures would sit under the wrong names)")
        if not table.complete or not table.rows:
            raise PerftestError(f"{client.name}: {tool} output cut short: "
                                + (table.cut or "cut before the first row of the table")
                                + (f" (exit status {client_proc.status})" if client_proc.status else ""))
        if json_path is not None:
            from_json = _json_table(client, json_path, table)
            if from_json is not None:
                table = from_json
                notes.append(f"figures read from {tool} {JSON_OPTION}")
        return PerftestRun(table, tuple(server_argv), tuple(client_argv), tuple(notes))
    finally:
        stop_all([client_proc, server_proc])


def _path(client_end: RdmaEnd, server_end: RdmaEnd) -> str:
    return f"{client_end.label} -> {server_end.label}"


def latency_measurement(tool: str, pair: tuple[str, str], table: PerftestTable, path: str,
                        thresholds: Thresholds, source: str = MEASURED,
                        detail: dict[str, object] | None = None, size: int | None = None) -> Measurement:
    """Judge a latency table's row (the one of `size`, else the last)."""
    row = next((r for r in table.rows if size is not None and r.get("#bytes") == size), table.rows[-1])
    stats = latency_stats(table, row)
    status, summary = judge_rdma_latency(stats, thresholds)
    info: dict[str, object] = {"size_bytes": int(row["#bytes"]), "columns": [c.name for c in table.columns],
                               "warnings": list(table.warnings), **(detail or {})}
    return Measurement("latency", "rdma", tool, pair, status, summary, figure=stats.median_us, unit="µs",
                       threshold=f"≤ {thresholds.rdma_latency_us:g} µs one-way", latency=stats,
                       path=path, source=source, detail=info)


def bandwidth_measurement(tool: str, pair: tuple[str, str], table: PerftestTable, path: str,
                          link_rate_gbps: float | None, thresholds: Thresholds, source: str = MEASURED,
                          detail: dict[str, object] | None = None,
                          pcie_gbps: float | None = None) -> Measurement:
    row = max(table.rows, key=lambda r: r.get("#bytes", 0))
    gbps = bandwidth_gbps(table, row)
    status, summary = judge_bandwidth(gbps, link_rate_gbps, thresholds, pcie_gbps)
    band = bandwidth_band(gbps, link_rate_gbps, thresholds, pcie_gbps)
    info: dict[str, object] = {"size_bytes": int(row["#bytes"]), "unit_in_output": table.unit("BW average"),
                               "peak_gbps": bandwidth_gbps(table, row, "BW peak"),
                               "warnings": list(table.warnings), **(detail or {})}
    if band is not None:
        info["band"] = band.name
        info["ceiling_gbps"] = round(band.ceiling_gbps, 2)
        if pcie_gbps:
            info["pcie_gbps"] = round(pcie_gbps, 2)
    return Measurement("bandwidth", "rdma", tool, pair, status, summary, figure=gbps, unit="Gb/s",
                       threshold=f"≥ {thresholds.bandwidth_fraction:.0%} of the link rate",
                       bandwidth_gbps=gbps, link_rate_gbps=link_rate_gbps, path=path, source=source,
                       detail=info)


def rdma_test(tool: str, client: Host, server: Host, ends: tuple[RdmaEnd, RdmaEnd],
              thresholds: Thresholds, settings: PerftestSettings = PerftestSettings(),
              link_rate_gbps: float | None = None, pcie_gbps: float | None = None) -> Measurement:
    """One perftest measurement between the pair's ends, judged; never raises for a node's fault."""
    client_end, server_end = ends
    pair = (client_end.node, server_end.node)
    path = _path(client_end, server_end)
    kind = "bandwidth" if tool in BANDWIDTH_TOOLS else "latency"
    try:
        run = run_perftest(tool, client, server, client_end, server_end, settings)
    except (PerftestError, HostError) as error:
        return Measurement(kind, "rdma", tool, pair, Status.ERROR, str(error), path=path,
                           unit="Gb/s" if kind == "bandwidth" else "µs")
    detail: dict[str, object] = {"client_argv": list(run.client_argv), "server_argv": list(run.server_argv)}
    if run.notes:
        detail["notes"] = list(run.notes)
    if kind == "bandwidth":
        return bandwidth_measurement(tool, pair, run.table, path, link_rate_gbps, thresholds, detail=detail,
                                     pcie_gbps=pcie_gbps)
    return latency_measurement(tool, pair, run.table, path, thresholds, detail=detail, size=settings.size)

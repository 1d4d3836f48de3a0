"""The TCP baseline between two nodes: our ping-pong, and sockperf/qperf as references.

The server runs on node B (listening on B's fabric address), the client on
node A, both supervised (see `hosts`). Our ping-pong is the judged figure;
`sockperf ping-pong` and `qperf tcp_lat` are measured the same way (same
message size, one-way µs) when installed on both nodes, as references.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from pathlib import Path

from strixwizard.live.hosts import NOT_INSTALLED, Host, HostError, Process, output_of, stop_all
from strixwizard.live.results import LatencyStats, Measurement, stats_from_samples
from strixwizard.live.tcp_tools_output import ToolOutputError, parse_qperf_latency, parse_sockperf
from strixwizard.live.verdict import judge_tcp_latency
from strixwizard.model import Status
from strixwizard.onnode import pingpong
from strixwizard.site import Thresholds

PINGPONG_SOURCE = Path(pingpong.__file__).read_text(encoding="utf-8")
TOOL = "strixwizard tcp ping-pong"


@dataclass(frozen=True)
class TcpSettings:
    size: int = 64  # bytes per message, the same for every tool
    round_trips: int = 20000
    warmup: int = 1000
    seconds: float = 5.0  # wall-clock bound of the timed loop
    port: int = 0  # 0: the server's kernel picks a free port
    start_timeout: float = 10.0  # for a server to come up
    references: bool = True  # sockperf / qperf when installed
    reference_seconds: float = 3.0


class TcpRunError(Exception):
    pass


def _lost(process: Process) -> str:
    return f"{process.host}: connection lost while {process.label} ran (node down or SSH dropped)"


def _start_server(server: Host, address: str, port: int, settings: TcpSettings
                  ) -> tuple[Process, int, str]:
    """Start our server; a busy fixed port is reported, then an ephemeral one is used."""
    note = ""
    limit = settings.start_timeout + settings.seconds + 30
    for attempt_port in (port, 0) if port else (0,):
        process = server.start([server.python, "-c", PINGPONG_SOURCE, "server", address,
                                str(attempt_port), f"{limit:g}"], limit + 5, "tcp ping-pong server")
        process.wait_for(lambda out: '"event"' in out, settings.start_timeout)
        events = output_of(process.stdout, "{")
        listening = next((e for e in events if e.get("event") == "listening"), None)
        if listening is not None:
            return process, int(str(listening["port"])), note
        process.stop()
        error = next((e for e in events if e.get("event") == "error"), None)
        if error is not None and error.get("port_in_use") and attempt_port:
            note = f"port {attempt_port} on {server.name} was in use; used a free port instead"
            continue
        if process.lost:
            raise TcpRunError(_lost(process))
        reason = str(error["error"]) if error else _why_silent(process)
        raise TcpRunError(f"{server.name}: the TCP server did not start: {reason}")
    raise TcpRunError(f"{server.name}: the TCP server did not start")


def _why_silent(process: Process) -> str:
    if process.status == NOT_INSTALLED:
        return "python3 is not installed"
    tail = (process.stderr.strip().splitlines() or ["no output"])[-1]
    return f"exit status {process.status}: {tail}" if process.ended else f"no answer ({tail})"


def _run_client(client: Host, server_proc: Process, argv: list[str], limit: float, label: str
                ) -> Process:
    """Run a client to its end, watching the server: if the server's node dies, stop at once."""
    process = client.start(argv, limit, label)
    deadline = time.monotonic() + limit + 5
    while not process.wait(0.1):
        if server_proc.lost:
            process.stop()
            raise TcpRunError(_lost(server_proc))
        if time.monotonic() > deadline:
            process.stop()
            raise TcpRunError(f"{client.name}: {label} did not finish within {limit:g} s")
    if process.lost:
        raise TcpRunError(_lost(process))
    return process


def pingpong_stats(client: Host, server: Host, address: str, settings: TcpSettings
                   ) -> tuple[LatencyStats, dict[str, object]]:
    """Run our ping-pong; one-way statistics in µs, and details for the report."""
    server_proc: Process | None = None
    client_proc: Process | None = None
    try:
        server_proc, port, note = _start_server(server, address, settings.port, settings)
        argv = [client.python, "-c", PINGPONG_SOURCE, "client", address, str(port), str(settings.size),
                str(settings.round_trips), str(settings.warmup), f"{settings.seconds:g}"]
        client_proc = _run_client(client, server_proc, argv, settings.seconds + 20, "tcp ping-pong client")
        events = output_of(client_proc.stdout, "{")
        result = next((e for e in events if e.get("event") == "result"), None)
        if result is None:
            error = next((e for e in events if e.get("event") == "error"), None)
            if error is not None and server_proc.wait(2) and server_proc.lost:
                raise TcpRunError(f"{error['error']}; {_lost(server_proc)}")
            reason = str(error["error"]) if error else f"no result ({_why_silent(client_proc)})"
            raise TcpRunError(f"{client.name}: {reason}")
        rtt = result.get("rtt_ns")
        if not isinstance(rtt, list) or not rtt:
            raise TcpRunError(f"{client.name}: the client measured no round trip")
        stats = stats_from_samples(ns / 2000.0 for ns in rtt)
        detail: dict[str, object] = {"size_bytes": settings.size, "port": port,
                                     "round_trips": len(rtt), "warmup": settings.warmup,
                                     "stopped_early_by_time_limit": bool(result.get("stopped_early"))}
        if note:
            detail["note"] = note
        return stats, detail
    finally:
        stop_all([client_proc, server_proc])


def tcp_latency(client: Host, server: Host, pair: tuple[str, str], address: str, path: str,
                thresholds: Thresholds, settings: TcpSettings = TcpSettings()) -> Measurement:
    """Our ping-pong between the nodes, judged against `tcp_latency_us`."""
    try:
        stats, detail = pingpong_stats(client, server, address, settings)
    except (TcpRunError, HostError) as error:
        return Measurement("latency", "tcp", TOOL, pair, Status.ERROR, str(error), path=path,
                           unit="µs", threshold=f"≤ {thresholds.tcp_latency_us:g} µs one-way")
    status, summary = judge_tcp_latency(stats, thresholds)
    return Measurement("latency", "tcp", TOOL, pair, status, summary, figure=stats.median_us, unit="µs",
                       threshold=f"≤ {thresholds.tcp_latency_us:g} µs one-way", latency=stats,
                       path=path, detail=detail)


def _reference(tool: str, pair: tuple[str, str], path: str, stats: LatencyStats | None,
               summary: str, detail: dict[str, object] | None = None) -> Measurement:
    return Measurement("latency", "tcp", tool, pair, None, summary, role="reference",
                       figure=stats.median_us if stats and stats.median_us is not None
                       else (stats.avg_us if stats else None),
                       unit="µs", latency=stats, path=path, detail=detail or {})


def _free_port() -> int:
    return random.randint(20000, 60000)


def sockperf_reference(client: Host, server: Host, pair: tuple[str, str], address: str, path: str,
                       settings: TcpSettings) -> Measurement:
    """`sockperf ping-pong --tcp` with our message size; one-way µs as sockperf reports it."""
    tool = "sockperf ping-pong"
    server_proc = client_proc = None
    try:
        for _ in range(3):
            port = _free_port()
            server_proc = server.start(["sockperf", "server", "-i", address, "-p", str(port), "--tcp"],
                                       settings.reference_seconds + 30, "sockperf server")
            if server_proc.wait_for(lambda out: "PORT =" in out, settings.start_timeout):
                break
            server_proc.stop()
            if server_proc.status == NOT_INSTALLED:
                return _reference(tool, pair, path, None, f"sockperf is not installed on {server.name}")
        else:
            return _reference(tool, pair, path, None, f"sockperf server did not start on {server.name}")
        time.sleep(0.05)
        client_proc = _run_client(
            client, server_proc,
            ["sockperf", "ping-pong", "-i", address, "-p", str(port), "--tcp",
             "-t", f"{max(1, round(settings.reference_seconds))}", "-m", str(max(14, settings.size))],
            settings.reference_seconds + 20, "sockperf ping-pong")
        if client_proc.status == NOT_INSTALLED:
            return _reference(tool, pair, path, None, f"sockperf is not installed on {client.name}")
        stats = parse_sockperf(client_proc.stdout + client_proc.stderr)
        return _reference(tool, pair, path, stats,
                          f"sockperf: median one-way {stats.median_us:.2f} µs (avg {stats.avg_us:.2f})",
                          {"size_bytes": max(14, settings.size)})
    except (TcpRunError, HostError, ToolOutputError) as error:
        return _reference(tool, pair, path, None, f"sockperf gave no figure: {error}")
    finally:
        stop_all([client_proc, server_proc])


def qperf_reference(client: Host, server: Host, pair: tuple[str, str], address: str, path: str,
                    settings: TcpSettings) -> Measurement:
    """`qperf ADDR tcp_lat`: qperf reports one average one-way latency, no percentiles."""
    tool = "qperf tcp_lat"
    server_proc = client_proc = None
    try:
        port = _free_port()
        server_proc = server.start(["qperf", "--listen_port", str(port)],
                                   settings.reference_seconds + 30, "qperf server")
        if server_proc.wait(0.3) and server_proc.status == NOT_INSTALLED:
            return _reference(tool, pair, path, None, f"qperf is not installed on {server.name}")
        argv = ["qperf", "--listen_port", str(port), address, "-t",
                f"{max(1, round(settings.reference_seconds))}", "-m", str(settings.size), "tcp_lat"]
        for _ in range(10):  # qperf's server prints nothing when ready: retry the connection
            client_proc = _run_client(client, server_proc, argv, settings.reference_seconds + 20,
                                      "qperf tcp_lat")
            if client_proc.status == NOT_INSTALLED:
                return _reference(tool, pair, path, None, f"qperf is not installed on {client.name}")
            if "failed to connect" not in client_proc.stdout + client_proc.stderr:
                break
            time.sleep(0.2)
        assert client_proc is not None
        value = parse_qperf_latency(client_proc.stdout + client_proc.stderr)
        stats = LatencyStats(None, None, value, None, None, None)
        return _reference(tool, pair, path, stats, f"qperf: average one-way {value:.2f} µs",
                          {"size_bytes": settings.size})
    except (TcpRunError, HostError, ToolOutputError) as error:
        return _reference(tool, pair, path, None, f"qperf gave no figure: {error}")
    finally:
        stop_all([client_proc, server_proc])

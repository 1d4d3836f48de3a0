"""Run the pyverbs ping-pong (`verbs_pingpong.py`) between two nodes, like the TCP one."""

from __future__ import annotations

from pathlib import Path

from strixwizard.live.hosts import Host, HostError, Process, output_of, stop_all
from strixwizard.live.plan import RdmaEnd
from strixwizard.live.results import Measurement, stats_from_samples
from strixwizard.live.tcp import TcpSettings
from strixwizard.live.verdict import judge_rdma_latency
from strixwizard.model import Status
from strixwizard.onnode import verbs_pingpong
from strixwizard.site import Thresholds

VERBS_SOURCE = Path(verbs_pingpong.__file__).read_text(encoding="utf-8")
TOOL = "strixwizard verbs ping-pong"


def _argv(host: Host, role: str, end: RdmaEnd, address: str, port: int, s: TcpSettings,
          pattern: str) -> list[str]:
    return [host.python, "-c", VERBS_SOURCE, role, end.device, str(end.port), str(end.gid_index or 0),
            address, str(port), str(s.size), str(min(s.round_trips, 10000)), str(s.warmup),
            f"{s.seconds:g}", pattern]


def _error(process: Process) -> str | None:
    events = output_of(process.stdout, "{")
    error = next((e for e in events if e.get("event") == "error"), None)
    return f"{process.host}: {error['error']}" if error else None


def verbs_run(client: Host, server: Host, ends: tuple[RdmaEnd, RdmaEnd], settings: TcpSettings,
              pattern: str = "pingpong") -> list[int] | str:
    """The client's timed round trips (ping-pong) or whole all-reduces, in ns; else why not."""
    client_end, server_end = ends
    address = server_end.address or ""
    what = "ping-pong" if pattern == "pingpong" else "all-reduce"
    server_proc = client_proc = None
    try:
        server_proc = server.start(_argv(server, "server", server_end, address, 0, settings, pattern),
                                   settings.seconds + 30, f"verbs {what} server")
        server_proc.wait_for(lambda out: '"event"' in out, settings.start_timeout)
        listening = next((e for e in output_of(server_proc.stdout, "{") if e.get("event") == "listening"),
                         None)
        if listening is None:
            return _error(server_proc) or f"{server.name}: the verbs {what} server did not start"
        port = int(str(listening["port"]))
        client_proc = client.start(_argv(client, "client", client_end, address, port, settings, pattern),
                                   settings.seconds + 30, f"verbs {what} client")
        client_proc.wait(settings.seconds + 35)
        result = next((e for e in output_of(client_proc.stdout, "{") if e.get("event") == "result"), None)
        rtt = result.get("rtt_ns") if result else None
        if not isinstance(rtt, list) or not rtt:
            return _error(client_proc) or f"{client.name}: the verbs {what} measured nothing"
        return [int(ns) for ns in rtt]
    except HostError as error:
        return str(error)
    finally:
        stop_all([client_proc, server_proc])


def native_latency(client: Host, server: Host, ends: tuple[RdmaEnd, RdmaEnd], thresholds: Thresholds,
                   settings: TcpSettings | None = None) -> Measurement:
    settings = settings or TcpSettings()
    client_end, server_end = ends
    pair = (client_end.node, server_end.node)
    path = f"{client_end.label} -> {server_end.label}"
    threshold = f"≤ {thresholds.rdma_latency_us:g} µs one-way"
    rtt = verbs_run(client, server, ends, settings)
    if isinstance(rtt, str):
        return Measurement("latency", "rdma", TOOL, pair, Status.ERROR, rtt, path=path, unit="µs",
                           threshold=threshold)
    stats = stats_from_samples(ns / 2000.0 for ns in rtt)
    status, summary = judge_rdma_latency(stats, thresholds)
    return Measurement("latency", "rdma", TOOL, pair, status, summary, figure=stats.median_us,
                       unit="µs", threshold=threshold, latency=stats, path=path,
                       detail={"size_bytes": settings.size, "round_trips": len(rtt)})

"""`strixwizard test soak`: the duplex soak between two nodes (strixwizard/onnode/soak.py).

The server runs on node B (on B's fabric address, a free port), the client on node A, both
supervised like the TCP ping-pong; both send and receive at once, and each reports what it
received. Verdict: FAIL when any block arrived corrupted, dropped or duplicated (bytes that
reached the application were not the bytes sent); PASS otherwise. The counters read around
every live test turn a passing soak into a WARN when error counters grew meanwhile (frames
damaged and dropped below TCP, but nothing wrong reached the application).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from strixwizard.live.hosts import Host, HostError, Process, output_of, stop_all
from strixwizard.live.results import Measurement
from strixwizard.model import Status
from strixwizard.onnode import soak

SOAK_SOURCE = Path(soak.__file__).read_text(encoding="utf-8")
TOOL = "strixwizard soak"
KIND = "soak"


@dataclass(frozen=True)
class SoakSettings:
    bytes: int = 1 << 30  # per direction
    seconds: float = 30.0
    start_timeout: float = 10.0


class SoakError(Exception):
    pass


def _start_server(server: Host, address: str, settings: SoakSettings) -> tuple[Process, int]:
    limit = settings.start_timeout + settings.seconds + 30
    process = server.start([server.python, "-c", SOAK_SOURCE, "server", address, "0",
                            str(settings.bytes), f"{settings.seconds:g}"], limit, "soak server")
    process.wait_for(lambda out: '"event"' in out, settings.start_timeout)
    listening = next((e for e in output_of(process.stdout, "{") if e.get("event") == "listening"),
                     None)
    if listening is None:
        process.stop()
        tail = (process.stderr.strip().splitlines() or ["no output"])[-1]
        raise SoakError(f"{server.name}: the soak server did not start: {tail}")
    return process, int(str(listening["port"]))


def _result(process: Process, who: str) -> dict[str, object]:
    found = next((e for e in output_of(process.stdout, "{") if e.get("event") == "result"), None)
    if found is None:
        tail = (process.stderr.strip().splitlines() or ["no output"])[-1]
        raise SoakError(f"{who}: the soak gave no result: {tail}")
    return found


def _count(result: dict[str, object], key: str) -> int:
    value = result.get(key)
    return int(value) if isinstance(value, int) else 0


def run_soak(client: Host, server: Host, address: str, settings: SoakSettings
             ) -> tuple[dict[str, object], dict[str, object]]:
    """Both ends' results: (what A received from B, what B received from A)."""
    server_proc: Process | None = None
    client_proc: Process | None = None
    try:
        server_proc, port = _start_server(server, address, settings)
        limit = settings.seconds + 30
        client_proc = client.start([client.python, "-c", SOAK_SOURCE, "client", address, str(port),
                                    str(settings.bytes), f"{settings.seconds:g}"], limit,
                                   "soak client")
        deadline = time.monotonic() + limit + 5
        while not (client_proc.wait(0.2) and server_proc.wait(0.2)):
            if client_proc.lost or server_proc.lost or time.monotonic() > deadline:
                raise SoakError("the soak did not finish: a node went down, SSH dropped, or it "
                                f"ran past {limit:g} s")
        return _result(client_proc, client.name), _result(server_proc, server.name)
    finally:
        stop_all([client_proc, server_proc])


def _direction(result: dict[str, object], sender: str, receiver: str) -> dict[str, object]:
    return {"from": sender, "to": receiver, "bytes": _count(result, "received_bytes"),
            "blocks": _count(result, "blocks"), "corrupted": _count(result, "corrupted"),
            "dropped": _count(result, "dropped"), "duplicated": _count(result, "duplicated"),
            "faults": list(result.get("faults") or [])}  # type: ignore[call-overload]


def tcp_soak(client: Host, server: Host, pair: tuple[str, str], address: str, path: str,
             settings: SoakSettings) -> Measurement:
    try:
        at_a, at_b = run_soak(client, server, address, settings)
    except (SoakError, HostError) as error:
        return Measurement(KIND, "tcp", TOOL, pair, Status.ERROR, str(error), path=path)
    a, b = pair
    directions = [_direction(at_b, a, b), _direction(at_a, b, a)]
    took = float(str(at_a.get("seconds") or 0)) or settings.seconds
    moved = sum(int(str(d["bytes"])) for d in directions)
    gbps = moved * 8 / took / 1e9
    bad = [d for d in directions if d["corrupted"] or d["dropped"] or d["duplicated"]]
    text = "; ".join(f"{d['from']} -> {d['to']}: {int(str(d['bytes'])) / 2**20:.0f} MiB, "
                     f"{d['corrupted']} corrupted, {d['dropped']} dropped, "
                     f"{d['duplicated']} duplicated" for d in directions)
    detail: dict[str, object] = {"directions": directions, "seconds": took}
    if bad:
        first = next((f for d in bad for f in d["faults"]), "")  # type: ignore[attr-defined]
        return Measurement(KIND, "tcp", TOOL, pair, Status.FAIL,
                           f"bytes arrived wrong: {text}" + (f"; first: {first}" if first else ""),
                           figure=gbps, unit="Gb/s", threshold="no corrupted, dropped or "
                           "duplicated block", path=path, detail=detail)
    return Measurement(KIND, "tcp", TOOL, pair, Status.PASS, f"every byte checked: {text} "
                       f"({gbps:.2f} Gb/s both ways)", figure=gbps, unit="Gb/s",
                       threshold="no corrupted, dropped or duplicated block", path=path,
                       detail=detail)

"""`strixwizard test soak`: the duplex soak between two nodes (strixwizard/onnode/soak.py).

The server runs on node B (on B's fabric address, a free port), the client on node A, both
supervised like the TCP ping-pong; both send and receive at once, and each reports what it
received. Verdict: FAIL when any block arrived corrupted, dropped or duplicated (bytes that
reached the application were not the bytes sent), and FAIL when a direction was not checked
to its end: its receiver stopped on an error or a timeout (a link down long enough, a reset
connection), its sender stopped on one, the bytes checked differ from the bytes the peer
sent, or no byte was checked at all. PASS only when every byte sent both ways arrived and
was checked. The counters read around every live test turn a passing soak into a WARN when
error counters grew meanwhile (frames damaged and dropped below TCP, but nothing wrong
reached the application).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from strixwizard.live.hosts import Host, HostError, Process, output_of, stop_all
from strixwizard.live.results import Measurement
from strixwizard.model import Status, pair_text
from strixwizard.onnode import soak

SOAK_SOURCE = Path(soak.__file__).read_text(encoding="utf-8")
TOOL = "strixwizard soak"
KIND = "soak"


@dataclass(frozen=True)
class SoakProgress:
    """Where a running soak is: bytes each end has received and checked so far (from the node
    programs' progress lines, about once a second) against the run's bounds."""

    pair: tuple[str, str]
    elapsed: float
    seconds: float  # the run's time bound
    limit_bytes: int  # the run's byte bound, per direction
    received: tuple[int, int]  # (A -> B, checked at B; B -> A, checked at A)
    corrupted: int  # blocks found corrupted so far, both directions

    @property
    def fraction(self) -> float:
        """How far the run is towards whichever bound ends it first (0..1)."""
        by_time = self.elapsed / self.seconds if self.seconds > 0 else 0.0
        by_bytes = min(self.received) / self.limit_bytes if self.limit_bytes > 0 else 0.0
        return min(1.0, max(by_time, by_bytes))

    @property
    def text(self) -> str:
        a, b = self.pair
        there, back = (n / 2**20 for n in self.received)
        bad = f", {self.corrupted} corrupted block(s) so far" if self.corrupted else ""
        return (f"{pair_text(a, b)}: {self.elapsed:.0f} of {self.seconds:g} s, {a} -> {b} {there:.0f} MiB, "
                f"{b} -> {a} {back:.0f} MiB checked{bad}")


@dataclass(frozen=True)
class SoakSettings:
    bytes: int = 1 << 30  # per direction
    seconds: float = 30.0
    start_timeout: float = 10.0
    #: Called from the run's thread about once a second while a pair soaks (the wizard posts it
    #: to the screen); None: no progress.
    progress: Callable[[SoakProgress], None] | None = field(default=None, compare=False)


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


def _last_progress(process: Process) -> tuple[int, int]:
    """(bytes received, blocks corrupted) from a node program's last progress line."""
    tail = process.stdout[-4096:]
    events = [e for e in output_of(tail, "{") if e.get("event") in ("progress", "result")]
    if not events:
        return 0, 0
    return _count(events[-1], "received_bytes"), _count(events[-1], "corrupted")


def run_soak(client: Host, server: Host, address: str, settings: SoakSettings,
             pair: tuple[str, str] = ("A", "B")) -> tuple[dict[str, object], dict[str, object]]:
    """Both ends' results: (what A received from B, what B received from A)."""
    server_proc: Process | None = None
    client_proc: Process | None = None
    try:
        server_proc, port = _start_server(server, address, settings)
        limit = settings.seconds + 30
        client_proc = client.start([client.python, "-c", SOAK_SOURCE, "client", address, str(port),
                                    str(settings.bytes), f"{settings.seconds:g}"], limit,
                                   "soak client")
        began = time.monotonic()
        deadline = began + limit + 5
        shown = began
        while not (client_proc.wait(0.2) and server_proc.wait(0.2)):
            if client_proc.lost or server_proc.lost or time.monotonic() > deadline:
                raise SoakError("the soak did not finish: a node went down, SSH dropped, or it "
                                f"ran past {limit:g} s")
            if settings.progress is not None and time.monotonic() - shown >= 1.0:
                shown = time.monotonic()
                at_b, at_a = _last_progress(server_proc), _last_progress(client_proc)
                settings.progress(SoakProgress(pair, shown - began, settings.seconds,
                                               settings.bytes, (at_b[0], at_a[0]),
                                               at_b[1] + at_a[1]))
        return _result(client_proc, client.name), _result(server_proc, server.name)
    finally:
        stop_all([client_proc, server_proc])


#: The shortest `--seconds` a soak takes: the two programs start, connect and fill TCP's window
#: before blocks flow (a run of a few milliseconds checked 0 bytes and proved nothing).
MIN_SECONDS = 1.0


def _text(result: dict[str, object], key: str) -> str:
    value = result.get(key)
    return value if isinstance(value, str) else ""


def _direction(received: dict[str, object], sent: dict[str, object], sender: str, receiver: str
               ) -> dict[str, object]:
    """One direction: what `receiver` checked (its result) against what `sender` sent (its)."""
    return {"from": sender, "to": receiver, "bytes": _count(received, "received_bytes"),
            "sent": _count(sent, "sent_bytes"), "blocks": _count(received, "blocks"),
            "corrupted": _count(received, "corrupted"), "dropped": _count(received, "dropped"),
            "duplicated": _count(received, "duplicated"),
            "receive_error": _text(received, "receive_error"), "send_error": _text(sent, "sent_error"),
            "faults": list(received.get("faults") or [])}  # type: ignore[call-overload]


def incomplete(direction: dict[str, object]) -> list[str]:
    """Why a direction was not checked to its end (empty: it was)."""
    sender, receiver = direction["from"], direction["to"]
    checked, sent = int(str(direction["bytes"])), int(str(direction["sent"]))
    why = []
    if direction["receive_error"]:
        why.append(f"{receiver} stopped receiving: {direction['receive_error']}")
    if direction["send_error"]:
        why.append(f"{sender} stopped sending: {direction['send_error']}")
    if checked == 0:
        why.append(f"no byte from {sender} was checked at {receiver}")
    elif checked != sent:
        why.append(f"{receiver} checked {checked} bytes of the {sent} {sender} sent")
    return why


def tcp_soak(client: Host, server: Host, pair: tuple[str, str], address: str, path: str,
             settings: SoakSettings) -> Measurement:
    try:
        at_a, at_b = run_soak(client, server, address, settings, pair)
    except (SoakError, HostError) as error:
        return Measurement(KIND, "tcp", TOOL, pair, Status.ERROR, str(error), path=path)
    a, b = pair
    directions = [_direction(at_b, at_a, a, b), _direction(at_a, at_b, b, a)]
    took = float(str(at_a.get("seconds") or 0)) or settings.seconds
    moved = sum(int(str(d["bytes"])) for d in directions)
    gbps = moved * 8 / took / 1e9
    bad = [d for d in directions if d["corrupted"] or d["dropped"] or d["duplicated"]]
    text = "; ".join(f"{d['from']} -> {d['to']}: {int(str(d['bytes'])) / 2**20:.0f} MiB, "
                     f"{d['corrupted']} corrupted, {d['dropped']} dropped, "
                     f"{d['duplicated']} duplicated" for d in directions)
    detail: dict[str, object] = {"directions": directions, "seconds": took}
    threshold = "every byte sent both ways checked: no corrupted, dropped or duplicated block"
    cut = [why for d in directions for why in incomplete(d)]
    if cut and not bad:
        return Measurement(KIND, "tcp", TOOL, pair, Status.FAIL,
                           f"not every byte was checked: {'; '.join(cut)} ({text})", figure=gbps,
                           unit="Gb/s", threshold=threshold, path=path, detail=detail)
    if bad:
        first = next((f for d in bad for f in d["faults"]), "")  # type: ignore[attr-defined]
        return Measurement(KIND, "tcp", TOOL, pair, Status.FAIL,
                           f"bytes arrived wrong: {text}" + (f"; first: {first}" if first else "")
                           + (f"; also {'; '.join(cut)}" if cut else ""),
                           figure=gbps, unit="Gb/s", threshold=threshold, path=path, detail=detail)
    return Measurement(KIND, "tcp", TOOL, pair, Status.PASS, f"every byte checked: {text} "
                       f"({gbps:.2f} Gb/s both ways)", figure=gbps, unit="Gb/s",
                       threshold=threshold, path=path, detail=detail)

"""TCP ping-pong, the baseline beside RDMA (standard library only, Python 3.8+).

Sent to a node and run as `python3 -c SOURCE server|client ...`. The client
sends a message of `size` bytes, the server echoes it, and the client times
each round trip with `perf_counter_ns`; the controller halves them into
one-way figures. TCP_NODELAY on both ends, buffers allocated once, blocking
sockets (a socket timeout would add a poll() to every call). Every loop is
bounded by a count and a wall-clock limit; the supervisor that runs this
kills it if it still hangs past its own limit.

Each side prints JSON lines on stdout:
  server: {"event": "listening", "address": A, "port": P}, then {"event": "done", "echoed": N}
  client: {"event": "result", "size": S, "warmup": W, "rtt_ns": [...], "stopped_early": bool}
  either: {"event": "error", "error": "..."} and exit status 3
"""

from __future__ import annotations

import json
import socket
import struct
import sys
import time
from array import array

HEADER = struct.Struct("!III")  # size, round trips, warm-up round trips
MAX_SIZE = 1 << 20
MAX_TRIPS = 1_000_000


def _emit(**fields: object) -> None:
    sys.stdout.write(json.dumps(fields, allow_nan=False) + "\n")
    sys.stdout.flush()


def _recv_exact(sock: socket.socket, view: memoryview, size: int) -> bool:
    got = 0
    while got < size:
        n = sock.recv_into(view[got:], size - got)
        if n == 0:
            return False
        got += n
    return True


def serve(address: str, port: int, seconds: float) -> int:
    deadline = time.monotonic() + seconds
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        listener.bind((address, port))
    except OSError as error:
        _emit(event="error", error=f"cannot listen on {address} port {port}: {error.strerror}",
              port_in_use=error.errno == 98)
        return 3
    listener.listen(1)
    _emit(event="listening", address=address, port=listener.getsockname()[1])
    listener.settimeout(max(0.1, deadline - time.monotonic()))
    try:
        conn, _ = listener.accept()
    except OSError:  # socket.timeout (TimeoutError from 3.10 on)
        _emit(event="error", error=f"no client connected within {seconds:g} s")
        return 3
    listener.close()
    conn.settimeout(None)
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    head = bytearray(HEADER.size)
    if not _recv_exact(conn, memoryview(head), HEADER.size):
        _emit(event="error", error="the client closed before sending its header")
        return 3
    size, trips, warmup = HEADER.unpack(head)
    if not 0 < size <= MAX_SIZE or trips + warmup > MAX_TRIPS:
        _emit(event="error", error=f"bad header: size {size}, {trips + warmup} round trips")
        return 3
    buf = bytearray(size)
    view = memoryview(buf)
    echoed = 0
    recv_into, send = conn.recv_into, conn.sendall
    for _ in range(trips + warmup):
        got = recv_into(view, size)  # fast path: the whole message in one call
        if got != size and (got == 0 or not _recv_exact(conn, view[got:], size - got)):
            break
        send(view)
        echoed += 1
    conn.close()
    _emit(event="done", echoed=echoed)
    return 0


def client(address: str, port: int, size: int, trips: int, warmup: int, seconds: float,
           connect_timeout: float = 5.0) -> int:
    if not 0 < size <= MAX_SIZE or trips + warmup > MAX_TRIPS:
        _emit(event="error", error=f"bad parameters: size {size}, {trips + warmup} round trips")
        return 3
    deadline = time.monotonic() + seconds
    try:
        conn = socket.create_connection((address, port), timeout=connect_timeout)
    except OSError as error:
        _emit(event="error", error=f"cannot connect to {address} port {port}: {error}")
        return 3
    conn.settimeout(None)
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    conn.sendall(HEADER.pack(size, trips, warmup))
    out = bytearray(b"\x5a" * size)
    back = bytearray(size)
    out_view, back_view = memoryview(out), memoryview(back)
    total = trips + warmup
    rtt = array("q", bytes(8 * total))
    clock, send, recv_into = time.perf_counter_ns, conn.sendall, conn.recv_into
    done = 0
    stopped_early = False
    for i in range(total):
        if i & 63 == 0 and time.monotonic() > deadline:
            stopped_early = True
            break
        start = clock()
        send(out_view)
        got = recv_into(back_view, size)  # fast path: the whole echo in one call
        if got != size and (got == 0 or not _recv_exact(conn, back_view[got:], size - got)):
            _emit(event="error", error=f"the server closed the connection after {i} round trips")
            return 3
        rtt[i] = clock() - start
        done = i + 1
    conn.close()
    _emit(event="result", size=size, warmup=warmup, rtt_ns=rtt[warmup:done].tolist(),
          stopped_early=stopped_early)
    return 0


def main(argv: list[str]) -> int:
    if argv[0] == "server":
        return serve(argv[1], int(argv[2]), float(argv[3]))
    return client(argv[1], int(argv[2]), int(argv[3]), int(argv[4]), int(argv[5]), float(argv[6]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

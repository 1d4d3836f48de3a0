"""Native RDMA-write ping-pong through pyverbs, for nodes without perftest.

Standard library plus pyverbs (Debian/Fedora `python3-pyverbs`), Python 3.8+;
sent to a node and run as `python3 -c SOURCE server|client ...` like the TCP
ping-pong, printing the same JSON-line events (round trips in ns).

How it works, as `ib_write_lat` does: each side registers a buffer (and a
separate one it writes from, so its own message never passes for the echo), an RC
queue pair is connected with the peer's QP number, PSN, GID and buffer
address/rkey exchanged over a TCP connection (length-prefixed JSON), then the
client RDMA-writes a message whose last byte is a sequence number into the
server's buffer; the server busy-polls its own buffer for that byte and
writes back; the client busy-polls for the echo and times the round trip.

`allreduce` (the optional last argument): the 2-rank ring all-reduce's traffic, for `test
decode`. Each side holds a message of 2 x SIZE bytes; step 1 (reduce-scatter) and step 2
(all-gather) each RDMA-write SIZE bytes to the peer AT THE SAME TIME as the peer writes to
us, into a slot of its own per step (the peer may be a step ahead: a second write into the
same slot could overwrite the first before it was seen). The client times each whole
all-reduce. The sums themselves are not computed (RCCL adds them on the GPU; they are not
the fabric's cost).

The verbs part runs for real against soft-RoCE (rxe0) in the project's VM lab
(tests/test_rdma_vm.py); the TCP exchange is also tested on its own.
"""

from __future__ import annotations

import json
import socket
import struct
import sys
import time
from typing import Any

MAX_MESSAGE = 64 * 1024
MAX_TRIPS = 1_000_000
_LENGTH = struct.Struct("!I")


class NoDevice(Exception):
    pass


def _emit(**fields: object) -> None:
    sys.stdout.write(json.dumps(fields, allow_nan=False) + "\n")
    sys.stdout.flush()


# -- connection data over TCP ---------------------------------------------------
def send_message(sock: socket.socket, payload: dict[str, Any]) -> None:
    data = json.dumps(payload, allow_nan=False).encode("utf-8")
    sock.sendall(_LENGTH.pack(len(data)) + data)


def _read_exact(sock: socket.socket, size: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < size:
        chunk = sock.recv(size - len(chunks))
        if not chunk:
            raise ConnectionError("the peer closed the connection during the exchange")
        chunks.extend(chunk)
    return bytes(chunks)


def receive_message(sock: socket.socket) -> dict[str, Any]:
    (size,) = _LENGTH.unpack(_read_exact(sock, _LENGTH.size))
    if size > MAX_MESSAGE:
        raise ValueError(f"connection data of {size} bytes is too large")
    value = json.loads(_read_exact(sock, size).decode("utf-8"))
    if not isinstance(value, dict):
        raise ValueError("connection data is not an object")
    return value


REQUIRED = ("qpn", "psn", "gid", "lid", "rkey", "addr", "size")


def exchange(sock: socket.socket, mine: dict[str, Any]) -> dict[str, Any]:
    """Send ours, read theirs; both sides call it, so neither waits on the other's order."""
    send_message(sock, mine)
    theirs = receive_message(sock)
    missing = [key for key in REQUIRED if key not in theirs]
    if missing:
        raise ValueError(f"the peer's connection data lacks {', '.join(missing)}")
    return theirs


# -- verbs ------------------------------------------------------------------------
def open_device(name: str) -> Any:
    try:
        from pyverbs.device import Context, get_device_list
    except ImportError:
        raise NoDevice(
            "pyverbs is not installed on this node (package python3-pyverbs), or not reachable "
            "from " + sys.executable + ": only the distribution's own python3 sees it (a pyenv "
            "or other Python does not, even with --system-site-packages)") from None
    try:
        devices = get_device_list()
    except Exception as error:  # PyverbsRDMAError when the kernel has no RDMA at all
        raise NoDevice(f"no RDMA devices on this node ({error})") from None
    names = [d.name.decode() if isinstance(d.name, bytes) else str(d.name) for d in devices]
    if not names:
        raise NoDevice("no RDMA devices on this node")
    if name not in names:
        raise NoDevice(f"no RDMA device {name} on this node (found: {', '.join(names)})")
    return Context(name=name)


class Endpoint:
    """One side's PD, MR, CQ and RC QP."""

    def __init__(self, ctx: Any, port: int, gid_index: int, size: int, slots: int = 1) -> None:
        import random

        import pyverbs.enums as e
        from pyverbs.cq import CQ
        from pyverbs.mr import MR
        from pyverbs.pd import PD
        from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr

        self.e = e
        self.ctx, self.port, self.gid_index, self.size = ctx, port, gid_index, size
        self.pd = PD(ctx)
        access = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE
        # the peer writes here, SIZE bytes per slot; we poll each slot's last byte
        self.mr = MR(self.pd, size * slots, access)
        self.send_mr = MR(self.pd, size, e.IBV_ACCESS_LOCAL_WRITE)  # what we write from
        self.cq = CQ(ctx, 16)
        cap = QPCap(max_send_wr=4, max_recv_wr=1, max_send_sge=1, max_recv_sge=1)
        init = QPAttr(port_num=port)
        init.qp_access_flags = access  # without REMOTE_WRITE the peer's writes fail (WC status 9)
        self.qp = QP(self.pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=self.cq, rcq=self.cq, cap=cap), init)
        self.psn = random.getrandbits(24)
        port_attr = ctx.query_port(port)
        self.lid = port_attr.lid
        self.mtu = port_attr.active_mtu

    def info(self) -> dict[str, Any]:
        gid = str(self.ctx.query_gid(self.port, self.gid_index))
        return {"qpn": self.qp.qp_num, "psn": self.psn, "gid": gid, "lid": self.lid,
                "rkey": self.mr.rkey, "addr": self.mr.buf, "size": self.size}

    def connect(self, peer: dict[str, Any]) -> None:
        from pyverbs.addr import GID, AHAttr, GlobalRoute
        from pyverbs.qp import QPAttr

        e = self.e
        attr = QPAttr(qp_state=e.IBV_QPS_RTR, cur_qp_state=e.IBV_QPS_INIT, port_num=self.port)
        attr.path_mtu = self.mtu
        attr.dest_qp_num = int(peer["qpn"])
        attr.rq_psn = int(peer["psn"])
        attr.max_dest_rd_atomic = 1
        attr.min_rnr_timer = 12
        route = GlobalRoute(dgid=GID(peer["gid"]), sgid_index=self.gid_index)
        attr.ah_attr = AHAttr(gr=route, is_global=1, dlid=int(peer["lid"]), port_num=self.port)
        self.qp.to_rtr(attr)
        attr.sq_psn = self.psn
        attr.timeout, attr.retry_cnt, attr.rnr_retry, attr.max_rd_atomic = 14, 7, 7, 1
        self.qp.to_rts(attr)
        self.peer = peer

    def write(self, seq: int, slot: int = 0) -> None:
        from pyverbs.wr import SGE, SendWR

        e = self.e
        # never into self.mr: a local copy of seq there would pass for the peer's echo
        self.send_mr.write(bytes([seq]) * self.size, self.size, 0)
        wr = SendWR(opcode=e.IBV_WR_RDMA_WRITE, num_sge=1,
                    sg=[SGE(self.send_mr.buf, self.size, self.send_mr.lkey)], send_flags=e.IBV_SEND_SIGNALED)
        wr.set_wr_rdma(int(self.peer["rkey"]), int(self.peer["addr"]) + slot * self.size)
        self.qp.post_send(wr)
        deadline = time.monotonic() + 5
        while True:  # busy-poll the send completion, bounded
            polled, wcs = self.cq.poll()
            if polled:
                if wcs[0].status != e.IBV_WC_SUCCESS:
                    raise RuntimeError(f"RDMA write completed with status {wcs[0].status}")
                return
            if time.monotonic() > deadline:
                raise TimeoutError("no send completion within 5 s")

    def wait_for(self, seq: int, deadline: float, slot: int = 0) -> bool:
        read, last = self.mr.read, (slot + 1) * self.size - 1
        while read(1, last)[0] != seq:  # busy polling on our own buffer
            if time.monotonic() > deadline:
                return False
        return True


PATTERNS = ("pingpong", "allreduce")


def _allreduce(end: Endpoint, i: int, deadline: float) -> bool:
    """One 2-rank ring all-reduce: both sides write step 1, wait for the peer's, then step 2."""
    for step in (0, 1):
        seq = (2 * i + step) % 255 + 1
        end.write(seq, slot=step)
        if not end.wait_for(seq, deadline, slot=step):
            return False
    return True


def run(role: str, device: str, port: int, gid_index: int, address: str, tcp_port: int, size: int,
        trips: int, warmup: int, seconds: float, pattern: str = "pingpong") -> int:
    if not 0 < size <= 1 << 20 or trips + warmup > MAX_TRIPS or pattern not in PATTERNS:
        _emit(event="error", error="bad parameters")
        return 3
    try:
        ctx = open_device(device)
    except NoDevice as error:
        _emit(event="error", error=str(error), no_device=True)
        return 3
    if role == "server":
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind((address, tcp_port))
        listener.listen(1)
        _emit(event="listening", address=address, port=listener.getsockname()[1])
        # the client starts only now (and imports pyverbs: seconds under emulation), so not
        # just `seconds`: with test decode's 1 s the server had gone before the client came;
        # the runner's own bound on this process is seconds + 30
        listener.settimeout(seconds + 20)
        sock, _ = listener.accept()
        listener.close()
    else:
        sock = socket.create_connection((address, tcp_port), timeout=10)
    end = Endpoint(ctx, port, gid_index, size, slots=2 if pattern == "allreduce" else 1)
    end.connect(exchange(sock, end.info()))
    send_message(sock, {"ready": True})  # both QPs are in RTS before the first write
    receive_message(sock)
    # from here, not from the start: the peer's start-up (pyverbs import) must not eat the time
    deadline = time.monotonic() + seconds
    # the all-reduce's warm-up also ends after a fifth of the time bound: at the ms an exchange
    # takes on emulated software RDMA, 50 of them would leave none timed in `test decode`'s 1 s
    warm_until = time.monotonic() + seconds / 5
    rtt: list[int] = []
    clock = time.perf_counter_ns
    try:
        for i in range(trips + warmup):
            seq = i % 255 + 1
            if pattern == "allreduce":
                start = clock()
                if not _allreduce(end, i, deadline):
                    break
                if i >= warmup or time.monotonic() > warm_until:
                    rtt.append(clock() - start)
            elif role == "client":
                start = clock()
                end.write(seq)
                if not end.wait_for(seq, deadline):
                    break
                if i >= warmup:
                    rtt.append(clock() - start)
            else:
                if not end.wait_for(seq, deadline):
                    break
                end.write(seq)
    except (TimeoutError, RuntimeError) as error:  # a stalled or failed write: say so, keep what we have
        _emit(event="error", error=str(error))
    sock.close()
    if role == "client":
        _emit(event="result", size=size, warmup=warmup, rtt_ns=rtt, stopped_early=len(rtt) < trips,
              pattern=pattern)
    else:
        _emit(event="done")
    return 0


if __name__ == "__main__":
    a = sys.argv[1:]
    sys.exit(run(a[0], a[1], int(a[2]), int(a[3]), a[4], int(a[5]), int(a[6]), int(a[7]), int(a[8]),
                 float(a[9]), *a[10:11]))

"""Duplex soak: blocks that carry their position and a BLAKE2 digest, both ways at once
(standard library only, Python 3.8+).

Each block is `BLOCK` bytes: an 8-byte block index (big-endian), a payload that depends on
the run's seed and the index (so a block in the wrong place does not match its neighbour's
bytes either), and a 16-byte BLAKE2b digest of index and payload. The receiver knows the next
index it expects, so it finds:
- a corrupted block: its digest does not match (a flipped byte anywhere in it, header too);
  the first differing byte of the payload is located against the expected pattern;
- a dropped, duplicated or reordered block: a good digest on an index other than the expected
  one (lower: duplicated or reordered; higher: blocks missing before it).
TCP's own checksum is 16 bits and is checked before the data reaches the socket; corruption
after it (a NIC, a driver, a DMA path, a relay) arrives as good TCP data: only an end-to-end
check like this one sees it.

Every run is bounded by a byte count and a wall-clock limit. Only the first few faults are
described; all are counted.
"""

from __future__ import annotations

import contextlib
import hashlib
import socket
import struct
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

BLOCK = 64 * 1024
INDEX = struct.Struct("!Q")
DIGEST = 16
PAYLOAD = BLOCK - INDEX.size - DIGEST
MAX_DESCRIBED = 8


def _pattern(seed: int) -> bytes:
    """PAYLOAD * 2 bytes of BLAKE2b output in counter mode (the payload of block i is a window
    of it starting at a position that depends on i)."""
    out = bytearray()
    counter = 0
    key = seed.to_bytes(8, "big")
    while len(out) < 2 * PAYLOAD:
        out += hashlib.blake2b(counter.to_bytes(8, "big"), key=key, digest_size=64).digest()
        counter += 1
    return bytes(out[:2 * PAYLOAD])


class Pattern:
    """The blocks of one direction of a run."""

    def __init__(self, seed: int) -> None:
        self._twice = memoryview(_pattern(seed))

    def payload(self, index: int) -> memoryview:
        start = (index * 7919) % PAYLOAD
        return self._twice[start:start + PAYLOAD]

    def block(self, index: int) -> bytes:
        head = INDEX.pack(index)
        body = self.payload(index)
        digest = hashlib.blake2b(head, digest_size=DIGEST)
        digest.update(body)
        return head + bytes(body) + digest.digest()


@dataclass
class Received:
    """What one receiving side found."""

    blocks: int = 0
    bytes: int = 0
    corrupted: int = 0
    dropped: int = 0
    duplicated: int = 0
    faults: list[str] = field(default_factory=list)

    def note(self, text: str) -> None:
        if len(self.faults) < MAX_DESCRIBED:
            self.faults.append(text)


def check_block(pattern: Pattern, expected: int, block: bytes, seen: Received) -> int:
    """Judge one received block against the index expected; returns the next index expected."""
    seen.blocks += 1
    seen.bytes += len(block)
    head, body, tail = block[:INDEX.size], block[INDEX.size:-DIGEST], block[-DIGEST:]
    digest = hashlib.blake2b(head, digest_size=DIGEST)
    digest.update(body)
    offset = expected * BLOCK
    if digest.digest() != tail:
        seen.corrupted += 1
        want = pattern.payload(expected)
        first = next((i for i in range(PAYLOAD) if body[i] != want[i]), None)
        where = (f"payload byte {first} (stream offset {offset + INDEX.size + first})"
                 if first is not None else "header or digest")
        seen.note(f"block {expected} at stream offset {offset}: digest mismatch, first bad "
                  f"byte at {where}")
        return expected + 1
    index = int(INDEX.unpack(head)[0])
    if index == expected:
        return expected + 1
    if index < expected:
        seen.duplicated += 1
        seen.note(f"block {index} arrived again (or late) where block {expected} was expected "
                  f"(stream offset {offset})")
        return expected
    seen.dropped += index - expected
    seen.note(f"blocks {expected}..{index - 1} missing before block {index} (stream offset "
              f"{offset})")
    return index + 1


def _recv_exact(sock: socket.socket, view: memoryview) -> int:
    got = 0
    while got < len(view):
        n = sock.recv_into(view[got:])
        if n == 0:
            break
        got += n
    return got


@dataclass
class Sent:
    blocks: int = 0
    bytes: int = 0
    error: str = ""


def send(sock: socket.socket, pattern: Pattern, limit_bytes: int, deadline: float,
         stop: threading.Event, sent: Sent) -> None:
    """Send blocks until `limit_bytes`, the deadline or `stop`; then shut the write side."""
    try:
        index = 0
        while sent.bytes + BLOCK <= limit_bytes and time.monotonic() < deadline \
                and not stop.is_set():
            sock.sendall(pattern.block(index))
            index += 1
            sent.blocks += 1
            sent.bytes += BLOCK
    except OSError as error:
        sent.error = str(error)
    finally:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_WR)


def receive(sock: socket.socket, pattern: Pattern, deadline: float, stop: threading.Event,
            seen: Received, progress: Callable[[Received], None] | None = None) -> None:
    """Receive and judge blocks until the peer shuts its side, the deadline or `stop`."""
    buffer = bytearray(BLOCK)
    view = memoryview(buffer)
    expected = 0
    last = time.monotonic()
    while time.monotonic() < deadline and not stop.is_set():
        got = _recv_exact(sock, view)
        if got < BLOCK:
            if got:
                seen.note(f"the stream ended inside block {expected} ({got} of {BLOCK} bytes)")
                seen.corrupted += 1
            return
        expected = check_block(pattern, expected, bytes(buffer), seen)
        if progress is not None and time.monotonic() - last >= 1.0:
            last = time.monotonic()
            progress(seen)


def duplex(sock: socket.socket, send_seed: int, recv_seed: int, limit_bytes: int,
           seconds: float, progress: Callable[[Received], None] | None = None,
           stop: threading.Event | None = None) -> tuple[Sent, Received]:
    """Send and receive at once over one connection; returns (Sent, Received)."""
    stop = stop or threading.Event()
    deadline = time.monotonic() + seconds
    sent, seen = Sent(), Received()
    sender = threading.Thread(target=send, args=(sock, Pattern(send_seed), limit_bytes, deadline,
                                                  stop, sent), daemon=True)
    sender.start()
    sock.settimeout(max(1.0, seconds + 5.0))
    try:
        receive(sock, Pattern(recv_seed), deadline + 5.0, stop, seen, progress)
    except OSError as error:
        seen.note(f"receive stopped: {error}")
    sender.join(timeout=seconds + 10.0)
    return sent, seen

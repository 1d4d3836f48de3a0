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

#: 256 KiB: per-block work (a header, a digest of 8 bytes, a loop turn, a system call) is
#: then small beside the bytes moved; 64 KiB blocks cost twice bulk TCP's CPU per byte
#: (benchmarks/soak_lab.py, docs/usb4.md).
BLOCK = 256 * 1024
INDEX = struct.Struct("!Q")
DIGEST = 16
PAYLOAD = BLOCK - INDEX.size - DIGEST
MAX_DESCRIBED = 8
RECV_BLOCKS = 4


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


#: How many distinct payloads a direction cycles through (block i carries variant i % VARIANTS):
#: enough that a block out of place does not carry its neighbours' bytes, few enough for the
#: sender to keep each one's digest state (it then hashes 8 bytes per block, not the block).
VARIANTS = 7


class Pattern:
    """The blocks of one direction of a run. The digest is BLAKE2b-128 over payload then
    index, so the sender's state after each payload can be kept and only the index added."""

    def __init__(self, seed: int) -> None:
        self._twice = memoryview(_pattern(seed))
        self._blocks: dict[int, tuple[bytearray, object]] = {}

    def payload(self, index: int) -> memoryview:
        start = ((index % VARIANTS) * 7919) % PAYLOAD
        return self._twice[start:start + PAYLOAD]

    def block(self, index: int) -> memoryview:
        """Block `index`, in a buffer reused for the next block of its variant."""
        return memoryview(self.buffer(index))

    def buffer(self, index: int) -> bytearray:
        """Block `index` as the bytearray `block` views (the receiver compares against it)."""
        variant = index % VARIANTS
        cached = self._blocks.get(variant)
        if cached is None:
            buffer = bytearray(BLOCK)
            buffer[INDEX.size:INDEX.size + PAYLOAD] = self.payload(index)
            cached = (buffer, hashlib.blake2b(self.payload(index), digest_size=DIGEST))
            self._blocks[variant] = cached
        buffer, state = cached
        head = INDEX.pack(index)
        digest = state.copy()  # type: ignore[attr-defined]
        digest.update(head)
        buffer[:INDEX.size] = head
        buffer[-DIGEST:] = digest.digest()
        return buffer


def digest_of(block: memoryview | bytes) -> bytes:
    """What the digest field of a block must hold: BLAKE2b-128 of payload, then index."""
    view = memoryview(block)
    digest = hashlib.blake2b(view[INDEX.size:-DIGEST], digest_size=DIGEST)
    digest.update(view[:INDEX.size])
    return digest.digest()


@dataclass
class Received:
    """What one receiving side found."""

    blocks: int = 0
    bytes: int = 0
    corrupted: int = 0
    dropped: int = 0
    duplicated: int = 0
    faults: list[str] = field(default_factory=list)
    #: Why receiving ended before the peer shut its side ("" when it did): an error (a timeout,
    #: a reset), the run's time limit, or a stop. A stream cut short is never a complete one.
    stopped: str = ""

    def note(self, text: str) -> None:
        if len(self.faults) < MAX_DESCRIBED:
            self.faults.append(text)


def check_block(pattern: Pattern, expected: int, block: memoryview | bytes, seen: Received
                ) -> int:
    """Judge one received block against the index expected; returns the next index expected.

    The receiver knows the block it expects to its last byte (pattern, index and digest), so
    the common case is one comparison of all of it (memcmp, several GB/s) rather than a digest
    of every byte received (BLAKE2b, under 1 GB/s a core); only a block that differs is
    digested, to tell a damaged block from one out of place."""
    block = memoryview(block)
    seen.blocks += 1
    seen.bytes += len(block)
    if pattern.buffer(expected) == block:
        return expected + 1
    head, body, tail = block[:INDEX.size], block[INDEX.size:-DIGEST], block[-DIGEST:]
    offset = expected * BLOCK
    if digest_of(block) != tail:
        seen.corrupted += 1
        want = pattern.payload(expected)
        first = next((i for i in range(PAYLOAD) if body[i] != want[i]), None)
        if first is not None:
            where = f"payload byte {first} (stream offset {offset + INDEX.size + first})"
        elif int(INDEX.unpack(head)[0]) != expected:
            where = f"the index field (stream offsets {offset}..{offset + INDEX.size - 1})"
        else:
            where = (f"the digest field (stream offsets {offset + BLOCK - DIGEST}.."
                     f"{offset + BLOCK - 1})")
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
        sent.error = str(error) or type(error).__name__
    finally:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_WR)


def receive(sock: socket.socket, pattern: Pattern, deadline: float, stop: threading.Event,
            seen: Received, progress: Callable[[Received], None] | None = None) -> None:
    """Receive and judge blocks until the peer shuts its side, the deadline or `stop`
    (`RECV_BLOCKS` blocks per read: fewer system calls and loop turns per byte); a deadline or
    a stop before the peer shut its side is recorded in `seen.stopped`."""
    buffer = bytearray(BLOCK * RECV_BLOCKS)
    view = memoryview(buffer)
    expected = 0
    last = time.monotonic()
    while True:
        if stop.is_set():
            seen.stopped = "stopped before the peer finished sending"
            return
        if time.monotonic() >= deadline:
            seen.stopped = "the run's time limit passed before the peer finished sending"
            return
        got = _recv_exact(sock, view)
        full, rest = divmod(got, BLOCK)
        for i in range(full):
            expected = check_block(pattern, expected, view[i * BLOCK:(i + 1) * BLOCK], seen)
        if got < len(view):  # the peer shut its side (or the connection ended)
            if rest:  # a cut stream, not a wrong byte: the part block is left unchecked, so the
                # bytes checked fall short of what the peer sent and the soak fails on that
                seen.note(f"the stream ended inside block {expected} ({rest} of {BLOCK} bytes)")
            return
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
        seen.stopped = f"receive stopped: {error or type(error).__name__}"
        seen.note(seen.stopped)
    sender.join(timeout=seconds + 10.0)
    return sent, seen


def _result(role: str, sent: Sent, seen: Received, seconds: float) -> dict[str, object]:
    return {"event": "result", "role": role, "seconds": round(seconds, 3),
            "sent_bytes": sent.bytes, "sent_error": sent.error, "received_bytes": seen.bytes,
            "receive_error": seen.stopped,
            "blocks": seen.blocks, "corrupted": seen.corrupted, "dropped": seen.dropped,
            "duplicated": seen.duplicated, "faults": seen.faults}


def main(argv: list[str]) -> int:
    """`server ADDRESS PORT BYTES SECONDS` or `client ADDRESS PORT BYTES SECONDS`: one duplex
    run; JSON lines on stdout (progress each second, then the result)."""
    import json
    import sys

    def emit(**fields: object) -> None:
        sys.stdout.write(json.dumps(fields, allow_nan=False) + "\n")
        sys.stdout.flush()

    role, address, port, limit, seconds = argv[0], argv[1], int(argv[2]), int(argv[3]), \
        float(argv[4])
    started = time.monotonic()
    if role == "server":
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((address, port))
        listener.listen(1)
        listener.settimeout(seconds + 10.0)
        emit(event="listening", address=address, port=listener.getsockname()[1])
        sock, _ = listener.accept()
        listener.close()
        seeds = (2, 1)
    else:
        sock = socket.create_connection((address, port), timeout=10.0)
        seeds = (1, 2)
    started = time.monotonic()
    with sock:
        sent, seen = duplex(sock, seeds[0], seeds[1], limit, seconds, progress=lambda s: emit(
            event="progress", received_bytes=s.bytes, corrupted=s.corrupted))
    emit(**_result(role, sent, seen, time.monotonic() - started))
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))

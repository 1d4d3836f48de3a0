"""The soak's node-side program (strixwizard/onnode/soak.py) on real sockets of this machine:
a clean duplex run, and one through a relay that flips payload bytes at a known rate.

The relay is a fault injector in the data path after TCP: it reads good TCP data and forwards
it with bytes flipped, as a NIC, driver or DMA path that corrupts after the checksum was
checked would deliver it (TCP's 16-bit checksum cannot see corruption made after it)."""

from __future__ import annotations

import socket
import struct
import threading
import time

from strixwizard.onnode import soak

MIB = 1 << 20


def relay(src: socket.socket, dst: socket.socket, flip_every: int | None) -> None:
    """Forward src → dst, XOR-ing the byte at every `flip_every`-th stream position."""
    position = 0
    while True:
        chunk = bytearray(src.recv(256 * 1024))
        if not chunk:
            dst.shutdown(socket.SHUT_WR)
            return
        if flip_every:
            first = -position % flip_every
            for i in range(first, len(chunk), flip_every):
                chunk[i] ^= 0x5A
        position += len(chunk)
        dst.sendall(chunk)


def run_pair(total: int, flip_a_to_b: int | None = None):
    a, a_relay = socket.socketpair()
    b_relay, b = socket.socketpair()
    threads = [threading.Thread(target=relay, args=(a_relay, b_relay, flip_a_to_b), daemon=True),
               threading.Thread(target=relay, args=(b_relay, a_relay, None), daemon=True)]
    for t in threads:
        t.start()
    out: dict[str, tuple] = {}
    side_b = threading.Thread(target=lambda: out.setdefault("b", soak.duplex(b, 2, 1, total, 30)))
    side_b.start()
    out["a"] = soak.duplex(a, 1, 2, total, 30)
    side_b.join(40)
    for s in (a, a_relay, b_relay, b):
        s.close()
    return out["a"], out["b"]


def test_clean_duplex_run_moves_every_block_both_ways_and_finds_nothing() -> None:
    (sent_a, seen_a), (sent_b, seen_b) = run_pair(8 * MIB)
    assert sent_a.bytes == sent_b.bytes == 8 * MIB and not sent_a.error
    for seen in (seen_a, seen_b):
        assert (seen.bytes, seen.corrupted, seen.dropped, seen.duplicated) == (8 * MIB, 0, 0, 0)
        assert seen.faults == []


def test_relay_flipping_one_byte_per_mib_is_found_and_located_in_that_direction_only() -> None:
    (_, seen_a), (_, seen_b) = run_pair(8 * MIB, flip_a_to_b=MIB)
    # bytes 0, 1 MiB, 2 MiB ... of the a → b stream: the first byte of blocks 0, 4, 8 ...
    assert seen_b.corrupted == 8 and seen_b.blocks == 8 * MIB // soak.BLOCK
    assert seen_b.faults[0] == ("block 0 at stream offset 0: digest mismatch, first bad byte at "
                                "the index field (stream offsets 0..7)")
    assert seen_a.corrupted == 0 and seen_a.bytes == 8 * MIB


def test_a_flip_inside_the_payload_is_located_to_the_byte() -> None:
    pattern = soak.Pattern(7)
    block = bytearray(pattern.block(3))
    block[soak.INDEX.size + 1000] ^= 1
    seen = soak.Received()
    assert soak.check_block(pattern, 3, bytes(block), seen) == 4
    assert seen.faults == [f"block 3 at stream offset {3 * soak.BLOCK}: digest mismatch, first "
                           f"bad byte at payload byte 1000 (stream offset "
                           f"{3 * soak.BLOCK + soak.INDEX.size + 1000})"]


def test_dropped_duplicated_and_reordered_blocks_are_told_apart() -> None:
    pattern = soak.Pattern(9)
    seen = soak.Received()
    expected = 0
    for index in (0, 1, 3, 3, 2, 4):  # 2 late (missing, then seen again), 3 twice
        expected = soak.check_block(pattern, expected, pattern.block(index), seen)
    assert (seen.corrupted, seen.dropped, seen.duplicated) == (0, 1, 2)
    assert seen.faults[0] == f"blocks 2..2 missing before block 3 (stream offset {2 * soak.BLOCK})"
    assert expected == 5


def test_a_connection_reset_mid_run_is_recorded_as_why_receiving_stopped() -> None:
    """The peer's socket closed with SO_LINGER 0 (the kernel sends a reset) after its first
    block: this side's receiver names the reset instead of ending as if the peer had finished
    (this side sends nothing, so no send of its own takes the error first)."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    client = socket.create_connection(("127.0.0.1", port), timeout=10)
    peer, _ = listener.accept()
    listener.close()
    peer.sendall(soak.Pattern(2).block(0))
    peer.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    peer.close()
    with client:
        sent, seen = soak.duplex(client, 1, 2, 0, 10)
    assert seen.stopped.startswith("receive stopped: ") and "reset" in seen.stopped.lower(), seen
    result = soak._result("client", sent, seen, 1.0)
    assert result["receive_error"] == seen.stopped


def test_the_run_limit_passing_before_the_peer_finished_is_recorded() -> None:
    a, b = socket.socketpair()
    with a, b:
        seen = soak.Received()
        soak.receive(a, soak.Pattern(1), deadline=0.0, stop=threading.Event(), seen=seen)
    assert seen.stopped == "the run's time limit passed before the peer finished sending"


def test_a_direction_is_incomplete_on_an_error_a_shortfall_or_nothing_checked() -> None:
    from strixwizard.live.soak import incomplete

    def direction(checked: int, sent: int, receive_error: str = "", send_error: str = "") -> dict:
        return {"from": "a", "to": "b", "bytes": checked, "sent": sent,
                "receive_error": receive_error, "send_error": send_error}

    assert incomplete(direction(8 * MIB, 8 * MIB)) == []
    assert incomplete(direction(0, 0)) == ["no byte from a was checked at b"]
    assert incomplete(direction(MIB, 8 * MIB)) == [f"b checked {MIB} bytes of the {8 * MIB} a sent"]
    assert incomplete(direction(MIB, MIB, "receive stopped: timed out", "timed out")) == [
        "b stopped receiving: receive stopped: timed out", "a stopped sending: timed out"]


def test_a_stream_cut_inside_a_block_is_unchecked_not_corrupted() -> None:
    """A connection that ends mid-block (a reset, a peer gone) leaves a part block: it is not a
    wrong byte, it is bytes never checked, which the soak fails on as checked < sent."""
    pattern = soak.Pattern(5)
    a, b = socket.socketpair()

    def cut_stream() -> None:
        a.sendall(bytes(pattern.block(0)) + bytes(pattern.block(1))[:1000])
        a.close()

    sender = threading.Thread(target=cut_stream, daemon=True)  # more than a socket buffer holds
    sender.start()
    seen = soak.Received()
    b.settimeout(5)
    soak.receive(b, pattern, deadline=time.monotonic() + 5, stop=threading.Event(), seen=seen)
    sender.join(5)
    b.close()
    assert (seen.bytes, seen.blocks, seen.corrupted) == (soak.BLOCK, 1, 0)
    assert seen.faults == [f"the stream ended inside block 1 (1000 of {soak.BLOCK} bytes)"]

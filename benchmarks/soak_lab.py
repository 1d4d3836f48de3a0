"""Benchmark: the duplex soak (strixwizard/onnode/soak.py) on one lab link, beside plain bulk
TCP, and the time it takes to find a corruption injected at 1 in 10^6 frames.

Builds a real 2-host lab (network namespaces; needs root). On the fabric veth (node0 ->
node1's fab0 address):
1. plain duplex bulk TCP: the same Python, no pattern and no digest, 128 KiB writes (iperf3's
   default TCP buffer length, `-l`; this machine has no iperf3: the baseline is the stream the
   soak would be without its checks);
2. the soak, clean: throughput per direction, no corrupted block;
3. the soak through a relay process in node1 that flips the last byte of every 1448 * 10^6 bytes
   of the node0 -> node1 stream (one 1448-byte TCP payload in 10^6 at MTU 1500). The relay reads
   good TCP data and forwards it damaged, as a NIC or DMA path that corrupts after the TCP
   checksum would: TCP cannot catch it; only the end-to-end digest does. Reported: the time
   from the start to the first corrupted block seen.

    python benchmarks/soak_lab.py [--seconds 20] [--repeat 3] [--relay-seconds 60] [--soak OTHER/soak.py]

`--soak` runs another version of the node program (e.g. `git show REV:strixwizard/onnode/soak.py`)
in the same lab right after, so two versions are compared side by side on the same load.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.lab import Lab, LabHost, require_lab_tools, sweep_stale_labs

SOAK = str(Path(__file__).resolve().parent.parent / "strixwizard" / "onnode" / "soak.py")
PYTHON = "/usr/bin/python3" if Path("/usr/bin/python3").exists() else sys.executable
FLIP_EVERY = 1448 * 10**6
BULK = """
import socket, sys, threading, time
role, addr, port, seconds = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
if role == "server":
    l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    l.bind((addr, port)); l.listen(1); print("listening", flush=True); s, _ = l.accept()
else:
    s = socket.create_connection((addr, port))
block = bytes(128 * 1024); start = time.monotonic(); deadline = start + seconds; got = [0]
def rx():
    buf = bytearray(128 * 1024)
    while True:
        n = s.recv_into(buf)
        if not n: return
        got[0] += n
t = threading.Thread(target=rx); t.start(); sent = 0
while time.monotonic() < deadline:
    s.sendall(block); sent += len(block)
s.shutdown(socket.SHUT_WR); t.join(seconds + 10)
print(sent, got[0], time.monotonic() - start, flush=True)
"""
RELAY = """
import socket, sys, threading
listen, port, target = sys.argv[1], int(sys.argv[2]), sys.argv[3]
tport, every = int(sys.argv[4]), int(sys.argv[5])
l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind((listen, port)); l.listen(1); print("listening", flush=True)
a, _ = l.accept(); b = socket.create_connection((target, tport))
def pipe(src, dst, flip):
    pos = 0
    while True:
        c = bytearray(src.recv(256 * 1024))
        if not c:
            dst.shutdown(socket.SHUT_WR); return
        if flip:
            for i in range((every - 1 - pos) % every, len(c), every):
                c[i] ^= 0x5A
        pos += len(c); dst.sendall(c)
t = threading.Thread(target=pipe, args=(b, a, False)); t.start(); pipe(a, b, True); t.join()
"""


def in_ns(host: LabHost, *argv: str) -> subprocess.Popen[str]:
    return subprocess.Popen(["ip", "netns", "exec", host.netns, *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def wait_listening(proc: subprocess.Popen[str]) -> None:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if "listening" not in line:
        raise SystemExit(f"server did not start: {line!r} {proc.stderr.read() if proc.stderr else ''}")


def children_cpu() -> float:
    """CPU seconds (user + system) of the finished child processes so far: the load-independent
    cost of a run is the difference around it (every run's processes are waited for)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def bulk(a: LabHost, b: LabHost, address: str, seconds: float) -> float:
    server = in_ns(b, PYTHON, "-c", BULK, "server", address, "5301", str(seconds))
    wait_listening(server)
    client = in_ns(a, PYTHON, "-c", BULK, "client", address, "5301", str(seconds))
    out_c, _ = client.communicate(timeout=seconds + 30)
    server.communicate(timeout=30)
    sent, got, took = out_c.split()
    return (int(sent) + int(got)) * 8 / float(took) / 1e9


def soak(a: LabHost, b: LabHost, address: str, seconds: float, relay: bool, program: str = SOAK
         ) -> tuple[dict[str, object], dict[str, object], float | None]:
    port = "5302"
    server = in_ns(b, PYTHON, program, "server", "127.0.0.1" if relay else address, port,
                   str(1 << 62), str(seconds))
    wait_listening(server)
    target, relay_proc = port, None
    if relay:
        relay_proc = in_ns(b, PYTHON, "-c", RELAY, address, "5303", "127.0.0.1", port,
                           str(FLIP_EVERY))
        wait_listening(relay_proc)
        target = "5303"
    started = time.monotonic()
    client = in_ns(a, PYTHON, program, "client", address, target, str(1 << 62), str(seconds))
    detected = None
    assert server.stdout is not None
    result_s: dict[str, object] = {}
    for line in server.stdout:
        event = json.loads(line)
        if event["event"] == "progress" and event["corrupted"] and detected is None:
            detected = time.monotonic() - started
        if event["event"] == "result":
            result_s = event
    out_c, _ = client.communicate(timeout=seconds + 30)
    server.wait(timeout=30)
    if relay_proc is not None:
        relay_proc.wait(timeout=30)
    result_c = json.loads(out_c.strip().splitlines()[-1])
    return result_c, result_s, detected


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--repeat", type=int, default=3, help="rounds of bulk then soak")
    parser.add_argument("--relay-seconds", type=float, default=60.0,
                        help="the corruption run's bound (the aim: found within 300 s)")
    parser.add_argument("--soak", help="another version of the node program, run after this one")
    args = parser.parse_args()
    require_lab_tools()
    sweep_stale_labs()
    with tempfile.TemporaryDirectory() as tmp, Lab(Path(tmp), 2) as lab:
        a, b = lab.hosts[0], lab.hosts[1]
        address = str(b.fabric_addr)
        # The machine is shared: bulk and soak alternate, each soak compared with the bulk run
        # just before it, and the median of the rounds reported.
        programs = [("soak", SOAK)] + ([(f"soak {args.soak}", args.soak)] if args.soak else [])
        ratios: dict[str, list[float]] = {label: [] for label, _ in programs}
        costs: dict[str, list[float]] = {"bulk": [], **{label: [] for label, _ in programs}}
        for round_ in range(1, args.repeat + 1):
            for label, program in programs:
                cpu = children_cpu()
                gbps = bulk(a, b, address, args.seconds)
                bulk_cpu = children_cpu() - cpu
                costs["bulk"].append(bulk_cpu / (gbps * args.seconds / 8))  # CPU s per GB
                cpu = children_cpu()
                c, s, _ = soak(a, b, address, args.seconds, relay=False, program=program)
                soak_cpu = children_cpu() - cpu
                took = float(c["seconds"])  # type: ignore[arg-type]
                moved_bytes = int(c["received_bytes"]) + int(s["received_bytes"])  # type: ignore[call-overload]
                moved = moved_bytes * 8 / took / 1e9
                costs[label].append(soak_cpu / (moved_bytes / 1e9))
                ratios[label].append(moved / gbps)
                print(f"round {round_}: plain duplex bulk TCP (Python, 128 KiB writes) "
                      f"{gbps:.2f} Gb/s; {label}, clean: {moved:.2f} Gb/s both directions "
                      f"({moved / gbps:.0%} of bulk); corrupted blocks: {c['corrupted']} + "
                      f"{s['corrupted']}; CPU s per GB moved: bulk {costs['bulk'][-1]:.2f}, "
                      f"soak {costs[label][-1]:.2f}", flush=True)
        for label, values in ratios.items():
            print(f"{label}: median {statistics.median(values):.0%} of bulk over {len(values)} "
                  f"round(s) ({', '.join(f'{v:.0%}' for v in values)}); CPU s per GB moved: "
                  f"median {statistics.median(costs[label]):.2f} (bulk "
                  f"{statistics.median(costs['bulk']):.2f})")
        c, s, detected = soak(a, b, address, args.relay_seconds, relay=True)
        print(f"soak through the relay (1 flip per {FLIP_EVERY} bytes node0 -> node1): "
              f"corrupted {s['corrupted']} of {s['blocks']} blocks received by node1, "
              f"{c['corrupted']} by node0; first found after "
              f"{'not found' if detected is None else f'{detected:.1f} s'}")
        for fault in s["faults"][:3]:  # type: ignore[index]
            print("  ", fault)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Count llama.cpp RPC's traffic per generated token over its RDMA transport, with the real
programs on the VM lab: the RDMA build of scripts/build_llama.sh (`0.3.36 rdma`), two qemu VMs
with soft-RoCE (tests/support/vmlab.py), vm0 running llama-server (the client), vm1 ggml-rpc-server,
every layer of a tiny GGUF on vm1 (`-ngl 99`: one hop per token), RDMA negotiated by
ggml-rpc itself (both logs must say `RDMA activated`).

A TCP proxy cannot see this traffic (verbs bypass the socket), so it is counted by the kernel
RDMA stack: rxe's hw_counters of each VM (/sys/class/infiniband/rxe0/ports/1/hw_counters:
`rdma_sends` counts SEND work requests the completer finished, i.e. acknowledged by the peer
(drivers/infiniband/sw/rxe/rxe_comp.c do_complete), `rdma_recvs` received messages,
`sent_pkts`/`rcvd_pkts` the RoCE packets, ACKs included), read before and after two
completions of N1 and N2 tokens; per token = (long - short) / (N2 - N1), so the prompt and
the load drop out. The TCP socket of the RPC connection is read too (`ss -tin`, bytes_acked /
bytes_received): after activation nothing should cross it.

Why SENDs matter: ggml-rpc's Linux RDMA transport (transport.cpp rdma_send) posts one
signalled SEND per send_data() call — a command is 3 (cmd byte, size, payload), a reply 2
(size, payload) — and waits for each SEND's completion, which on a reliable connection comes
with the peer's ACK. So over RDMA every SEND costs the client a round trip at the transport,
"one-way" commands included; over TCP only the replies do.

TCG VMs: times are not speeds. Counts are what this measures.

    python benchmarks/rpc_roundtrips_rdma.py [--layers 2,8] [--n1 4] [--n2 12] [--bin-dir DIR]
                                             [--wait-build S] [--json FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.llama_parts import built_bin_dir, write_tiny_model  # noqa: E402
from tests.support.vmlab import FABRIC_NETDEV, RDMA_DEVICE, Vm, VmLab, build_kernel  # noqa: E402

PORT = 50052
HTTP_PORT = 8080
HEALTH_TIMEOUT_S = 600.0
COMPLETION_TIMEOUT_S = 600.0
COUNTERS = ("rdma_sends", "rdma_recvs", "sent_pkts", "rcvd_pkts", "ack_deferred", "duplicate_request",
            "out_of_seq_request", "rcvd_seq_err", "retry_exceeded_err")
HW = f"/sys/class/infiniband/{RDMA_DEVICE}/ports/1/hw_counters"


def _sh(lab: VmLab, vm: Vm, script: str, timeout: float = 120.0) -> str:
    done = lab.run(vm, script, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"{vm.name}: {script}: exit {done.returncode}: {done.stderr[-2000:]}")
    return done.stdout


def roce_v2_gid(lab: VmLab, vm: Vm) -> int:
    from tests.support.llama_vm import roce_v2_gid_index

    return roce_v2_gid_index(lab, vm)


def counters(lab: VmLab, vm: Vm) -> dict[str, int]:
    out = _sh(lab, vm, f"cd {HW} && for f in {' '.join(COUNTERS)}; do echo $f $(cat $f); done")
    values = {}
    for line in out.splitlines():
        name, value = line.split()
        values[name] = int(value)
    return values


def tcp_bytes(lab: VmLab, vm: Vm, peer: str) -> tuple[int, int]:
    """bytes_acked and bytes_received of vm's TCP connections to peer:PORT (0, 0 when none)."""
    out = _sh(lab, vm, f"ss -tinH state established dst {peer}:{PORT} || true")
    acked = received = 0
    for word in out.split():
        if word.startswith("bytes_acked:"):
            acked += int(word.split(":")[1])
        elif word.startswith("bytes_received:"):
            received += int(word.split(":")[1])
    return acked, received


def _start(lab: VmLab, vm: Vm, env: dict[str, str], argv: list[str], log: str) -> int:
    assign = " ".join(f"{k}={v}" for k, v in env.items())
    pid = _sh(lab, vm, f"{assign} nohup {' '.join(argv)} > {log} 2>&1 < /dev/null & echo $!")
    return int(pid.strip())


def _complete(lab: VmLab, head: Vm, n_predict: int) -> dict[str, Any]:
    body = json.dumps({"prompt": "the cluster answers over RDMA", "n_predict": n_predict,
                       "ignore_eos": True, "cache_prompt": False, "temperature": 0})
    out = _sh(lab, head, f"curl -sf -m {int(COMPLETION_TIMEOUT_S)} -H 'Content-Type: application/json' "
                         f"-d '{body}' http://127.0.0.1:{HTTP_PORT}/completion",
              timeout=COMPLETION_TIMEOUT_S + 30)
    result: dict[str, Any] = json.loads(out)
    return result


def _wait_health(lab: VmLab, head: Vm, pid: int) -> None:
    deadline = time.monotonic() + HEALTH_TIMEOUT_S
    while time.monotonic() < deadline:
        if lab.run(head, f"kill -0 {pid}", timeout=30).returncode != 0:
            raise RuntimeError("llama-server exited: " + _sh(lab, head, "tail -c 3000 /tmp/server.log"))
        if lab.run(head, f"curl -sf -m 5 http://127.0.0.1:{HTTP_PORT}/health", timeout=30).returncode == 0:
            return
        time.sleep(2)
    raise RuntimeError("llama-server: not healthy in time: " + _sh(lab, head, "tail -c 3000 /tmp/server.log"))


def measure(lab: VmLab, model: str, layers: int, n1: int, n2: int) -> dict[str, Any]:
    head, worker = lab.vms
    assert head.fabric_addr and worker.fabric_addr
    pids: list[tuple[Vm, int]] = []
    try:
        pids.append((worker, _start(lab, worker, {"GGML_RDMA_DEV": RDMA_DEVICE,
                                                  "GGML_RDMA_GID": str(roce_v2_gid(lab, worker))},
                                    ["/vmlab/bin/ggml-rpc-server", "-H", worker.fabric_addr, "-p", str(PORT)],
                                    "/tmp/rpc.log")))
        deadline = time.monotonic() + 120
        while lab.run(worker, f"ss -Hltn | grep -q ':{PORT} '", timeout=30).returncode != 0:
            if time.monotonic() > deadline:
                raise RuntimeError("ggml-rpc-server did not listen: " + _sh(lab, worker, "cat /tmp/rpc.log"))
            time.sleep(1)
        head_env = {"GGML_RDMA_DEV": RDMA_DEVICE, "GGML_RDMA_GID": str(roce_v2_gid(lab, head))}
        server = _start(lab, head, head_env,
                        ["/vmlab/bin/llama-server", "-m", model, "--rpc", f"{worker.fabric_addr}:{PORT}",
                         "-ngl", "99", "--host", "127.0.0.1", "--port", str(HTTP_PORT), "-c", "256",
                         "-np", "1", "-t", "1", "--no-warmup", "-lv", "4"], "/tmp/server.log")
        pids.append((head, server))
        _wait_health(lab, head, server)
        _complete(lab, head, 2)  # settle: first-token allocations out of the way

        def snap() -> dict[str, Any]:
            return {"head": counters(lab, head), "worker": counters(lab, worker),
                    "tcp": tcp_bytes(lab, head, worker.fabric_addr or "")}

        before = snap()
        short = _complete(lab, head, n1)
        middle = snap()
        long = _complete(lab, head, n2)
        after = snap()
        tokens = n2 - n1

        def per_token(side: str, name: str) -> float:
            d_long = int(after[side][name]) - int(middle[side][name])
            d_short = int(middle[side][name]) - int(before[side][name])
            return (d_long - d_short) / tokens

        logs = {"head": _sh(lab, head, "cat /tmp/server.log"), "worker": _sh(lab, worker, "cat /tmp/rpc.log")}
        activated = {side: "RDMA activated: qpn=" in text for side, text in logs.items()}
        tcp_long = [a - m for a, m in zip(after["tcp"], middle["tcp"], strict=True)]
        return {"layers": layers, "tokens": tokens, "rdma_activated": activated,
                "client": {name: per_token("head", name) for name in COUNTERS},
                "server": {name: per_token("worker", name) for name in COUNTERS},
                "tcp_bytes_during_long_completion": {"client_acked": tcp_long[0],
                                                     "client_received": tcp_long[1]},
                "llama_ms_per_token": long.get("timings", {}).get("predicted_per_token_ms"),
                "short_ms_per_token": short.get("timings", {}).get("predicted_per_token_ms"),
                "rdma_lines": [line for text in logs.values() for line in text.splitlines()
                               if "RDMA" in line][:12]}
    finally:
        for vm, pid in reversed(pids):  # only what this script started, by PID, in its own VM
            lab.run(vm, f"kill {pid}; sleep 1; kill -9 {pid} 2>/dev/null; true", timeout=30)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--layers", default="2,8")
    parser.add_argument("--n1", type=int, default=4)
    parser.add_argument("--n2", type=int, default=12)
    parser.add_argument("--wait-build", type=float, default=0.0, metavar="S",
                        help="boot the VMs first, then wait up to S seconds for a build of the RDMA "
                        "binaries that is already running (this script never builds)")
    parser.add_argument("--bin-dir", type=Path,
                        help="take ggml-rpc-server and llama-server of the RDMA build from here "
                        "(default: scripts/build_llama.sh's cache)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.bin_dir is not None:
        given = args.bin_dir
        if not all((given / name).is_file() for name in ("ggml-rpc-server", "llama-server")):
            raise SystemExit(f"--bin-dir {given}: no ggml-rpc-server and llama-server there")
    if args.bin_dir is None and built_bin_dir("rdma") is None and args.wait_build <= 0:
        raise SystemExit("the RDMA build is missing: scripts/build_llama.sh 0.3.36 rdma")
    rows = []
    with tempfile.TemporaryDirectory() as tmp, VmLab(Path(tmp) / "vmlab", 2, kernel=build_kernel()) as lab:
        deadline = time.monotonic() + args.wait_build
        while (bin_dir := args.bin_dir or built_bin_dir("rdma")) is None:
            if time.monotonic() > deadline:
                raise SystemExit("the RDMA build did not finish in --wait-build")
            time.sleep(10)
        for vm in lab.vms:
            dest = vm.dir / "bin"
            dest.mkdir(exist_ok=True)
            for name in ("ggml-rpc-server", "llama-server"):
                with contextlib.suppress(FileNotFoundError):
                    (dest / name).unlink()
                try:
                    os.link(bin_dir / name, dest / name)
                except OSError:
                    shutil.copy2(bin_dir / name, dest / name)
        print(f"fabric {FABRIC_NETDEV}: {lab.vms[0].fabric_addr} (llama-server) -> "
              f"{lab.vms[1].fabric_addr} (ggml-rpc-server)", flush=True)
        for layers in (int(x) for x in args.layers.split(",")):
            write_tiny_model(lab.vms[0].dir / f"tiny-{layers}.gguf", layers=layers)
            row = measure(lab, f"/vmlab/tiny-{layers}.gguf", layers, args.n1, args.n2)
            rows.append(row)
            c, s = row["client"], row["server"]
            print(f"{layers:>3} layers: RDMA activated {row['rdma_activated']}; per token: client "
                  f"{c['rdma_sends']:.2f} SENDs, {c['rdma_recvs']:.2f} receives, "
                  f"{c['sent_pkts']:.2f} packets out, {c['rcvd_pkts']:.2f} in; server "
                  f"{s['rdma_sends']:.2f} SENDs, {s['rdma_recvs']:.2f} receives; "
                  f"TCP bytes during the long completion {row['tcp_bytes_during_long_completion']}; "
                  f"{row['llama_ms_per_token']} ms/token (TCG: not a speed)", flush=True)
    if args.json:
        args.json.write_text(json.dumps({"rows": rows}, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

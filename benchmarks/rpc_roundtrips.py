"""Measure llama.cpp RPC's network cost per generated token with the real programs: the
`ggml-rpc-server` and `llama-server` built by scripts/build_llama.sh (CPU backend), tiny GGUFs
of several layer counts (tests/support/llama_parts.py), and a counting TCP proxy between them on this
machine's loopback. The proxy parses the client's command stream (| cmd 1 B | size 8 B | data |,
ggml-rpc.cpp send_rpc_cmd) and counts, per command, the bytes each way and the round trips —
a reply from the server after the client sent something, which is when the client waits.

Per token = (a completion of N2 tokens - one of N1 tokens, same prompt) / (N2 - N1), so the
prompt and the load drop out. Two layouts: every layer on the RPC server (`-ngl 99`: one hop
per token, as llama.cpp#28494's RPC1 rows) and half of the layers on the head's CPU (a real
pipeline boundary, as a 2-node `-sm layer`).

    python benchmarks/rpc_roundtrips.py [--layers 2,4,8,16] [--json FILE]

Then the same over two RPC servers with `-sm layer` and with `-sm tensor` (its all-reduce is
the host butterfly of ggml-backend-meta.cpp over RPC), and a straight-line fit per layout:
round trips and bytes per token and server = a + b x layers.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.llama_parts import build, write_tiny_model  # noqa: E402

#: ggml-rpc.cpp's enum rpc_cmd, in order (llama.cpp as vendored by llama-cpp-python 0.3.36).
COMMANDS = ("ALLOC_BUFFER", "GET_ALIGNMENT", "GET_MAX_SIZE", "BUFFER_GET_BASE", "FREE_BUFFER",
            "BUFFER_CLEAR", "SET_TENSOR", "SET_TENSOR_HASH", "GET_TENSOR", "COPY_TENSOR",
            "GRAPH_COMPUTE", "GET_DEVICE_MEMORY", "INIT_TENSOR", "GET_ALLOC_SIZE", "HELLO",
            "DEVICE_COUNT", "GRAPH_RECOMPUTE", "MEMSET_TENSOR")
TIMEOUT_S = 120.0


@dataclass
class Counts:
    to_server: int = 0
    to_client: int = 0
    round_trips: int = 0
    commands: Counter[str] = field(default_factory=Counter)

    def minus(self, other: Counts) -> Counts:
        return Counts(self.to_server - other.to_server, self.to_client - other.to_client,
                      self.round_trips - other.round_trips, self.commands - other.commands)


class CountingProxy:
    """One TCP connection at a time from the client to the server, forwarded both ways and
    counted. Loopback only."""

    def __init__(self, server_port: int, delay_s: float = 0.0) -> None:
        self.server_port = server_port
        self.delay_s = delay_s  # added to every reply that ends a wait of the client
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(4)
        self.port = self.listener.getsockname()[1]
        self.lock = threading.Lock()
        self.counts = Counts()
        self._client_sent = False
        self._parse = bytearray()
        self._need = 0  # payload bytes still to skip of the current command
        threading.Thread(target=self._accept, daemon=True).start()

    def snapshot(self) -> Counts:
        with self.lock:
            c = self.counts
            return Counts(c.to_server, c.to_client, c.round_trips, Counter(c.commands))

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.server_port), timeout=TIMEOUT_S)
            for sock in (client, server):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=self._pump, args=(client, server, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, False), daemon=True).start()

    def _frames(self, data: bytes) -> None:
        """Count the client's commands: | cmd (1 byte) | size (8 bytes) | data (size bytes) |."""
        self._parse.extend(data)
        while True:
            if self._need:
                skip = min(self._need, len(self._parse))
                del self._parse[:skip]
                self._need -= skip
                if self._need:
                    return
            if len(self._parse) < 9:
                return
            cmd = self._parse[0]
            size = int.from_bytes(self._parse[1:9], "little")
            del self._parse[:9]
            self.counts.commands[COMMANDS[cmd] if cmd < len(COMMANDS) else f"cmd{cmd}"] += 1
            self._need = size

    def _pump(self, src: socket.socket, dst: socket.socket, to_server: bool) -> None:
        try:
            while True:
                data = src.recv(1 << 20)
                if not data:
                    break
                delay = False
                with self.lock:
                    if to_server:
                        self.counts.to_server += len(data)
                        self._client_sent = True
                        self._frames(data)
                    else:
                        self.counts.to_client += len(data)
                        if self._client_sent:
                            self.counts.round_trips += 1
                            self._client_sent = False
                            delay = self.delay_s > 0
                if delay:
                    time.sleep(self.delay_s)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (src, dst):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self.listener.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_port(port: int, proc: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{what}: port {port} did not open in {TIMEOUT_S:g} s")


def _complete(port: int, n_predict: int) -> dict[str, Any]:
    body = json.dumps({"prompt": "the cluster answers over RDMA", "n_predict": n_predict,
                       "ignore_eos": True, "cache_prompt": False, "temperature": 0}).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}/completion", data=body,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
        result: dict[str, Any] = json.loads(response.read())
    return result


def _health(port: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"llama-server exited {proc.returncode}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError("llama-server: not healthy in time")


def measure(bin_dir: Path, model: Path, layers: int, gpu_layers: int, n1: int, n2: int,
            log_dir: Path, delay_ms: float = 0.0, servers: int = 1, split: str = "layer",
            flash_attn: str | None = None) -> dict[str, Any]:
    """One llama-server and `servers` ggml-rpc-servers, each behind its own counting proxy;
    the counts are summed over the servers (per remote node: divide by `servers`)."""
    procs: list[subprocess.Popen[bytes]] = []
    proxies: list[CountingProxy] = []
    logs = contextlib.ExitStack()
    tag = f"{layers}-{gpu_layers}-{servers}-{split}-{flash_attn}-{model.stem}"
    try:
        for index in range(servers):
            rpc_port = _free_port()
            rpc_log = logs.enter_context((log_dir / f"rpc-{tag}-{index}.log").open("wb"))
            procs.append(subprocess.Popen([str(bin_dir / "ggml-rpc-server"), "-H", "127.0.0.1",
                                           "-p", str(rpc_port)], stdout=rpc_log, stderr=subprocess.STDOUT))
            _wait_port(rpc_port, procs[-1], "ggml-rpc-server")
            proxies.append(CountingProxy(rpc_port, delay_ms / 1e3))
        http_port = _free_port()
        server_log = logs.enter_context((log_dir / f"server-{tag}.log").open("wb"))
        rpc = ",".join(f"127.0.0.1:{proxy.port}" for proxy in proxies)
        fa = flash_attn or ("on" if split == "tensor" else None)
        extra = ["-sm", split] + (["-fa", fa] if fa else [])
        procs.append(subprocess.Popen(
            [str(bin_dir / "llama-server"), "-m", str(model), "--rpc", rpc, "-ngl", str(gpu_layers),
             *extra, "--host", "127.0.0.1", "--port", str(http_port), "-c", "256", "-np", "1", "-t", "1",
             "--no-warmup"], stdout=server_log, stderr=subprocess.STDOUT))
        _health(http_port, procs[-1])
        _complete(http_port, 2)  # settle: first-token allocations out of the way

        def total() -> Counts:
            out = Counts()
            for proxy in proxies:
                c = proxy.snapshot()
                out = Counts(out.to_server + c.to_server, out.to_client + c.to_client,
                             out.round_trips + c.round_trips, out.commands + c.commands)
            return out

        before = total()
        short = _complete(http_port, n1)
        middle = total()
        long = _complete(http_port, n2)
        after = total()
        per = after.minus(middle).minus(middle.minus(before))
        tokens = n2 - n1
        return {"layers": layers, "gpu_layers": gpu_layers, "servers": servers, "split": split,
                "tokens": tokens, "delay_ms": delay_ms,
                "round_trips_per_token": per.round_trips / tokens,
                "bytes_to_server_per_token": per.to_server / tokens,
                "bytes_to_client_per_token": per.to_client / tokens,
                "commands_per_token": {k: v / tokens for k, v in sorted(per.commands.items()) if v},
                "llama_ms_per_token": long.get("timings", {}).get("predicted_per_token_ms"),
                "short_ms_per_token": short.get("timings", {}).get("predicted_per_token_ms")}
    finally:
        for proc in reversed(procs):  # only the processes this script started, by their handle
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        for proxy in proxies:
            proxy.close()
        logs.close()


def fit(points: list[tuple[float, float]]) -> tuple[float, float]:
    """Least squares y = a + b x."""
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    b = sum((x - mx) * (y - my) for x, y in points) / sxx if sxx else 0.0
    return my - b * mx, b


def fit_quadratic(points: list[tuple[float, float]]) -> tuple[float, float, float]:
    """Least squares y = a + b x + c x^2 (normal equations, 3 x 3)."""
    sums = [sum(x**k for x, _ in points) for k in range(5)]
    rhs = [sum(y * x**k for x, y in points) for k in range(3)]
    m = [[sums[i + j] for j in range(3)] + [rhs[i]] for i in range(3)]
    for col in range(3):
        pivot = max(range(col, 3), key=lambda r: abs(m[r][col]))
        m[col], m[pivot] = m[pivot], m[col]
        for r in range(3):
            if r != col and m[col][col]:
                f = m[r][col] / m[col][col]
                m[r] = [v - f * w for v, w in zip(m[r], m[col], strict=True)]
    a, b, c = (m[i][3] / m[i][i] if m[i][i] else 0.0 for i in range(3))
    return a, b, c


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--layers", default="2,4,8,16")
    parser.add_argument("--n1", type=int, default=8)
    parser.add_argument("--n2", type=int, default=40)
    parser.add_argument("--delay-ms", type=float, default=2.0,
                        help="also run with this much added to every reply that ends a wait "
                        "(0: skip): the ms per token it adds, divided by it, is the number of "
                        "waits per token that the link's RTT multiplies")
    parser.add_argument("--no-tensor", action="store_true",
                        help="skip the runs over 2 RPC servers (-sm layer and -sm tensor)")
    parser.add_argument("--fa-moe", action="store_true",
                        help="also run with flash attention on, dense and MoE (8 experts, 2 used), half "
                        "of the layers remote: FLASH_ATTN_EXT and MUL_MAT_ID nodes are the ones RPC "
                        "protocol 3.6.0-5.1.0 re-queried with GET_ALLOC_SIZE whenever it allocated a graph")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    bin_dir = build()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for layers in (int(x) for x in args.layers.split(",")):
            model = write_tiny_model(Path(tmp) / f"tiny-{layers}.gguf", layers=layers)
            for gpu_layers, layout in ((99, "all layers remote"), (layers // 2, "half remote")):
                if gpu_layers == 0:
                    continue
                row = measure(bin_dir, model, layers, gpu_layers, args.n1, args.n2, Path(tmp))
                row["layout"] = layout
                row["remote_layers"] = min(gpu_layers, layers)
                if args.delay_ms > 0:
                    slow = measure(bin_dir, model, layers, gpu_layers, args.n1, args.n2, Path(tmp),
                                   args.delay_ms)
                    if row["llama_ms_per_token"] and slow["llama_ms_per_token"]:
                        row["delayed_ms_per_token"] = slow["llama_ms_per_token"]
                        row["waits_per_token"] = ((slow["llama_ms_per_token"] - row["llama_ms_per_token"])
                                                  / args.delay_ms)
                rows.append(row)
                waits = row.get("waits_per_token")
                print(f"{layers:>3} layers, {layout:<17}: {row['round_trips_per_token']:5.2f} round trips, "
                      f"{row['bytes_to_server_per_token']:7.0f} B out, "
                      f"{row['bytes_to_client_per_token']:6.0f} B back per token, "
                      f"{row['llama_ms_per_token'] or 0:.2f} ms/token"
                      + (f", +{args.delay_ms:g} ms per reply -> {row['delayed_ms_per_token']:.2f} ms/token "
                         f"({waits:.2f} waits per token)" if waits is not None else "")
                      + f"; {json.dumps(row['commands_per_token'])}", flush=True)
        if args.fa_moe:
            for layers in (int(x) for x in args.layers.split(",")):
                for kind, experts in (("dense", 0), ("MoE", 8)):
                    model = write_tiny_model(Path(tmp) / f"tiny-{layers}-{kind}.gguf", layers=layers,
                                             experts=experts)
                    row = measure(bin_dir, model, layers, max(1, layers // 2), args.n1, args.n2, Path(tmp),
                                  flash_attn="on")
                    row["layout"] = f"half remote, -fa on, {kind}"
                    row["remote_layers"] = max(1, layers // 2)
                    rows.append(row)
                    print(f"{layers:>3} layers, {row['layout']:<26}: {row['round_trips_per_token']:5.2f} "
                          f"round trips, {row['bytes_to_server_per_token']:7.0f} B out, "
                          f"{row['bytes_to_client_per_token']:6.0f} B back per token; "
                          f"{json.dumps(row['commands_per_token'])}", flush=True)
        if not args.no_tensor:
            for layers in (int(x) for x in args.layers.split(",")):
                model = Path(tmp) / f"tiny-{layers}.gguf"
                for split in ("layer", "tensor"):
                    row = measure(bin_dir, model, layers, 99, args.n1, args.n2, Path(tmp), servers=2,
                                  split=split)
                    row["layout"] = f"2 RPC servers, -sm {split}"
                    row["remote_layers"] = layers
                    rows.append(row)
                    per_server = row["round_trips_per_token"] / 2
                    print(f"{layers:>3} layers, 2 servers -sm {split:<6}: {per_server:5.1f} round trips per "
                          f"server, {row['bytes_to_server_per_token'] / 2:9.0f} B out per server per token, "
                          f"{row['llama_ms_per_token'] or 0:.2f} ms/token; "
                          f"{json.dumps(row['commands_per_token'])}", flush=True)
    for layout in ("all layers remote", "half remote", "2 RPC servers, -sm layer",
                   "2 RPC servers, -sm tensor"):
        mine = [r for r in rows if r["layout"] == layout]
        if len(mine) < 2:
            continue
        servers = mine[0].get("servers", 1)
        a, b = fit([(r["remote_layers"], r["round_trips_per_token"] / servers) for r in mine])
        c, d = fit([(r["remote_layers"], (r["bytes_to_server_per_token"] + r["bytes_to_client_per_token"])
                     / servers) for r in mine])
        print(f"{layout}: round trips per token and server = {a:.2f} + {b:.3f} x layers; "
              f"bytes = {c:.0f} + {d:.1f} x layers (a straight-line fit)")
        if len(mine) >= 3 and layout.endswith("tensor"):
            q = fit_quadratic([(r["remote_layers"], r["bytes_to_server_per_token"] / servers) for r in mine])
            print(f"{layout}: bytes out per token and server = {q[0]:.0f} + {q[1]:.0f} x layers + "
                  f"{q[2]:.0f} x layers^2 (each piece of the graph is serialized with every tensor it "
                  "reaches, across the earlier pieces: ggml-rpc.cpp serialize_graph/add_tensor)")
    if args.json:
        args.json.write_text(json.dumps({"pid": os.getpid(), "rows": rows}, indent=2) + "\n",
                             encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

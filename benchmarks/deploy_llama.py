"""Benchmark: `deploy --stack llama-rpc` on the namespace lab with REAL llama.cpp programs.

The same parts as tests/test_deploy_llama_lab.py: `ggml-rpc-server` and `llama-server` built
from the llama.cpp tree in the llama-cpp-python sdist (scripts/build_llama.sh, cached), a tiny
random-weight GGUF (tests/support/llama_parts.py), two lab nodes (node0: head, llama-server and an RPC
server; node1: an RPC server), TCP over the lab's veth fabric. Per run it times:
- time to a working cluster: `deploy --apply --yes` until its smoke test has a completion back
  (start both RPC servers, start llama-server, wait for /health, one completion, read the logs);
- completion latency: `--completions` requests of `--tokens` tokens each to llama-server's
  /completion, sent from inside the head's namespace (client-side wall time, and llama.cpp's
  own prompt and generation timings);
- the rollback: `deploy --rollback --yes` until nothing is left running.
Needs root (network namespaces). Not a test: this 2-core machine is shared and noisy, and the
tiny model measures the orchestration and the RPC path, not a real model's speed.

    python benchmarks/deploy_llama.py [--runs 3] [--completions 10] [--tokens 16]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.lab import Lab, require_lab_tools, sweep_stale_labs
from tests.support.llama_parts import build, write_tiny_model

RUN_TIMEOUT_S = 300.0
#: Run in the head's namespace: N completions of T tokens, one JSON line of timings.
CLIENT = r"""import json, sys, time, urllib.request
url, n, tokens = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
out = []
for i in range(n):
    body = json.dumps({"prompt": "Hello over the fabric", "n_predict": tokens, "seed": i,
                       "cache_prompt": False}).encode()
    request = urllib.request.Request(url + "/completion", body, {"Content-Type": "application/json"})
    started = time.monotonic()
    with urllib.request.urlopen(request, timeout=60) as r:
        answer = json.load(r)
    timings = answer.get("timings", {})
    out.append({"wall_ms": (time.monotonic() - started) * 1000,
                "tokens": answer.get("tokens_predicted"),
                "prompt_ms": timings.get("prompt_ms"), "predicted_ms": timings.get("predicted_ms"),
                "predicted_per_second": timings.get("predicted_per_second")})
print(json.dumps(out))
"""


def cli(*args: str, state: Path) -> tuple[float, dict[str, object]]:
    argv = [sys.executable, "-m", "strixwizard", "deploy", *args, "--json"]
    env = {**os.environ, "XDG_STATE_HOME": str(state)}
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, env=env,
                          check=False)
    took = time.perf_counter() - start
    try:
        doc = json.loads(done.stdout)
    except ValueError:
        raise SystemExit(f"deploy printed no JSON (exit {done.returncode}):\n{done.stderr[-2000:]}"
                         ) from None
    if done.returncode != 0:
        raise SystemExit(f"deploy {' '.join(args)} exited {done.returncode}:\n"
                         f"{json.dumps(doc, indent=1)[:3000]}")
    return took, doc


def median_ms(values: list[float]) -> str:
    return f"{statistics.median(values):.0f} ms (min {min(values):.0f}, max {max(values):.0f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--completions", type=int, default=10)
    parser.add_argument("--tokens", type=int, default=16)
    args = parser.parse_args()
    require_lab_tools()
    sweep_stale_labs()
    built = build()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
          f"{os.cpu_count()} CPUs; llama.cpp binaries from {built}")
    up, wall, rolled, served = [], [], [], []
    rates: list[float] = []
    with tempfile.TemporaryDirectory(prefix="strixwizard-bench-", dir="/tmp") as tmp, \
            Lab(Path(tmp), 2) as lab:
        work = Path(tmp)
        bins = work / "llama-bin"
        bins.mkdir()
        for name in ("ggml-rpc-server", "llama-server"):
            shutil.copy2(built / name, bins / name)
        head, worker = lab.hosts
        for name in ("ggml-rpc-server", "llama-server"):
            (head.bin_dir / name).symlink_to(bins / name)
        (worker.bin_dir / "ggml-rpc-server").symlink_to(bins / "ggml-rpc-server")
        model = write_tiny_model(work / "tiny.gguf")
        site = lab.write_site_yaml(work / "lab.yaml")
        common = ("--site", str(site), "--stack", "llama-rpc", "--transport", "tcp",
                  "--target-dir", "/root/strixwizard-etc", "--llama-run-dir", "/root/llama-run",
                  "--node-journal-dir", "/root/strixwizard-journal")
        for run in range(args.runs):
            took, doc = cli(*common, "--gguf", str(model), "--rpc-on-head", "--apply", "--yes",
                            state=work / "state")
            smoke = {c["id"]: c for c in doc["smoke"]["checks"]}  # type: ignore[index]
            if smoke["llama.completion"]["status"] != "pass":
                raise SystemExit(f"the smoke test did not pass: {smoke}")
            up.append(took * 1000)
            served.append(smoke["llama.completion"]["observed"])
            url = f"http://{head.fabric_addr}:8080"
            done = head.run_in_ns(["python3", "-c", CLIENT, url, str(args.completions),
                                   str(args.tokens)], check=True, timeout=RUN_TIMEOUT_S)
            for item in json.loads(done.stdout):
                wall.append(item["wall_ms"])
                if isinstance(item.get("predicted_per_second"), (int, float)):
                    rates.append(item["predicted_per_second"])
            took, _ = cli("--rollback", doc["apply"]["run_id"], "--yes",  # type: ignore[index]
                          state=work / "state")
            rolled.append(took * 1000)
            print(f"run {run + 1}: up {up[-1]:.0f} ms, smoke: {served[-1]}, rollback "
                  f"{rolled[-1]:.0f} ms", flush=True)
    print(f"time to a working llama.cpp RPC cluster (2 lab nodes, 2 RPC servers, tiny model, "
          f"TCP): {median_ms(up)} over {args.runs} runs")
    print(f"completion latency ({args.tokens} tokens, tiny model, client wall time): "
          f"{median_ms(wall)} over {len(wall)} requests")
    if rates:
        print(f"llama.cpp generation rate (its own timings): median {statistics.median(rates):.0f} "
              f"tokens/s")
    print(f"rollback until nothing runs: {median_ms(rolled)}")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()

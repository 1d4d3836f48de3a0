"""Benchmark of the `deploy --serve` ORCHESTRATION with a STAND-IN vLLM (NOT vLLM).

vLLM cannot run on this machine (no GPU, no ROCm), so `vllm` on the lab's head is
tests/support/standin_openai.py, a stdlib OpenAI-compatible server, next to the STAND-IN `ray` and
`mpirun` of the Ray deploy tests. Every figure printed here times strixwizard's own work (SSH
executor, journal, launcher, the /health wait, the streamed completion's plumbing, the
rollback) around a server that answers instantly; none of it says anything about vLLM's
speed on Strix Halo. The stand-in's "load time" and per-token delay are set by --load-s and
--token-ms.

    python benchmarks/deploy_serve_standin.py [--runs 3] [--load-s 2] [--token-ms 5]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.lab import Lab, require_lab_tools, sweep_stale_labs

ROOT = Path(__file__).resolve().parent.parent

RUN_TIMEOUT_S = 300.0
DATA = ROOT / "tests" / "data"
MPIRUN = f"""#!/bin/sh
# STAND-IN for mpirun: the all_reduce_perf log RCCL prints over TCP sockets (NET/Socket).
cat {DATA / "live" / "all_reduce_perf_gfx1151_net_socket.txt"}
"""


def cli(*args: str, state: Path) -> tuple[float, dict[str, object]]:
    argv = [sys.executable, "-m", "strixwizard", "deploy", *args, "--json"]
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False,
                          env={**os.environ, "XDG_STATE_HOME": str(state)})
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"deploy {' '.join(args)} exited {done.returncode}:\n"
                         f"{done.stdout[-3000:]}\n{done.stderr[-2000:]}")
    return took, json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--load-s", type=float, default=2.0, help="the stand-in's load time")
    parser.add_argument("--token-ms", type=float, default=5.0, help="the stand-in's delay per token")
    args = parser.parse_args()
    require_lab_tools()
    sweep_stale_labs()
    up, health, ttft, rates, rolled = [], [], [], [], []
    with tempfile.TemporaryDirectory(prefix="strixwizard-bench-", dir="/tmp") as tmp, \
            Lab(Path(tmp), 2) as lab:
        work = Path(tmp)
        for host in lab.hosts:
            host.stand_in("ray", (DATA / "deploy" / "standins" / "ray").read_text())
            host.stand_in("mpirun", MPIRUN)
        head = lab.hosts[0]
        stand_in = ROOT / "tests" / "support" / "standin_openai.py"
        head.stand_in("vllm", f'#!/bin/sh\nexec python3 {stand_in} "$@"\n')
        (head.home / "standin-vllm.json").write_text(json.dumps(
            {"load_s": args.load_s, "token_ms": args.token_ms}))
        site = lab.write_site_yaml(work / "lab.yaml")
        common = ("--site", str(site), "--transport", "tcp", "--target-dir", "/root/strixwizard-etc",
                  "--node-journal-dir", "/root/strixwizard-journal",
                  "--serve-run-dir", "/root/strixwizard-vllm")
        for run in range(args.runs):
            took, doc = cli(*common, "--serve", "--model", "stand-in/tiny", "--apply", "--yes",
                            state=work / "state")
            smoke = {c["id"]: c["observed"] for c in doc["smoke"]["checks"]}  # type: ignore[index]
            up.append(took * 1000)
            if m := re.search(r"after ([\d.]+) s", smoke["vllm.health"]):
                health.append(float(m.group(1)) * 1000)
            if m := re.search(r"first after (\d+) ms", smoke["vllm.completion"]):
                ttft.append(float(m.group(1)))
            if m := re.search(r"([\d.]+) tokens/s", smoke["vllm.completion"]):
                rates.append(float(m.group(1)))
            took, _ = cli("--rollback", doc["apply"]["run_id"], "--yes",  # type: ignore[index]
                          state=work / "state")
            rolled.append(took * 1000)
            print(f"run {run + 1} (STAND-IN vllm): deploy --serve --apply {up[-1]:.0f} ms; "
                  f"{smoke['vllm.health']}; {smoke['vllm.completion']}; rollback {rolled[-1]:.0f} ms",
                  flush=True)
    print(f"STAND-IN vllm (not vLLM), load {args.load_s:g} s, {args.token_ms:g} ms/token, 2 lab "
          f"nodes with stand-in ray: deploy --serve --apply incl. smoke median "
          f"{statistics.median(up):.0f} ms; /health seen {statistics.median(health):.0f} ms after "
          f"the apply; TTFT {statistics.median(ttft):.0f} ms; {statistics.median(rates):.0f} "
          f"tokens/s (the stand-in's own pace); rollback {statistics.median(rolled):.0f} ms")


if __name__ == "__main__":
    main()

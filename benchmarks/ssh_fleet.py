"""Benchmark: `doctor --site lab.yaml --json` over the SSH lab at 1, 4 and 16 hosts.

Builds the lab (network namespaces, one real sshd each; needs root), runs the
whole doctor process several times per size, and prints the median wall time,
the ratio t(16)/t(1) (aim: <= 4 on a 2-core machine) and how many SSH execs
each node's sshd logged per run (it must be exactly one).

    python benchmarks/ssh_fleet.py [--runs 5] [--sizes 1,4,16]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.lab import Lab, require_lab_tools, sweep_stale_labs


def measure(size: int, runs: int) -> tuple[float, set[int]]:
    with tempfile.TemporaryDirectory(prefix="strixwizard-bench-", dir="/tmp") as tmp, \
            Lab(Path(tmp), size) as lab:
        site = lab.write_site_yaml(Path(tmp) / "lab.yaml")
        argv = [sys.executable, "-m", "strixwizard", "doctor", "--site", str(site), "--json"]
        subprocess.run(argv, capture_output=True, check=False)  # warm-up
        times = []
        per_node_execs: set[int] = set()
        for _ in range(runs):
            before = [h.exec_count() for h in lab.hosts]
            start = time.perf_counter()
            done = subprocess.run(argv, capture_output=True, text=True, check=False)
            times.append(time.perf_counter() - start)
            if done.returncode == 2:
                raise SystemExit(f"doctor gave no verdict:\n{done.stdout}\n{done.stderr}")
            per_node_execs |= {h.exec_count() - b for h, b in zip(lab.hosts, before, strict=True)}
        return statistics.median(times), per_node_execs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--sizes", default="1,4,16")
    args = parser.parse_args()
    require_lab_tools()
    sweep_stale_labs()
    sizes = [int(s) for s in args.sizes.split(",")]
    results = {}
    for size in sizes:
        median, execs = measure(size, args.runs)
        results[size] = median
        print(f"{size:3d} hosts: {median * 1000:7.1f} ms median of {args.runs}; "
              f"SSH execs per node per run: {sorted(execs)}")
    if 1 in results and 16 in results:
        print(f"t(16)/t(1) = {results[16] / results[1]:.2f}  (aim <= 4)")


if __name__ == "__main__":
    main()

"""Benchmark: `doctor --site lab.yaml --json` over the SSH lab at 1, 16 and 64 hosts.

Builds the lab (network namespaces, one real sshd each; needs root), runs the whole
doctor process several times per size and, for every run, counts the hosts the report
says were reached: every lab host is up, so each one marked unreachable is a false
"unreachable" (its reason is printed). Reports the median wall time, the head-side CPU
(doctor's user+system time) and its cost per extra node, the ratio t(16)/t(1), and how
many SSH execs each node's sshd logged per run (it must be exactly one).

    python benchmarks/ssh_fleet.py [--runs 5] [--sizes 1,16,64] [--runs-at-64 10]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.lab import MAX_HOSTS, Lab, require_lab_tools, sweep_stale_labs

RUN_TIMEOUT_S = 300.0  # one doctor run; a bound, never reached by a healthy lab


@dataclass
class SizeResult:
    size: int
    times: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    reached: list[int] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    execs: set[int] = field(default_factory=set)

    @property
    def false_unreachable(self) -> int:
        return sum(self.size - r for r in self.reached)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(size: int, runs: int) -> SizeResult:
    result = SizeResult(size)
    with tempfile.TemporaryDirectory(prefix="strixwizard-bench-", dir="/tmp") as tmp, \
            Lab(Path(tmp), size) as lab:
        site = lab.write_site_yaml(Path(tmp) / "lab.yaml")
        argv = [sys.executable, "-m", "strixwizard", "doctor", "--site", str(site), "--json"]
        subprocess.run(argv, capture_output=True, check=False, timeout=RUN_TIMEOUT_S)  # warm-up
        for _ in range(runs):
            before = [h.exec_count() for h in lab.hosts]
            cpu_before = _children_cpu()
            start = time.perf_counter()
            done = subprocess.run(argv, capture_output=True, text=True, check=False,
                                  timeout=RUN_TIMEOUT_S)
            result.times.append(time.perf_counter() - start)
            result.cpu.append(_children_cpu() - cpu_before)
            try:
                hosts = json.loads(done.stdout)["hosts"]
            except (ValueError, KeyError):
                raise SystemExit(f"doctor printed no report (exit {done.returncode}):\n"
                                 f"{done.stdout[:2000]}\n{done.stderr[:2000]}") from None
            result.reached.append(sum(1 for h in hosts if h.get("reachable")))
            result.reasons += [f"{h['name']}: {h.get('error')}" for h in hosts if not h.get("reachable")]
            result.execs |= {h.exec_count() - b for h, b in zip(lab.hosts, before, strict=True)}
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--runs-at-64", type=int, default=10, help="runs at sizes of 64 and more")
    parser.add_argument("--sizes", default="1,16,64")
    args = parser.parse_args()
    require_lab_tools()
    sweep_stale_labs()
    sizes = [int(s) for s in args.sizes.split(",")]
    if any(not 1 <= s <= MAX_HOSTS for s in sizes):
        raise SystemExit(f"sizes must be in 1..{MAX_HOSTS}")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
          f"{os.cpu_count()} CPUs")
    results: dict[int, SizeResult] = {}
    for size in sizes:
        runs = args.runs_at_64 if size >= 64 else args.runs
        r = measure(size, runs)
        results[size] = r
        print(f"{size:3d} hosts: {statistics.median(r.times) * 1000:7.1f} ms median of {runs} "
              f"(min {min(r.times) * 1000:.0f}, max {max(r.times) * 1000:.0f}); "
              f"head CPU {statistics.median(r.cpu) * 1000:.0f} ms; "
              f"reached {min(r.reached)}-{max(r.reached)} of {size}, "
              f"false unreachable {r.false_unreachable} in {runs} runs; "
              f"SSH execs per node per run: {sorted(r.execs)}", flush=True)
        for reason in r.reasons[:10]:
            print(f"      unreachable: {reason}")
    if 1 in results and 16 in results:
        print(f"t(16)/t(1) = {statistics.median(results[16].times) / statistics.median(results[1].times):.2f}"
              "  (aim <= 4)")
    big = max(results)
    if 1 in results and big > 1:
        per_node = (statistics.median(results[big].cpu) - statistics.median(results[1].cpu)) / (big - 1)
        print(f"head CPU per extra node (1 -> {big}): {per_node * 1000:.1f} ms  (aim < 10 ms)")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if any(r.false_unreachable for r in results.values()):
        raise SystemExit(1)


if __name__ == "__main__":
    main()

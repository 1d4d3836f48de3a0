"""Benchmark: `strixwizard doctor --demo --json`, whole process, against `import yaml`.

Prints the median wall time of each over several runs and their ratio. Aim:
doctor under 0.5 s and the ratio under 8. Not a test: this machine is noisy.

    python benchmarks/doctor_startup.py [--runs 15]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time


def _median_seconds(argv: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    python = sys.executable
    _median_seconds([python, "-m", "strixwizard", "doctor", "--demo", "--json"], 2)  # warm caches
    doctor = _median_seconds([python, "-m", "strixwizard", "doctor", "--demo", "--json"], args.runs)
    baseline = _median_seconds([python, "-c", "import yaml"], args.runs)
    print(f"doctor --demo --json : {doctor * 1000:7.1f} ms (median of {args.runs})")
    print(f"python -c 'import yaml': {baseline * 1000:7.1f} ms (median of {args.runs})")
    print(f"ratio                : {doctor / baseline:7.2f}  (aim: < 8; doctor aim: < 500 ms)")


if __name__ == "__main__":
    main()

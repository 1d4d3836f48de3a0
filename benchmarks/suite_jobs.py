"""How many pytest-xdist workers the parallel tiers should use on this machine: runs one tier
(unit by default) with each worker count in turn, REPEAT times, and prints each run's wall
time and outcome, then the median per count. scripts/test.sh keeps the fastest count that
never failed (STRIXWIZARD_TEST_JOBS overrides it).

    python benchmarks/suite_jobs.py [--tier unit|lab|llama] [--jobs 2 3 auto] [--repeat 1]

Results: benchmarks/test_suite.md.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: the same selections as scripts/test.sh
SELECTIONS = {
    "unit": "not lab and not vm and not pythons and not llama",
    "lab": "lab and not llama and not vm and not pythons",
    "llama": "llama and not vm and not pythons",
}


def run_once(tier: str, jobs: str) -> tuple[float, int, str]:
    """One pytest run of the tier; (wall seconds, exit code, pytest's closing line)."""
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", jobs,
            "-m", SELECTIONS[tier]]
    started = time.monotonic()
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=3600, check=False)
    seconds = time.monotonic() - started
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    return seconds, done.returncode, (lines[-1] if lines else done.stderr.strip()[-200:])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tier", choices=sorted(SELECTIONS), default="unit")
    parser.add_argument("--jobs", nargs="+", default=["2", "3", "auto"])
    parser.add_argument("--repeat", type=int, default=1, choices=range(1, 11), metavar="1-10")
    args = parser.parse_args()
    times: dict[str, list[float]] = {jobs: [] for jobs in args.jobs}
    for round_ in range(1, args.repeat + 1):
        for jobs in args.jobs:
            seconds, code, closing = run_once(args.tier, jobs)
            times[jobs].append(seconds)
            print(f"round {round_}  -n {jobs:<5} {seconds:7.1f} s  exit {code}  {closing}", flush=True)
    for jobs, seconds in times.items():
        print(f"-n {jobs:<5} median {statistics.median(seconds):7.1f} s over {len(seconds)} run(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark: how long each run level takes, `doctor --level quick|full` and
`test latency --level quick|medium|long`, whole processes as a user runs them.

On the demo (snapshots; TCP for real on loopback, RDMA replayed), on this machine
(`doctor` with no site: the real collection, package queries included) and, with `--lab`
(root), between two nodes of a namespace lab over SSH (TCP only: the lab has no RDMA).
Prints the median wall-clock seconds of `--runs` runs each. A figure, not a pass/fail test.

    python benchmarks/levels.py [--runs 3] [--lab]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def median_seconds(argv: list[str], runs: int, state: str) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "strixwizard", *argv], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=False, timeout=900,
                       env={"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                            "XDG_STATE_HOME": state, "HOME": state})
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def report(label: str, argv: list[str], runs: int, state: str) -> None:
    print(f"{label:<48} {median_seconds(argv, runs, state):7.2f} s  (median of {runs})", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--lab", action="store_true", help="also on a 2-node namespace lab (root)")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="strixwizard-levels-") as state:
        for level in ("quick", "full"):
            report(f"doctor --demo --level {level}", ["doctor", "--demo", "--level", level],
                   options.runs, state)
        for level in ("quick", "full"):
            report(f"doctor --level {level} (this machine)", ["doctor", "--level", level],
                   options.runs, state)
        for level in ("quick", "medium", "long"):
            report(f"test latency --demo --level {level}",
                   ["test", "latency", "--demo", "--level", level, "--no-history"], options.runs, state)
        if options.lab:
            from tests.support.lab import Lab, require_lab_tools, sweep_stale_labs

            require_lab_tools()
            sweep_stale_labs()
            with tempfile.TemporaryDirectory() as work, Lab(Path(work), 2) as lab:
                site = str(lab.write_site_yaml(Path(work) / "lab.yaml"))
                for level in ("quick", "full"):
                    report(f"doctor --level {level} (lab, SSH)",
                           ["doctor", "--site", site, "--level", level], options.runs, state)
                for level in ("quick", "medium", "long"):
                    report(f"test latency --level {level} (lab, SSH, TCP)",
                           ["test", "latency", "--site", site, "--level", level, "--transport",
                            "tcp", "--no-history"], options.runs, state)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Benchmark: `strixwizard deploy` with the real Ray on the 3-node namespace lab (root only).

Per run: `deploy --apply` (Ray head then workers on their fabric addresses, journalled,
then the smoke: every node in the cluster, one pinned task per node reporting its
environment) until it returns a passing smoke, i.e. the time to a working cluster; then
`deploy --smoke` alone on the formed cluster; then `deploy --rollback`. Prints the median,
min and max of each over the runs. Not a test: this machine is shared and noisy.

    python benchmarks/ray_lab.py [--runs 3] [--nodes 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.lab import Lab, require_lab_tools, sweep_stale_labs

RAY = Path(sys.executable).parent / "ray"
DATA = Path(__file__).resolve().parents[1] / "tests" / "data"
OPTIONS = ("--transport", "tcp", "--target-dir", "/root/strixwizard-etc",
           "--node-journal-dir", "/root/strixwizard-journal", "--ray-temp-dir",
           "/root/strixwizard-ray", "--ray-num-cpus", "1", "--ray-object-store-bytes",
           str(80 * 1024 * 1024))
MPIRUN_STAND_IN = f"""#!/bin/sh
# STAND-IN for mpirun (no GPU here): a recorded RCCL log over sockets.
cat {DATA / "live" / "all_reduce_perf_gfx1151_net_socket.txt"}
"""


def _deploy(site: Path, state: Path, *args: str) -> tuple[float, dict[str, object]]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "strixwizard", "deploy", "--site", str(site),
                           *OPTIONS, *args, "--json"], capture_output=True, text=True,
                          timeout=300, env=dict(os.environ, XDG_STATE_HOME=str(state)),
                          stdin=subprocess.DEVNULL, check=False)
    took = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"deploy {' '.join(args)} exited {done.returncode}:\n{done.stdout}\n"
                         f"{done.stderr}")
    return took, json.loads(done.stdout)


def _summary(name: str, values: list[float]) -> str:
    return (f"{name:34} median {statistics.median(values):5.1f} s   min {min(values):5.1f} s   "
            f"max {max(values):5.1f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--nodes", type=int, default=3, choices=(2, 3))
    args = parser.parse_args()
    if not RAY.exists():
        raise SystemExit(f"the real `ray` is missing ({RAY}): bash scripts/install.sh test")
    require_lab_tools()
    sweep_stale_labs()
    times: dict[str, list[float]] = {"apply to a working cluster": [], "smoke alone": [],
                                     "rollback": []}
    with tempfile.TemporaryDirectory(prefix="ray-lab-bench-") as tmp, \
            Lab(Path(tmp) / "lab", args.nodes, fabric="switch") as lab:
        for host in lab.hosts:
            (host.bin_dir / "ray").symlink_to(RAY)
            host.stand_in("mpirun", MPIRUN_STAND_IN)
        site = lab.write_site_yaml(Path(tmp) / "lab.yaml")
        for run in range(args.runs):
            state = Path(tmp) / f"state{run}"
            took, doc = _deploy(site, state, "--apply", "--yes")
            assert doc["status"] == "deployed", doc
            times["apply to a working cluster"].append(took)
            took, _ = _deploy(site, state, "--smoke")
            times["smoke alone"].append(took)
            apply = doc["apply"]
            assert isinstance(apply, dict)
            took, _ = _deploy(site, state, "--rollback", str(apply["run_id"]), "--yes")
            times["rollback"].append(took)
            print(f"run {run + 1}: " + ", ".join(f"{k} {v[-1]:.1f} s" for k, v in times.items()),
                  flush=True)
    print(f"\nreal Ray {args.nodes}-node lab, {args.runs} runs (2 shared cores):")
    for name, values in times.items():
        print(_summary(name, values))


if __name__ == "__main__":
    main()

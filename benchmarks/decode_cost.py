"""Benchmark: what `strixwizard test decode` costs for one pair with default settings.

Runs the real command (a separate process, as a user would) on the demo, several times and
for a few catalog models: the RCCL all-reduce replayed, our TCP ping-pong for real on
loopback at every decode size. With `--lab` also between two nodes of a namespace lab over
SSH (needs root). Prints the wall-clock seconds of each run and the median; the bound the
issue sets is 30 s for one pair. A figure, not a pass/fail test.

    python benchmarks/decode_cost.py [--runs 3] [--lab] [--calibrate]

`--calibrate` (root) times only `test decode --calibrate` on the lab: node0 runs the real
llama-server (scripts/build_llama.sh) on a tiny GGUF through its node session.
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

MODELS = ("Llama-3.1-70B", "Qwen3-235B-A22B", "gpt-oss-120b")
BOUND_S = 30.0


def timed(args: list[str]) -> float:
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "strixwizard", "test", "decode", *args],
                          capture_output=True, text=True, timeout=120, check=False, cwd=ROOT)
    elapsed = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"test decode {' '.join(args)} failed ({done.returncode}): {done.stderr[-500:]}")
    return elapsed


def report(label: str, seconds: list[float]) -> None:
    median = statistics.median(seconds)
    runs = ", ".join(f"{s:.1f}" for s in seconds)
    print(f"{label:<48} median {median:5.1f} s  (runs {runs}; bound {BOUND_S:g} s)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--lab", action="store_true", help="also on a 2-node namespace lab (root)")
    parser.add_argument("--calibrate", action="store_true",
                        help="only `test decode --calibrate` on a 2-node namespace lab (root)")
    options = parser.parse_args()
    if options.calibrate:
        return calibrate_on_lab(options.runs)
    for model in MODELS:
        report(f"demo, {model}, defaults", [timed(["--demo", "--model", model])
                                             for _ in range(options.runs)])
    report("demo, Llama-3.1-70B, --batch 32", [timed(["--demo", "--batch", "32"])
                                               for _ in range(options.runs)])
    if options.lab:
        from tests.support.lab import Lab, require_lab_tools, sweep_stale_labs

        require_lab_tools()
        sweep_stale_labs()
        with tempfile.TemporaryDirectory() as work, Lab(Path(work), 2) as lab:
            site = lab.write_site_yaml(Path(work) / "lab.yaml")
            for model in MODELS:
                report(f"lab (SSH, TCP only), {model}, defaults",
                       [timed(["--site", str(site), "--pair", "node0,node1", "--no-history",
                               "--model", model]) for _ in range(options.runs)])
    return 0


def calibrate_on_lab(runs: int) -> int:
    import shutil

    from tests.support.lab import Lab, require_lab_tools, sweep_stale_labs
    from tests.support.llama_parts import build, write_tiny_model

    require_lab_tools()
    sweep_stale_labs()
    with tempfile.TemporaryDirectory() as work, Lab(Path(work) / "lab", 2) as lab:
        bin_dir = Path(work) / "bin"  # out of /root: lab sessions see their own /root
        bin_dir.mkdir()
        shutil.copy2(build() / "llama-server", bin_dir / "llama-server")
        model = write_tiny_model(Path(work) / "tiny.gguf", layers=4)
        site = lab.write_site_yaml(Path(work) / "lab.yaml")
        report("lab, --calibrate (real llama-server, tiny GGUF)",
               [timed(["--site", str(site), "--pair", "node0,node1", "--no-history", "--transport", "tcp",
                       "--calibrate", "--model", str(model), "--llama-bin-dir", str(bin_dir)])
                for _ in range(runs)])
    return 0


if __name__ == "__main__":
    sys.exit(main())

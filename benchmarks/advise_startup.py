"""Benchmark: `strixwizard advise`, whole process, for a catalog model, explicit shapes and a
GGUF file, every named interconnect, 1 and 2 nodes, text and --json. Aim: under 1 s each.
Not a test: this machine is noisy.

    python benchmarks/advise_startup.py [--runs 11]
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


def _times(argv: list[str], runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False,
                              timeout=60)
        out.append(time.perf_counter() - start)
        if done.returncode != 0:
            raise SystemExit(f"{argv}: exit {done.returncode}: {done.stderr.decode()[-500:]}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=11)
    args = parser.parse_args()
    from tests.llama_parts import write_tiny_model

    base = [sys.executable, "-m", "strixwizard", "advise"]
    with tempfile.TemporaryDirectory() as tmp:
        gguf = write_tiny_model(Path(tmp) / "tiny.gguf", layers=4)
        cases = {
            "--model Llama-3.1-70B (catalog), text": ["--model", "Llama-3.1-70B"],
            "--model Qwen3-235B-A22B --nodes 1,2,4 --json": [
                "--model", "Qwen3-235B-A22B", "--nodes", "1,2,4", "--json"],
            "explicit shape (27B Q6_K) --json": [
                "--layers", "64", "--hidden", "5120", "--weight-gib", "20.88", "--json"],
            "--model tiny.gguf (reads the file with gguf) --json": ["--model", str(gguf), "--json"],
        }
        _times([*base, "--model", "Llama-3.1-8B"], 2)  # warm the page cache
        for label, extra in cases.items():
            times = _times([*base, *extra], args.runs)
            print(f"{label:<52} median {statistics.median(times) * 1000:6.0f} ms  "
                  f"max {max(times) * 1000:6.0f} ms  ({args.runs} runs; aim < 1000 ms)")


if __name__ == "__main__":
    main()

"""Benchmark: `strixwizard doctor --demo --json`, whole process, against `import yaml`.

Prints the median wall time of each over several runs and their ratio, and the same for CPU
time (user + system of the child: steadier than wall time on a loaded machine). Aim: the
ratio under 4, doctor under 0.5 s. Not a test: this machine is noisy.

Both run with bytecode, as an installed wheel has it (pip compiles on install): the children
get PYTHONDONTWRITEBYTECODE removed and a private PYTHONPYCACHEPREFIX (a temporary folder,
so nothing is written beside the sources), filled by the warm-up runs. With `--wheel` both run
in a fresh virtualenv with the wheel installed (built from a copy of the tracked sources), as
a user's install has it: no editable-install finder in the way.

    python benchmarks/doctor_startup.py [--runs 15] [--wheel]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _median_seconds(argv: list[str], runs: int, env: dict[str, str]) -> tuple[float, float]:
    """Median wall and CPU seconds of `runs` runs of `argv`."""
    walls, cpus = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False,
                       env=env)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def _wheel_python(work: Path, env: dict[str, str]) -> str:
    """A fresh virtualenv in `work` with the wheel of this checkout installed; its python."""
    root = Path(__file__).resolve().parent.parent
    listed = subprocess.run(["git", "-C", str(root), "ls-files", "-z"], capture_output=True,
                            check=True, timeout=30).stdout.decode().split("\0")
    source = work / "source"
    for name in filter(None, listed):
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / name, source / name)
    steps = [[sys.executable, "-m", "build", "--wheel", "--outdir", str(work / "dist"), str(source)],
             [sys.executable, "-m", "venv", str(work / "venv")]]
    for argv in steps:
        subprocess.run(argv, check=True, capture_output=True, timeout=600, env=env, cwd=work)
    (wheel,) = (work / "dist").glob("*.whl")
    python = str(work / "venv" / "bin" / "python")
    subprocess.run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheel)],
                   check=True, capture_output=True, timeout=600, env=env, cwd=work)
    return python


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--wheel", action="store_true",
                        help="measure an installed wheel in a fresh virtualenv (builds one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="strixwizard-startup-") as work:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        python = _wheel_python(Path(work), env) if args.wheel else sys.executable
        _measure(python, args.runs, os.path.join(work, "pycache"))


def _measure(python: str, runs: int, cache: str) -> None:
    doctor_argv = [python, "-m", "strixwizard", "doctor", "--demo", "--json"]
    yaml_argv = [python, "-c", "import yaml"]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = cache
    for argv in (doctor_argv, yaml_argv):  # warm the OS caches and write the bytecode
        _median_seconds(argv, 2, env)
    doctor, doctor_cpu = _median_seconds(doctor_argv, runs, env)
    baseline, baseline_cpu = _median_seconds(yaml_argv, runs, env)
    print(f"{python}")
    print(f"doctor --demo --json   : {doctor * 1000:7.1f} ms wall, {doctor_cpu * 1000:7.1f} ms CPU "
          f"(medians of {runs})")
    print(f"python -c 'import yaml': {baseline * 1000:7.1f} ms wall, {baseline_cpu * 1000:7.1f} ms CPU")
    print(f"ratio                  : {doctor / baseline:7.2f} wall, {doctor_cpu / baseline_cpu:7.2f} CPU"
          "  (aim: < 4; doctor aim: < 500 ms)")


if __name__ == "__main__":
    main()

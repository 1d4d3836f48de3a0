"""Benchmark: `strixwizard doctor --demo --json`, whole process, against `import yaml`.

Prints the median wall time of each over several runs and their ratio, and the same for CPU
time (user + system of the child: steadier than wall time on a loaded machine). Aim: the
ratio under 4, doctor under 0.5 s. Not a test: this machine is noisy.

Both run with bytecode, as an installed wheel has it (pip compiles on install): the children
get PYTHONDONTWRITEBYTECODE removed and a private PYTHONPYCACHEPREFIX (a temporary folder,
so nothing is written beside the sources), filled by the warm-up runs. With `--wheel` both run
in a fresh virtualenv with the wheel installed (built from a copy of the tracked sources), as
a user's install has it: no editable-install finder in the way.

The two commands run in turn (doctor, import yaml, doctor, ...), so both medians see the same
load. `--instructions` also counts the instructions of one run of each under valgrind's
callgrind: a figure that does not move with the machine's load (the time does, a lot, on a
shared machine), and the ratio of the two.

    python benchmarks/doctor_startup.py [--runs 15] [--wheel] [--instructions]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _median_seconds(argvs: list[list[str]], runs: int, env: dict[str, str]
                    ) -> list[tuple[float, float]]:
    """Median wall and CPU seconds of each of `argvs` over `runs` rounds, one run of each per
    round (in turn, so that each sees the same load)."""
    walls: list[list[float]] = [[] for _ in argvs]
    cpus: list[list[float]] = [[] for _ in argvs]
    for _ in range(runs):
        for index, argv in enumerate(argvs):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False,
                           env=env)
            walls[index].append(time.perf_counter() - start)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus[index].append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return [(statistics.median(w), statistics.median(c)) for w, c in zip(walls, cpus, strict=True)]


def _instructions(argv: list[str], env: dict[str, str], work: str) -> int:
    """Instructions one run of `argv` executes, counted by valgrind's callgrind."""
    log = os.path.join(work, "callgrind.log")
    subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                    f"--log-file={log}", *argv], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=False, env=env, timeout=600)
    with open(log, encoding="utf-8") as handle:
        found = re.search(r"Collected : (\d+)", handle.read())
    if found is None:
        raise SystemExit(f"valgrind counted nothing (see {log})")
    return int(found.group(1))


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
    parser.add_argument("--instructions", action="store_true",
                        help="also count the instructions of one run of each (needs valgrind)")
    args = parser.parse_args()
    if args.instructions and shutil.which("valgrind") is None:
        parser.error("--instructions needs valgrind")
    with tempfile.TemporaryDirectory(prefix="strixwizard-startup-") as work:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        python = _wheel_python(Path(work), env) if args.wheel else sys.executable
        _measure(python, args.runs, work, args.instructions)


def _measure(python: str, runs: int, work: str, instructions: bool) -> None:
    doctor_argv = [python, "-m", "strixwizard", "doctor", "--demo", "--json"]
    yaml_argv = [python, "-c", "import yaml"]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = os.path.join(work, "pycache")
    _median_seconds([doctor_argv, yaml_argv], 2, env)  # warm the OS caches, write the bytecode
    (doctor, doctor_cpu), (baseline, baseline_cpu) = _median_seconds([doctor_argv, yaml_argv],
                                                                      runs, env)
    print(f"{python}")
    print(f"doctor --demo --json   : {doctor * 1000:7.1f} ms wall, {doctor_cpu * 1000:7.1f} ms CPU "
          f"(medians of {runs})")
    print(f"python -c 'import yaml': {baseline * 1000:7.1f} ms wall, {baseline_cpu * 1000:7.1f} ms CPU")
    print(f"ratio                  : {doctor / baseline:7.2f} wall, {doctor_cpu / baseline_cpu:7.2f} CPU"
          "  (aim: < 4; doctor aim: < 500 ms)")
    if instructions:
        doctor_ir, baseline_ir = (_instructions(argv, env, work) for argv in (doctor_argv, yaml_argv))
        print(f"instructions           : {doctor_ir / 1e6:7.1f} M doctor, {baseline_ir / 1e6:7.1f} M "
              f"import yaml, ratio {doctor_ir / baseline_ir:.2f}")


if __name__ == "__main__":
    main()

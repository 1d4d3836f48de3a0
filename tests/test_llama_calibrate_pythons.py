"""The calibration program sent to a node (strixwizard/onnode/llama_calibrate.py) runs on the
node's own python3, 3.8 and up: on each interpreter this machine has, it times the real
llama-server (scripts/build_llama.sh, CPU build) on a tiny GGUF, and says so when the server
is missing. No timing is asserted."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from strixwizard.onnode import llama_calibrate
from tests.support.llama_parts import build, write_tiny_model
from tests.support.pythons import NODE_VERSIONS, available

PYTHONS = available(NODE_VERSIONS)
SOURCE = Path(llama_calibrate.__file__).read_text(encoding="utf-8")


def _run(python: str, *argv: str) -> tuple[int, list[dict[str, object]]]:
    done = subprocess.run([python, "-c", SOURCE, *argv], capture_output=True, text=True, timeout=180,
                          check=False)
    return done.returncode, [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


@pytest.mark.parametrize("version", list(PYTHONS))
def test_the_calibration_runs_on_each_python(version: str, tmp_path: Path) -> None:
    model = write_tiny_model(tmp_path / "tiny.gguf", layers=2)
    code, events = _run(PYTHONS[version], str(build() / "llama-server"), str(model), "99", "8", "120")
    assert code == 0, events
    result = events[-1]
    assert result["event"] == "result" and result["predicted_n"] == 8
    assert isinstance(result["predicted_per_token_ms"], float) and result["predicted_per_token_ms"] > 0


def test_a_missing_server_and_a_missing_model_say_so(tmp_path: Path) -> None:
    python = next(iter(PYTHONS.values()))
    code, events = _run(python, str(tmp_path / "no-llama-server"), "m.gguf", "99", "8", "10")
    assert code == 127 and "is not installed" in str(events[-1]["error"])
    code, events = _run(python, str(build() / "llama-server"), str(tmp_path / "none.gguf"), "99", "8", "60")
    assert code == 3 and "did not become healthy" in str(events[-1]["error"])


def _servers_of(model: Path) -> list[int]:
    """PIDs of processes whose command line names `model` (a path unique to this test)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"llama-server") and str(model).encode() in argv:
            found.append(int(proc.name))
    return found


def test_stopping_the_program_stops_its_llama_server(tmp_path: Path) -> None:
    """Under the real supervisor (as on a node): ending the program ends the server it started."""
    import time

    from strixwizard.node.connect import connect
    from strixwizard.node.target import LocalTarget

    model = write_tiny_model(tmp_path / "tiny-stop.gguf", layers=2)
    host = connect(LocalTarget("this machine"))
    process = host.start([host.python, "-c", SOURCE, str(build() / "llama-server"), str(model), "99",
                          "100000", "120"], 120, "llama-server calibration")
    try:
        deadline = time.monotonic() + 60
        while not _servers_of(model) and time.monotonic() < deadline and not process.ended:
            time.sleep(0.2)
        assert _servers_of(model), "the server never started"
    finally:
        process.stop()
    deadline = time.monotonic() + 15
    while _servers_of(model) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _servers_of(model) == []

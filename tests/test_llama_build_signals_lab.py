"""`deploy --stack llama-rpc --build` stopped by a signal on the head while the build runs on a
namespace lab node: the build ends on the node (no cmake or compiler left in its /proc),
nothing is installed, the output names the state and the exact command to run next, and the
exit status is 128 + the signal. The source is a small CMake project standing in for llama.cpp
whose configure step sleeps (tests/support/llama_parts.py), so the signal lands mid-build; the
real build is the llama tier's (tests/test_doctor_llama_builds_lab.py).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.lab import Lab, LabHost, lab_fixture
from tests.support.llama_parts import stand_in_tree

buildsignals = lab_fixture(1, name="buildsignals")
BUILD_DIR = "/root/llama-build"
INSTALLED = "/root/llama-bin"
NODE_JOURNAL = "/root/strixwizard-journal"
SIGNALS = {"SIGINT": signal.SIGINT, "SIGTERM": signal.SIGTERM, "SIGHUP": signal.SIGHUP}


def sleeping_configure(host: LabHost) -> bool:
    """The stand-in's configure step (`sleep 60`) runs on the node."""
    return any(cmd.startswith("sleep 60") for cmd in host.node_pids().values())


def build_processes(host: LabHost) -> dict[int, str]:
    return {pid: cmd for pid, cmd in host.node_pids().items()
            if cmd.startswith(("sleep 60", "cmake", "make", "cc ", "gcc")) or "llama-build" in cmd}


@pytest.mark.parametrize("name", list(SIGNALS))
def test_a_signal_mid_build_stops_it_on_the_node_with_nothing_installed(
        buildsignals: Lab, tmp_path: Path, name: str) -> None:
    (node,) = buildsignals.hosts
    site = buildsignals.write_site_yaml(tmp_path / "lab.yaml")
    argv = [sys.executable, "-m", "strixwizard", "deploy", "--site", str(site), "--stack",
            "llama-rpc", "--build", str(stand_in_tree(tmp_path, delay=60)), "--build-backend",
            "cpu", "--build-dir", BUILD_DIR, "--llama-bin-dir", INSTALLED, "--apply", "--yes",
            "--journal-dir", str(tmp_path / "journal"), "--node-journal-dir", NODE_JOURNAL]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL,
                            env={**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")})
    try:
        deadline = time.monotonic() + 60
        while not sleeping_configure(node):
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate(timeout=30)
            time.sleep(0.1)
        proc.send_signal(SIGNALS[name])
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 128 + SIGNALS[name], (out, err)
        assert (f"The build on {node.name} was interrupted by {name} on this machine: it was "
                "stopped there and nothing was installed on any node.") in out, (out, err)
        assert f"Next: strixwizard deploy --site {site} --stack llama-rpc --build " in out, out
        assert out.rstrip().endswith("--apply --yes --journal-dir "
                                     f"{tmp_path / 'journal'} --node-journal-dir {NODE_JOURNAL}")
        deadline = time.monotonic() + 15  # the supervisor ends the build's process group
        while build_processes(node) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert build_processes(node) == {}
        assert not (node.home / INSTALLED.removeprefix("/root/")).exists()
        assert (node.home / BUILD_DIR.removeprefix("/root/") / "build.log").is_file()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=30)
        for folder in (BUILD_DIR, INSTALLED, NODE_JOURNAL):
            shutil.rmtree(node.home / folder.removeprefix("/root/"), ignore_errors=True)

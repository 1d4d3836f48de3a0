"""A two-node `deploy --stack llama-rpc --apply` with REAL llama.cpp programs interrupted on
the namespace lab (built as in tests/test_deploy_llama_lab.py): `kill -9` of the deploy after
node1's RPC server started, then a retry and a rollback; SIGINT, SIGTERM and SIGHUP at each
program start; the head's disk filling (a 1 MiB tmpfs state dir) at each program start. After
each, no process of any deploy run is left on any node (each node's own /proc).

node1's RPC server (found under its older name `rpc-server`) and node0's llama-server are
reached through stand-ins in the nodes' bin directories that touch a marker and wait until the
test says go, then `exec` the real binary (same PID: the pid file names the real program)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli import run_cli
from tests.support.disk import fill
from tests.support.lab import Lab, LabHost, _kill_in_netns, lab_fixture
from tests.support.llama_parts import build, write_tiny_model

interruptllama = lab_fixture(2, name="interruptllama")
TARGET = "/root/strixwizard-etc"
NODE_JOURNAL = "/root/strixwizard-journal"
RUN_DIR = "/root/strixwizard-run"
PROGRAMS = ("ggml-rpc-server", "llama-server")
WAIT_S = 30


@pytest.fixture(scope="module")
def llama_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    built = build()
    out = tmp_path_factory.mktemp("llama-bin")
    for name in PROGRAMS:
        shutil.copy2(built / name, out / name)
    return out


def held(host: LabHost, name: str, real: Path) -> tuple[Path, Path]:
    """`name` on `host`: touches a marker, waits for go (bounded), then execs `real`. Asked
    for its `--version` (discovery's llama.cpp survey, before any start) it answers at once:
    the fault is held at the program's start, not at the survey."""
    marker, go = host.home / f"fault-{name}-reached", host.home / f"fault-{name}-go"
    (host.bin_dir / name).unlink(missing_ok=True)  # a symlink: never written through
    host.stand_in(name, f'#!/bin/sh\n[ "$1" = --version ] && exec {real} "$@"\n'
                  f"touch /root/fault-{name}-reached\ni=0\n"
                  f"while [ ! -e /root/fault-{name}-go ] && [ $i -lt {WAIT_S * 10} ]; do "
                  "sleep 0.1; i=$((i+1)); done\n"
                  f'exec {real} "$@"\n')
    return marker, go


def deploy_processes(host: LabHost) -> dict[int, str]:
    """llama.cpp programs running on the node, as its own /proc lists them."""
    return {pid: cmd for pid, cmd in host.node_pids().items()
            if any(f"/{name} " in f"{cmd} " or cmd.startswith(name) for name in PROGRAMS)}


@pytest.fixture
def lab(interruptllama: Lab, llama_bin: Path) -> Iterator[Lab]:
    head, worker = interruptllama.hosts
    for host in interruptllama.hosts:
        for path in host.bin_dir.glob("*"):
            path.unlink()
        for marker in host.home.glob("fault-*"):
            marker.unlink()
    (head.bin_dir / "ggml-rpc-server").symlink_to(llama_bin / "ggml-rpc-server")
    (head.bin_dir / "llama-server").symlink_to(llama_bin / "llama-server")
    (worker.bin_dir / "rpc-server").symlink_to(llama_bin / "ggml-rpc-server")
    yield interruptllama
    for host in interruptllama.hosts:  # what a failed test left, by PID, in its node only
        pids = [host.root_pid(pid) for pid in deploy_processes(host)]
        if live := [pid for pid in pids if pid is not None]:
            _kill_in_netns(live, [host.netns])
        for path in (host.home / "strixwizard-etc", host.home / "strixwizard-run",
                     host.home / ".cache"):
            shutil.rmtree(path, ignore_errors=True)


def deploy_argv(site: Path, model: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "strixwizard", "deploy", "--site", str(site), "--stack",
            "llama-rpc", "--transport", "tcp", "--target-dir", TARGET, "--llama-run-dir", RUN_DIR,
            "--node-journal-dir", NODE_JOURNAL, "--gguf", str(model), *args]


def start(argv: list[str], state: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL,
                            env={**os.environ, "XDG_STATE_HOME": str(state)})


def wait_for(marker: Path, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 120
    while not marker.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            out, err = proc.communicate(timeout=30)
            raise AssertionError(f"the deploy never reached the fault point:\n{out}\n{err}")
        time.sleep(0.05)


def settled(host: LabHost, quiet_s: float = 2.0, limit_s: float = 15.0) -> dict[int, str]:
    """The node's llama.cpp programs once the set has not changed for `quiet_s` seconds."""
    deadline = time.monotonic() + limit_s
    seen, since = deploy_processes(host), time.monotonic()
    while time.monotonic() - since < quiet_s and time.monotonic() < deadline:
        time.sleep(0.2)
        now = deploy_processes(host)
        if now != seen:
            seen, since = now, time.monotonic()
    return seen


def listens(host: LabHost, port: int) -> bool:
    done = host.run_in_ns(["ss", "-Hltn"], check=True)
    return any(line.split()[3].endswith(f":{port}") for line in done.stdout.splitlines()
               if line.strip())


def rollback(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "strixwizard", "deploy", *args, "--rollback",
                           "--yes"], capture_output=True, text=True, timeout=180,
                          stdin=subprocess.DEVNULL, env={**os.environ, "XDG_STATE_HOME": str(state)})


def test_killed_deploy_is_refused_on_retry_and_the_rollback_leaves_no_process(
        lab: Lab, tmp_path: Path, llama_bin: Path) -> None:
    head, worker = lab.hosts
    model = write_tiny_model(tmp_path / "tiny.gguf")
    site = lab.write_site_yaml(tmp_path / "lab.yaml")
    state = tmp_path / "state"
    marker, go = held(worker, "rpc-server", llama_bin / "ggml-rpc-server")
    proc = start(deploy_argv(site, model, "--apply", "--yes", "--no-smoke"), state)
    try:
        wait_for(marker, proc)
        go.touch()
        deadline = time.monotonic() + 60
        while not listens(worker, 50052):  # node1's RPC server started
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.05)
        proc.kill()
    finally:
        proc.communicate(timeout=60)
    assert deploy_processes(worker), "node1's RPC server should outlive the killed deploy"
    # the kill lands within a poll of node1's server listening: a start on node0 already sent
    # over SSH may still land after it; wait (bounded) until node0's programs stop changing,
    # then the refused retry must add none (the rollback below stops what the killed run left)
    head_before = settled(head)

    retry = run_cli(*deploy_argv(site, model, "--apply", "--yes")[3:],
                    env={"XDG_STATE_HOME": str(state)}, timeout=180)
    assert retry.rc == 2, retry.stdout + retry.stderr
    assert "did not finish" in retry.stderr and "strixwizard deploy --rollback " in retry.stderr
    assert deploy_processes(worker) and deploy_processes(head) == head_before  # nothing new started

    rolled = rollback(state)
    assert rolled.returncode == 0, rolled.stdout + rolled.stderr
    assert "was in progress when the run stopped" in rolled.stdout or \
        "every value of this run restored" in rolled.stdout
    for host in lab.hosts:  # each node's own /proc
        assert deploy_processes(host) == {}, (host.name, rolled.stdout)
    again = run_cli(*deploy_argv(site, model, "--apply", "--yes", "--no-smoke")[3:],
                    env={"XDG_STATE_HOME": str(state)}, timeout=180)
    assert again.rc == 0, again.stdout + again.stderr  # nothing unfinished is left
    run_id = again.stdout.strip().splitlines()[-1].split()[-1]
    planned = run_cli(*deploy_argv(site, model, "--json")[3:], env={"XDG_STATE_HOME": str(state)},
                      timeout=180)
    notes = " ".join(planned.json()["plan"]["notes"])
    (pid,) = [p for p, cmd in deploy_processes(worker).items()]
    assert f"node1: ggml-rpc-server is already running (PID {pid}, running since 20" in notes, notes
    assert f"started by run {run_id} (its journal)" in notes, notes
    assert rollback(state).returncode == 0
    for host in lab.hosts:
        assert deploy_processes(host) == {}


SIGNALS = {"SIGINT": (signal.SIGINT, 130), "SIGTERM": (signal.SIGTERM, 143),
           "SIGHUP": (signal.SIGHUP, 129)}
#: (host index, stand-in name, real binary): node1's RPC server starts first, then node0's
#: llama-server
STARTS = {"node1-rpc-server": (1, "rpc-server", "ggml-rpc-server"),
          "node0-llama-server": (0, "llama-server", "llama-server")}


@pytest.mark.parametrize("point", list(STARTS))
@pytest.mark.parametrize("name", list(SIGNALS))
def test_a_signal_during_a_program_start_ends_a_cancelled_deploy_with_nothing_left(
        lab: Lab, tmp_path: Path, llama_bin: Path, point: str, name: str) -> None:
    signum, status = SIGNALS[name]
    index, stand_in, real = STARTS[point]
    model = write_tiny_model(tmp_path / "tiny.gguf")
    site = lab.write_site_yaml(tmp_path / "lab.yaml")
    state = tmp_path / "state"
    host = lab.hosts[index]
    marker, go = held(host, stand_in, llama_bin / real)
    proc = start(deploy_argv(site, model, "--apply", "--yes", "--no-smoke"), state)
    try:
        wait_for(marker, proc)
        os.kill(proc.pid, signum)
        time.sleep(0.3)
        go.touch()
        out, err = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=30)
    assert proc.returncode == status, (proc.returncode, out, err)
    assert "Traceback" not in err, err
    assert f"cancelled by {name}" in out, out
    assert "State of each node:" in out
    assert out.strip().splitlines()[-1].startswith("Undo this deploy with: strixwizard deploy")
    for node in lab.hosts:
        assert deploy_processes(node) == {}, (node.name, out)






@pytest.mark.parametrize("point", list(STARTS))
def test_head_disk_full_during_a_deploy_leaves_no_process_and_prints_the_rollback(
        lab: Lab, tmp_path: Path, llama_bin: Path, small_state: Path, point: str) -> None:
    index, stand_in, real = STARTS[point]
    model = write_tiny_model(tmp_path / "tiny.gguf")
    site = lab.write_site_yaml(tmp_path / "lab.yaml")
    marker, go = held(lab.hosts[index], stand_in, llama_bin / real)
    proc = start(deploy_argv(site, model, "--apply", "--yes", "--no-smoke"), small_state)
    try:
        wait_for(marker, proc)
        fill(small_state, confirm=False)
        go.touch()
        out, err = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=30)
    assert proc.returncode == 1, (proc.returncode, out, err)
    assert "Traceback" not in err and "internal error" not in err, err
    assert "stopped" in out and "No space left on device (errno 28 ENOSPC)" in out, out
    assert "State of each node:" in out
    assert out.strip().splitlines()[-1].startswith("Undo this deploy with: strixwizard deploy ")
    for node in lab.hosts:
        assert deploy_processes(node) == {}, (node.name, out)
    (small_state / "filler").unlink()
    rolled = rollback(small_state)  # the printed command finds nothing left running
    assert rolled.returncode == 0, rolled.stdout + rolled.stderr
    for node in lab.hosts:
        assert deploy_processes(node) == {}

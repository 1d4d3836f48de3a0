"""`deploy --stack llama-rpc` with REAL llama.cpp programs on the namespace lab.

`ggml-rpc-server` and `llama-server` are built from the llama.cpp tree in the
llama-cpp-python sdist (scripts/build_llama.sh, cached in ~/.cache/strixwizard-llama;
about 4 minutes on 2 cores the first time), the model is a tiny random-weight GGUF written
here (tests/support/llama_parts.py). node0 is the head and also runs an RPC server
(`--rpc-on-head`), node1 runs one too, found under its older name `rpc-server`; both bind
their fabric address; llama-server on node0 answers a completion over HTTP through both.
The lab's fabric is a veth pair, so this is the TCP path (`--transport tcp`); RDMA is judged
on constructed logs in tests/test_deploy_llama.py.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli import CliResult, run_cli
from tests.support.lab import Lab, LabHost, _kill_in_netns, lab_fixture
from tests.support.llama_parts import build, write_tiny_model

llamalab2 = lab_fixture(2, name="llamalab2")
TARGET = "/root/strixwizard-etc"  # per lab host: HOST.home/strixwizard-etc
NODE_JOURNAL = "/root/strixwizard-journal"
RUN_DIR = "/root/strixwizard-run"  # per lab host: HOST.home/strixwizard-run (pid files, logs)
PROGRAMS = ("ggml-rpc-server", "llama-server")


@pytest.fixture(scope="module")
def llama_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The built binaries, copied out of /root (a lab host's SSH sessions see their own /root)."""
    built = build()
    out = tmp_path_factory.mktemp("llama-bin")
    for name in PROGRAMS:
        shutil.copy2(built / name, out / name)
    return out


def target(host: LabHost) -> Path:
    return host.home / "strixwizard-etc"


def run_dir(host: LabHost) -> Path:
    return host.home / "strixwizard-run"


def started(host: LabHost) -> dict[str, int]:
    """Program -> PID, from the pid files the deploy wrote on this host."""
    found = {}
    for name in PROGRAMS:
        path = run_dir(host) / f"{name}.pid"
        if path.exists():
            found[name] = int(path.read_text().splitlines()[0])
    return found


def runs(host: LabHost, pid: int, program: str) -> bool:
    """`program` runs as `pid` (a PID of the node's own namespace) on `host`."""
    try:
        return os.path.basename(os.readlink(host.proc / str(pid) / "exe")) == program
    except OSError:
        return False


def listening(host: LabHost) -> list[str]:
    done = host.run_in_ns(["ss", "-Hltn"], check=True)
    return [line.split()[3] for line in done.stdout.splitlines() if line.strip()]


@pytest.fixture
def lab(llamalab2: Lab, llama_bin: Path) -> Iterator[Lab]:
    head, worker = llamalab2.hosts
    for host in llamalab2.hosts:
        for path in host.bin_dir.glob("*"):
            path.unlink()
    for name in PROGRAMS:
        (head.bin_dir / name).symlink_to(llama_bin / name)
    # the older name of the RPC server: the launcher finds whichever exists
    (worker.bin_dir / "rpc-server").symlink_to(llama_bin / "ggml-rpc-server")
    yield llamalab2
    for host in llamalab2.hosts:  # stop what a failed test left, by PID, in its namespace only
        pids = [host.root_pid(pid) for name, pid in started(host).items() if runs(host, pid, name)]
        if pids := [pid for pid in pids if pid is not None]:
            _kill_in_netns(pids, [host.netns])
        for path in (target(host), run_dir(host), host.home / ".cache"):
            shutil.rmtree(path, ignore_errors=True)


def deploy(site: Path, tmp: Path, *args: str) -> CliResult:
    return run_cli("deploy", "--site", str(site), "--stack", "llama-rpc", "--transport", "tcp",
                   "--target-dir", TARGET, "--llama-run-dir", RUN_DIR,
                   "--node-journal-dir", NODE_JOURNAL, *args,
                   env={"XDG_STATE_HOME": str(tmp / "state")}, timeout=180)


def test_real_rpc_servers_on_fabric_addresses_serve_a_completion_then_rollback_leaves_nothing(
        lab: Lab, tmp_path: Path) -> None:
    head, worker = lab.hosts
    # a path that a shell would run: it must reach llama-server as one argument, as data
    model = write_tiny_model(tmp_path / "tiny $(touch PWNED);'x'.gguf")
    site = lab.write_site_yaml(tmp_path / "lab.yaml")
    begun = time.monotonic()
    applied = deploy(site, tmp_path, "--gguf", str(model), "--rpc-on-head", "--apply", "--yes",
                     "--json")
    took = time.monotonic() - begun
    assert applied.rc == 0, applied.stdout + applied.stderr
    doc = applied.json()
    assert (doc["status"], doc["apply"]["status"]) == ("deployed", "applied")
    smoke = {c["id"]: c for c in doc["smoke"]["checks"]}
    assert smoke["llama.completion"]["status"] == "pass", smoke
    assert smoke["llama.workers"] == {**smoke["llama.workers"], "status": "pass",
                                      "observed": "2 RPC server(s) hold layers"}
    assert (smoke["llama.transport"]["status"], smoke["llama.transport"]["observed"]) == (
        "pass", "TCP")
    print(f"\nllama-rpc lab: deploy --apply to a smoke-tested cluster in {took:.1f} s; "
          f"completion: {smoke['llama.completion']['observed']}")

    # each RPC server listens on its fabric address only; llama-server on the head's
    assert [a for a in listening(worker) if a.endswith(":50052")] == [f"{worker.fabric_addr}:50052"]
    assert sorted(a for a in listening(head) if a.endswith((":50052", ":8080"))) == sorted(
        [f"{head.fabric_addr}:50052", f"{head.fabric_addr}:8080"])
    pids = {(h.name, name): pid for h in lab.hosts for name, pid in started(h).items()}
    node = {h.name: h for h in lab.hosts}
    assert set(pids) == {("node0", "ggml-rpc-server"), ("node0", "llama-server"),
                         ("node1", "ggml-rpc-server")}
    assert all(runs(node[host], pid, name) for (host, name), pid in pids.items())
    head_argv = (head.proc / str(pids["node0", "llama-server"]) / "cmdline").read_bytes().split(b"\0")
    rpc = f"{head.fabric_addr}:50052,{worker.fabric_addr}:50052".encode()
    assert head_argv[head_argv.index(b"--rpc") + 1] == rpc
    environ = (worker.proc / str(pids["node1", "ggml-rpc-server"]) / "environ").read_bytes().split(b"\0")
    assert b"GGML_RPC_NO_RDMA=1" in environ
    assert head_argv[head_argv.index(b"-m") + 1] == str(model).encode()
    assert not any((where / "PWNED").exists() for where in (tmp_path, head.home, worker.home))
    # the RPC server's own words: its endpoint is the fabric address, llama-server connected
    rpc_log = (run_dir(worker) / "ggml-rpc-server.log").read_text()
    assert f"endpoint       : {worker.fabric_addr}:50052" in rpc_log
    assert "transport      : TCP" in rpc_log and "Accepted client connection" in rpc_log

    again = deploy(site, tmp_path, "--gguf", str(model), "--rpc-on-head", "--json")
    assert again.rc == 0 and again.json()["plan"]["summary"]["changes"] == 0
    smoked = deploy(site, tmp_path, "--gguf", str(model), "--rpc-on-head", "--smoke", "--json")
    assert smoked.rc == 0 and smoked.json()["smoke"]["status"] == "pass", smoked.stdout

    rolled = deploy(site, tmp_path, "--rollback", doc["apply"]["run_id"], "--yes", "--json")
    assert rolled.rc == 0, rolled.stdout + rolled.stderr
    # the head (llama-server) is undone before the worker's RPC server
    assert [n["node"] for n in rolled.json()["rollback"]["nodes"]] == ["node0", "node1"]
    assert not any(runs(node[host], pid, name) for (host, name), pid in pids.items())
    for host in lab.hosts:
        assert not target(host).exists() and not started(host)
        assert not [a for a in listening(host) if a.endswith((":50052", ":8080"))]
    # the logs stay for the user to read
    assert sorted(p.name for p in run_dir(head).iterdir()) == ["ggml-rpc-server.log",
                                                              "llama-server.log"]


def test_a_worker_without_the_binary_rolls_the_head_back(lab: Lab, tmp_path: Path) -> None:
    worker = lab.hosts[1]
    (worker.bin_dir / "rpc-server").unlink()
    model = write_tiny_model(tmp_path / "tiny.gguf")
    site = lab.write_site_yaml(tmp_path / "lab.yaml")
    done = deploy(site, tmp_path, "--gguf", str(model), "--apply", "--yes", "--json")
    assert done.rc == 1, done.stdout + done.stderr
    nodes = {n["node"]: n for n in done.json()["apply"]["nodes"]}
    assert "not installed: none of ggml-rpc-server rpc-server" in nodes["node1"]["state"]
    assert nodes["node0"]["status"] == "rolled-back" and done.json()["smoke"] is None
    for host in lab.hosts:
        assert not target(host).exists() and not started(host)


def test_a_program_already_on_the_port_is_left_alone(lab: Lab, llama_bin: Path,
                                                     tmp_path: Path) -> None:
    worker = lab.hosts[1]
    assert worker.fabric_addr is not None
    theirs = subprocess.Popen(
        ["ip", "netns", "exec", worker.netns, str(llama_bin / "ggml-rpc-server"),
         "-H", worker.fabric_addr, "-p", "50052"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while f"{worker.fabric_addr}:50052" not in listening(worker):
            assert time.monotonic() < deadline and theirs.poll() is None
            time.sleep(0.1)
        site = lab.write_site_yaml(tmp_path / "lab.yaml")
        done = deploy(site, tmp_path, "--gguf", "/nonexistent.gguf", "--apply", "--yes", "--json")
        assert done.rc == 1, done.stdout + done.stderr
        nodes = {n["node"]: n for n in done.json()["apply"]["nodes"]}
        assert "port 50052 is taken by another program: not started" in nodes["node1"]["state"]
        assert theirs.poll() is None  # not ours: not stopped
    finally:
        theirs.terminate()
        theirs.wait(timeout=10)


def test_a_worker_that_died_keeps_its_log_and_the_rollback_stops_the_rest(
        lab: Lab, tmp_path: Path) -> None:
    head, worker = lab.hosts
    model = write_tiny_model(tmp_path / "tiny.gguf")
    site = lab.write_site_yaml(tmp_path / "lab.yaml")
    applied = deploy(site, tmp_path, "--gguf", str(model), "--apply", "--yes", "--json",
                     "--no-smoke")
    assert applied.rc == 0, applied.stdout + applied.stderr
    server, rpc = started(head)["llama-server"], started(worker)["ggml-rpc-server"]
    _kill_in_netns([worker.root_pid(rpc) or 0], [worker.netns])  # the worker's RPC server dies on its own
    rolled = deploy(site, tmp_path, "--rollback", applied.json()["apply"]["run_id"], "--yes",
                    "--json")
    assert rolled.rc == 0, rolled.stdout + rolled.stderr
    assert not runs(head, server, "llama-server")
    assert not target(head).exists() and not started(head) and not target(worker).exists()
    # what the dead program wrote stays for the user to read (its pid file names a dead PID,
    # which the next start and the state read both recognise as not running)
    assert started(worker) == {"ggml-rpc-server": rpc} and not runs(worker, rpc, "ggml-rpc-server")
    assert "Starting RPC server" in (run_dir(worker) / "ggml-rpc-server.log").read_text()

"""`deploy --stack ds4` on the namespace lab with a STAND-IN ds4 (tests/support/standin_ds4.py,
NOT antirez/ds4: ds4 cannot run on this machine, no GPU and no 150 GiB model).

The stand-in is installed as `ds4` and `ds4-server` on both lab nodes. It takes ds4's
tensor-parallel argv, so the plan's launch lines are what starts; rank 1 dials rank 0 at the
head's fabric address, as ds4 does, and each prints the log lines ds4's authors published for
the transport asked (tests/data/deploy/ds4/SOURCE). So this proves plan -> apply -> smoke
verdict -> rollback of the stack, and the verdict on a fallback; never ds4 itself.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli import CliResult, run_cli
from tests.support.lab import Lab, LabHost, _kill_in_netns, lab_fixture

ds4lab2 = lab_fixture(2, name="ds4lab2")
STAND_IN = Path(__file__).parent / "support" / "standin_ds4.py"
TARGET = "/root/strixwizard-etc"
NODE_JOURNAL = "/root/strixwizard-journal"
RUN_DIR = "/root/strixwizard-ds4"
PROGRAMS = {"node0": "ds4-server", "node1": "ds4"}


def run_dir(host: LabHost) -> Path:
    return host.home / "strixwizard-ds4"


def started(host: LabHost) -> dict[str, int]:
    """Program -> PID, from the pid files the deploy wrote on this host."""
    found = {}
    for name in ("ds4", "ds4-server"):
        path = run_dir(host) / f"{name}.pid"
        if path.exists():
            found[name] = int(path.read_text().splitlines()[0])
    return found


def stand_in_runs(host: LabHost, pid: int) -> bool:
    try:
        return STAND_IN.name.encode() in (host.proc / str(pid) / "cmdline").read_bytes()
    except OSError:
        return False


def sockets(host: LabHost, *options: str) -> list[str]:
    done = host.run_in_ns(["ss", "-Hn", *options], check=True)
    return [line for line in done.stdout.splitlines() if line.strip()]


@pytest.fixture
def lab(ds4lab2: Lab) -> Iterator[Lab]:
    for host in ds4lab2.hosts:
        for path in host.bin_dir.glob("*"):
            path.unlink()
        # STAND-IN ds4 and ds4-server: a shim that runs the stand-in with ds4's argv
        for name in ("ds4", "ds4-server"):
            host.stand_in(name, f'#!/bin/sh\n# STAND-IN for {name} (not antirez/ds4)\n'
                          f'exec python3 {STAND_IN} "$@"\n')
    yield ds4lab2
    for host in ds4lab2.hosts:  # stop what a failed test left, by PID, in its namespace only
        pids = [host.root_pid(pid) for pid in started(host).values() if stand_in_runs(host, pid)]
        if pids := [pid for pid in pids if pid is not None]:
            _kill_in_netns(pids, [host.netns])
        for path in (host.home / "strixwizard-etc", run_dir(host), host.home / "standin-ds4.json"):
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)


def deploy(site: Path, tmp: Path, *args: str) -> CliResult:
    return run_cli("deploy", "--site", str(site), "--stack", "ds4", "--transport", "tcp",
                   "--target-dir", TARGET, "--ds4-run-dir", RUN_DIR,
                   "--node-journal-dir", NODE_JOURNAL, "--ds4-health-timeout", "60", *args,
                   env={"XDG_STATE_HOME": str(tmp / "state")}, timeout=240)


def model_file(tmp: Path) -> Path:
    """A stand-in GGUF (empty) at one path both nodes see, with a name a shell would run."""
    path = tmp / "DeepSeek-V4-Flash $(touch PWNED);'x'.gguf"
    path.write_bytes(b"")
    return path


def test_stand_in_pair_over_the_fabric_proves_rdma_from_the_published_lines_then_rolls_back(
        lab: Lab, tmp_path: Path) -> None:
    head, worker = lab.hosts
    model = model_file(tmp_path)
    site = lab.write_site_yaml(tmp_path / "lab.yaml")
    begun = time.monotonic()
    applied = deploy(site, tmp_path, "--model", str(model), "--ds4-transport", "rdma",
                     "--apply", "--yes", "--json")
    took = time.monotonic() - begun
    assert applied.rc == 0, applied.stdout + applied.stderr
    doc = applied.json()
    assert (doc["status"], doc["apply"]["status"]) == ("deployed", "applied")
    assert doc["plan"]["transport"] == {**doc["plan"]["transport"], "asked": "rdma",
                                        "link": "ethernet", "fallback": False}
    smoke = {c["id"]: c for c in doc["smoke"]["checks"]}
    assert smoke["ds4.completion"]["status"] == "pass", smoke
    assert (smoke["ds4.transport"]["status"], smoke["ds4.transport"]["observed"]) == (
        "pass", "rdma on both ranks (odl_tb5_0, rocep3s0f0)")
    print(f"\nSTAND-IN ds4 pair on the lab (not antirez/ds4): deploy --apply to a smoke-tested "
          f"pair in {took:.1f} s; transport {smoke['ds4.transport']['observed']} from the "
          f"published lines the stand-in printed")

    # what started is the plan's argv; rank 0 serves on the head's fabric address, rank 1
    # holds a connection to the head's fabric address at the TP port
    pids = {h.name: started(h) for h in lab.hosts}
    assert set(pids["node0"]) == {"ds4-server"} and set(pids["node1"]) == {"ds4"}
    head_argv = (head.proc / str(pids["node0"]["ds4-server"]) / "cmdline").read_bytes().split(b"\0")
    assert head_argv[head_argv.index(b"--listen") + 1] == head.fabric_addr.encode()
    assert head_argv[head_argv.index(b"-m") + 1] == str(model).encode()
    assert not any((where / "PWNED").exists() for where in (tmp_path, head.home, worker.home))
    assert any(f"{head.fabric_addr}:8000" in line for line in sockets(head, "-lt"))
    assert any(f"{head.fabric_addr}:9000" in line for line in sockets(worker, "-t"))
    head_log = (run_dir(head) / "ds4-server.log").read_text()
    assert head_log.startswith("STAND-IN for ds4 (not antirez/ds4): coordinator, --transport rdma")
    assert "ds4-tp: worker connected, transport=rdma" in head_log

    rolled = deploy(site, tmp_path, "--rollback", doc["apply"]["run_id"], "--yes", "--json")
    assert rolled.rc == 0, rolled.stdout + rolled.stderr
    # rank 1 (the worker) is stopped by its PID before rank 0, whose socket closing would
    # end it on its own
    assert [n["node"] for n in rolled.json()["rollback"]["nodes"]] == ["node1", "node0"]
    node = {h.name: h for h in lab.hosts}
    assert not any(stand_in_runs(node[h], pid) for h, found in pids.items() for pid in found.values())
    for host in lab.hosts:
        assert not (host.home / "strixwizard-etc").exists() and not started(host)
    # the logs stay for the user to read
    assert sorted(p.name for p in run_dir(head).iterdir()) == ["ds4-server.log"]


def test_tcp_is_planned_as_a_fallback_and_a_pair_that_fell_back_fails_the_smoke_test(
        lab: Lab, tmp_path: Path) -> None:
    head = lab.hosts[0]
    model = model_file(tmp_path)
    site = lab.write_site_yaml(tmp_path / "lab.yaml")
    planned = deploy(site, tmp_path, "--model", str(model))
    assert planned.rc == 0, planned.stdout + planned.stderr
    assert "Transport: --transport tcp: TCP is a fallback: the ethernet link" in planned.stdout

    # the stand-in rank 0 prints the published TCP lines although RDMA was asked
    (head.home / "standin-ds4.json").write_text(json.dumps({"took": "tcp"}))
    applied = deploy(site, tmp_path, "--model", str(model), "--ds4-transport", "rdma",
                     "--apply", "--yes", "--json")
    assert applied.rc == 1, applied.stdout + applied.stderr
    doc = applied.json()
    assert doc["apply"]["status"] == "applied", doc["apply"]
    transport = {c["id"]: c for c in doc["smoke"]["checks"]}["ds4.transport"]
    assert (transport["status"], transport["observed"]) == ("fail", "TCP FALLBACK")
    assert "head (rank 0): ds4-tp: worker connected, transport=tcp" in transport["evidence"]
    rolled = deploy(site, tmp_path, "--rollback", doc["apply"]["run_id"], "--yes", "--json")
    assert rolled.rc == 0, rolled.stdout + rolled.stderr
    for host in lab.hosts:
        assert not started(host)

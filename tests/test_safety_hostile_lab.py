"""A fabric interface named with shell metacharacters, on the namespace lab with real sshd:
`deploy --apply --transport tcp` sources its env file on every node with a real `sh` and
nothing runs (no marker file), the Ray daemon gets the exact name, the RCCL smoke test
refuses to hand it to mpirun, `fix --apply`/`--rollback` set and restore its MTU, and
`test latency` measures TCP over it (and the sockperf/qperf references) running nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli import run_cli
from tests.support.lab import Lab, LabHost, _kill_in_netns, lab_fixture

hostilelab = lab_fixture(2, name="hostilelab")
DATA = Path(__file__).parent / "data"
TARGET = "/root/strixwizard-etc"
NODE_JOURNAL = "/root/strixwizard-journal"
HOSTILE = "f;id>PWNED0"


def rename(host: LabHost, old: str, new: str) -> None:
    for argv in (["ip", "link", "set", "dev", old, "down"],
                 ["ip", "link", "set", "dev", old, "name", new],
                 ["ip", "link", "set", "dev", new, "up"]):
        host.run_in_ns(argv, check=True)


def raylet(host: LabHost) -> int | None:
    path = host.home / ".ray-stand-in" / "raylet.pid"
    return int(path.read_text()) if path.exists() else None


@pytest.fixture
def lab(hostilelab: Lab) -> Iterator[Lab]:
    for host in hostilelab.hosts:
        host.stand_in("ray", (DATA / "deploy" / "standins" / "ray").read_text())
        host.stand_in("mpirun", '#!/bin/sh\nprintf "%s\\n" "$@" > "$HOME/mpirun.argv"\nexit 1\n')
        rename(host, "fab0", HOSTILE)
    yield hostilelab
    for host in hostilelab.hosts:
        pid = raylet(host)
        root_pid = host.root_pid(pid) if pid is not None else None  # the node's PID, in the root's
        if root_pid is not None:
            _kill_in_netns([root_pid], [host.netns])
        rename(host, HOSTILE, "fab0")


def test_deploy_with_a_hostile_interface_name_runs_nothing(lab: Lab, tmp_path: Path) -> None:
    site = lab.write_site_yaml(tmp_path / "lab.yaml")
    env = {"XDG_STATE_HOME": str(tmp_path / "state")}
    common = ("--site", str(site), "--target-dir", TARGET, "--node-journal-dir", NODE_JOURNAL,
              "--ray-temp-dir", "/root/strixwizard-ray")
    applied = run_cli("deploy", *common, "--transport", "tcp", "--apply", "--yes", "--json",
                      "--no-smoke", env=env, timeout=120)
    assert applied.rc == 0, applied.stdout + applied.stderr
    assert applied.json()["apply"]["status"] == "applied"
    for host in lab.hosts:
        assert not list(host.home.rglob("PWNED*")), "sourcing the env file ran a command"
        daemon = json.loads((host.home / ".ray-stand-in" / "daemon.env").read_text())
        assert (daemon["NCCL_SOCKET_IFNAME"], daemon["GLOO_SOCKET_IFNAME"]) == (
            "=" + HOSTILE, HOSTILE)
        assert daemon["VLLM_HOST_IP"] == host.fabric_addr
    assert not list(Path.cwd().glob("PWNED*")) and not list(tmp_path.rglob("PWNED*"))
    smoke = run_cli("deploy", *common, "--transport", "tcp", "--smoke", "--json", env=env,
                    timeout=120)
    checks = {c["id"]: c for c in smoke.json()["smoke"]["checks"]}
    assert checks["ray.nodes"]["status"] == "pass", smoke.stdout
    rccl = checks["rccl.transport"]
    assert (rccl["status"], rccl["observed"]) == ("error", "not run") and smoke.rc == 2
    assert "would pass through mpirun's remote shell" in rccl["detail"]
    assert not (lab.hosts[0].home / "mpirun.argv").exists()
    rolled = run_cli("deploy", *common, "--rollback", "--yes", env=env, timeout=120)
    assert rolled.rc == 0, rolled.stdout + rolled.stderr
    for host in lab.hosts:
        assert not (host.home / "strixwizard-etc").exists()


def test_fix_with_a_hostile_interface_name_runs_nothing(lab: Lab, tmp_path: Path) -> None:
    site = lab.write_site_yaml(tmp_path / "lab.yaml")
    env = {"XDG_STATE_HOME": str(tmp_path / "state")}
    common = ("--site", str(site), "--only", "net.mtu", "--runtime-only",
              "--node-journal-dir", NODE_JOURNAL)

    def mtus() -> list[int]:
        return [int(json.loads(h.run_in_ns(["ip", "-j", "link", "show", "dev", HOSTILE],
                                           check=True).stdout)[0]["mtu"]) for h in lab.hosts]

    applied = run_cli("fix", *common, "--apply", "--yes", "--json", env=env, timeout=120)
    assert applied.rc == 0, applied.stdout + applied.stderr
    assert mtus() == [9000, 9000]
    rolled = run_cli("fix", *common, "--rollback", "--yes", env=env, timeout=120)
    assert rolled.rc == 0, rolled.stdout + rolled.stderr
    assert mtus() == [1500, 1500]
    for host in lab.hosts:
        assert not list(host.home.rglob("PWNED*"))


def test_latency_with_a_hostile_interface_name_runs_nothing(lab: Lab, tmp_path: Path) -> None:
    """`test latency` between the two nodes: the TCP ping-pong goes over the renamed fabric
    interface, the references run or say why not, and no name reaches a shell."""
    site = lab.write_site_yaml(tmp_path / "lab.yaml")
    env = {"XDG_STATE_HOME": str(tmp_path / "state")}
    result = run_cli("test", "latency", "--site", str(site), "--pair", "node0,node1", "--json",
                     "--seconds", "1", "--no-history", env=env, timeout=180)
    for host in lab.hosts:
        assert not list(host.home.rglob("PWNED*")), "a node ran a command from the name"
    assert not list(Path.cwd().glob("PWNED*")) and not list(tmp_path.rglob("PWNED*"))
    # the lab has no RDMA: a run asked for RDMA that measured none has no verdict (exit 2)
    assert result.rc == 2 and result.json()["status"] == "error", result.stdout + result.stderr
    by_tool = {r["tool"]: r for r in result.json()["results"]}
    tcp = by_tool["strixwizard tcp ping-pong"]
    assert tcp["status"] == "pass" and tcp["source"] == "measured", tcp
    assert HOSTILE in tcp["path"] and lab.hosts[1].fabric_addr in tcp["path"]
    assert tcp["latency_us"]["samples"] > 0
    for tool in ("sockperf ping-pong", "qperf tcp_lat"):  # references: measured on the same path
        reference = by_tool[tool]
        assert reference["role"] == "reference" and HOSTILE in reference["path"], reference
        assert max(v for v in reference["latency_us"].values() if isinstance(v, (int, float))) > 0
    rdma = by_tool["ib_write_lat"]
    assert rdma["status"] == "skip" and f"node0:{HOSTILE} <-> node1:{HOSTILE}" in rdma["summary"]

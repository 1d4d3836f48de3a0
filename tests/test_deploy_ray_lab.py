"""`strixwizard deploy` with the REAL Ray (the `ray` wheel from PyPI, a test dependency) on a
3-node lab: every node in its own network and PID namespace, their fabric addresses behind
one switch (`Lab(fabric="switch")`). Ray runs for real: head and workers on the fabric
addresses, the smoke's tasks pinned to each node, the rollback ending processes by their
marker. Only `mpirun` is a STAND-IN (no GPU, no RCCL here): it prints a recorded RCCL log.

One cluster is formed by `deploy --apply` for the whole module (the slow part, ~10-20 s on
2 cores); the tests then change it in order: a raylet restarted without one variable, then
another Ray on a node, then the rollback.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from strixwizard.deploy.stacks.ray.ray import STOP
from strixwizard.deploy.stacks.ray.smoke import parse_ray_status
from tests.support.cli import CliResult, run_cli
from tests.support.lab import Lab, LabHost, lab_fixture

raylab = lab_fixture(3, scope="module", name="raylab", fabric="switch")
DATA = Path(__file__).parent / "data"
RAY = Path(sys.executable).parent / "ray"  # the virtualenv's real `ray` (pyproject [test])
TARGET = "/root/strixwizard-etc"  # per lab host: HOST.home/...
NODE_JOURNAL = "/root/strixwizard-journal"
RAY_TEMP = "/root/strixwizard-ray"
PORT = 6379
#: small enough for 3 Ray nodes on a 2-core, shared machine
RAY_OPTIONS = ("--ray-temp-dir", RAY_TEMP, "--ray-num-cpus", "1",
               "--ray-object-store-bytes", str(80 * 1024 * 1024))
MPIRUN_STAND_IN = f"""#!/bin/sh
# STAND-IN for mpirun: prints what RCCL prints without an RDMA device (NET/Socket).
cat {DATA / "live" / "all_reduce_perf_gfx1151_net_socket.txt"}
"""
MARKER = f"STRIXWIZARD_RAY={RAY_TEMP}".encode()


@dataclass
class Cluster:
    lab: Lab
    site: Path
    state: Path
    applied: CliResult
    seconds: float

    @property
    def doc(self) -> dict[str, Any]:
        return self.applied.json()


def deploy(cluster_or_site: Cluster | Path, state: Path | None = None, *args: str,
           timeout: float = 180) -> CliResult:
    if isinstance(cluster_or_site, Cluster):
        site, state = cluster_or_site.site, cluster_or_site.state
    else:
        site = cluster_or_site
    assert state is not None
    return run_cli("deploy", "--site", str(site), "--transport", "tcp", "--target-dir", TARGET,
                   "--node-journal-dir", NODE_JOURNAL, *RAY_OPTIONS, *args,
                   env={"XDG_STATE_HOME": str(state)}, timeout=timeout)


def marked(host: LabHost) -> dict[int, str]:
    """This node's processes that strixwizard's Ray started (the marker in their
    environment), as the node's own /proc shows them."""
    found = {}
    for pid, cmd in host.node_pids().items():
        try:
            environ = (host.proc / str(pid) / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if MARKER in environ:
            found[pid] = cmd
    return found


def raylets(host: LabHost) -> dict[int, str]:
    return {pid: cmd for pid, cmd in host.node_pids().items() if "/raylet/raylet " in cmd}


def environ_of(host: LabHost, pid: int) -> dict[str, str]:
    raw = (host.proc / str(pid) / "environ").read_bytes().split(b"\0")
    return dict(item.decode().split("=", 1) for item in raw if b"=" in item)


def in_node(host: LabHost, *argv: str, timeout: float = 60) -> str:
    done = host.run_in_node(["env", "-i", f"PATH={host.bin_dir}:/usr/bin:/bin", "HOME=/root", *argv],
                            timeout=timeout)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def stop_ours(host: LabHost) -> None:
    """What the rollback runs on a node: ends the processes marked with strixwizard's Ray."""
    in_node(host, "sh", "-c", STOP, RAY_TEMP)
    assert not marked(host)


@pytest.fixture(scope="module")
def cluster(raylab: Lab, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    if not RAY.exists():
        pytest.fail(f"the real `ray` is missing ({RAY}): bash scripts/install.sh test")
    for host in raylab.hosts:
        (host.bin_dir / "ray").symlink_to(RAY)
        host.stand_in("mpirun", MPIRUN_STAND_IN)
    tmp = tmp_path_factory.mktemp("raydeploy")
    site = raylab.write_site_yaml(tmp / "lab.yaml")
    started = time.monotonic()
    applied = deploy(site, tmp / "state", "--apply", "--yes", "--json")
    seconds = time.monotonic() - started
    yield Cluster(raylab, site, tmp / "state", applied, seconds)
    for host in raylab.hosts:  # whatever a failed test left: only processes of this node
        if host.node_running():
            host.run_in_node(["env", f"PATH={host.bin_dir}:/usr/bin:/bin", "sh", "-c",
                              "ray stop --force >/dev/null 2>&1; true"], timeout=60)


def test_apply_forms_a_real_cluster_on_the_fabric_and_each_task_sees_the_plan(
        cluster: Cluster) -> None:
    assert cluster.applied.rc == 0, cluster.applied.stdout + cluster.applied.stderr
    doc = cluster.doc
    print(f"\nray lab: deploy --apply to a smoke-tested 3-node Ray cluster in "
          f"{cluster.seconds:.1f} s")
    checks = {c["id"]: c for c in doc["smoke"]["checks"]}
    assert (checks["ray.nodes"]["status"], checks["ray.nodes"]["observed"]) == ("pass", "3 nodes")
    fabric = [h.fabric_addr for h in cluster.lab.hosts]
    assert sorted(checks["ray.nodes"]["evidence"]) == sorted(fabric)
    env = checks["ray.env"]
    assert env["status"] == "pass", env
    # tcp profile: NCCL_SOCKET_IFNAME, GLOO_SOCKET_IFNAME, RAY_EXPERIMENTAL_NOSET_..., VLLM_HOST_IP
    assert env["observed"] == "12 variables as planned on 3 nodes"
    for host in cluster.lab.hosts:
        assert f"{host.name}: VLLM_HOST_IP={host.fabric_addr}" in env["evidence"]
        assert f"{host.name}: NCCL_SOCKET_IFNAME==fab0" in env["evidence"]
    head, *workers = cluster.lab.hosts
    assert doc["plan"]["ray_argv"]["node0"][:5] == [
        "ray", "start", "--head", f"--port={PORT}", f"--node-ip-address={head.fabric_addr}"]
    for host in workers:
        assert doc["plan"]["ray_argv"][host.name][:4] == [
            "ray", "start", f"--address={head.fabric_addr}:{PORT}",
            f"--node-ip-address={host.fabric_addr}"]
    # Ray's own view: `ray status` on the head counts every node
    status = ""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        status = in_node(head, "ray", "status", f"--address={head.fabric_addr}:{PORT}")
        if parse_ray_status(status) == 3:
            break
        time.sleep(1)
    assert parse_ray_status(status) == 3, status
    # each node runs one raylet of its own, on its fabric address, with the env file applied
    for host in cluster.lab.hosts:
        (pid, cmd), = raylets(host).items()
        assert f"--node_ip_address={host.fabric_addr} " in cmd
        environ = environ_of(host, pid)
        assert environ["VLLM_HOST_IP"] == host.fabric_addr
        assert environ["STRIXWIZARD_RAY"] == RAY_TEMP
        assert environ["NCCL_SOCKET_IFNAME"] == "=fab0"


def test_a_raylet_started_without_a_variable_fails_the_smoke_naming_it(cluster: Cluster) -> None:
    assert cluster.applied.rc == 0, cluster.applied.stdout
    victim = cluster.lab.hosts[2]
    worker_argv = cluster.doc["plan"]["ray_argv"][victim.name]
    env_file = f"{TARGET}/rccl.env"
    stop_ours(victim)
    # the same `ray start` (marked as the launcher marks it), but its raylet never gets VLLM_HOST_IP
    in_node(victim, f"STRIXWIZARD_RAY={RAY_TEMP}", "sh", "-ac",
            '. "$0" && unset VLLM_HOST_IP && exec "$@"', env_file, *worker_argv, timeout=90)
    try:
        smoked = deploy(cluster, None, "--smoke", "--json")
        assert smoked.rc == 1, smoked.stdout + smoked.stderr
        checks = {c["id"]: c for c in smoked.json()["smoke"]["checks"]}
        assert checks["ray.nodes"]["status"] == "pass", checks["ray.nodes"]
        env = checks["ray.env"]
        assert env["status"] == "fail"
        assert env["detail"] == ("node2: VLLM_HOST_IP is missing from the environment its Ray "
                                 "workers see (its raylet was started without it)")
    finally:  # back to the deployed worker, through the deploy's own launcher
        stop_ours(victim)
        in_node(victim, "sh", f"{TARGET}/ray-start.sh", env_file, RAY_TEMP, *worker_argv,
                timeout=90)
    again = deploy(cluster, None, "--smoke", "--json")
    assert again.rc == 0, again.stdout + again.stderr


def test_rollback_stops_only_strixwizards_ray_and_a_second_ray_is_refused(
        cluster: Cluster) -> None:
    assert cluster.applied.rc == 0, cluster.applied.stdout
    other_node = cluster.lab.hosts[2]
    # someone else's Ray on node2: its own head, port and temp dir, not started by strixwizard
    in_node(other_node, "ray", "start", "--head", f"--node-ip-address={other_node.fabric_addr}",
            "--port=6390", "--temp-dir=/root/someone-elses-ray", "--num-cpus=1",
            f"--object-store-memory={80 * 1024 * 1024}", "--include-dashboard=false",
            "--disable-usage-stats", timeout=90)
    try:
        theirs = set(raylets(other_node)) - set(marked(other_node))
        assert len(theirs) == 1
        rolled = deploy(cluster, None, "--rollback", cluster.doc["apply"]["run_id"], "--yes",
                        "--json")
        assert rolled.rc == 0, rolled.stdout + rolled.stderr
        (pid,) = theirs
        nodes = {n["node"]: n for n in rolled.json()["rollback"]["nodes"]}
        assert nodes["node2"]["state"] == (
            "every value of this run restored; left alone: another Ray runs here "
            f"(raylet PID {pid}, not started by strixwizard)")
        assert "left alone" not in nodes["node0"]["state"] + nodes["node1"]["state"]
        # nothing strixwizard started is left on any node; the other Ray still runs
        for host in cluster.lab.hosts:
            assert not marked(host), f"{host.name}: {marked(host)}"
            assert not (host.home / "strixwizard-etc").exists()
        assert set(raylets(other_node)) == theirs
        # and the deploy will not start a second Ray next to it
        refused = deploy(cluster, None, "--apply", "--yes", "--json")
        assert refused.rc == 2, refused.stdout + refused.stderr
        assert refused.json()["reason"] == (
            f"node2: another Ray runs here (raylet PID {pid}, not started by strixwizard). "
            "The deploy leaves it alone and does not start a second Ray there; stop that Ray "
            "yourself (`ray stop` on node2 ends every Ray there) or deploy on other nodes")
        assert all(not marked(h) for h in cluster.lab.hosts)
        assert set(raylets(other_node)) == theirs
    finally:
        # `ray stop` in node2's own PID namespace ends node2's Ray only
        in_node(other_node, "ray", "stop", timeout=90)
    assert not raylets(other_node)
    assert all(not raylets(h) for h in cluster.lab.hosts)
    assert rolled.json()["status"] == "rolled-back"

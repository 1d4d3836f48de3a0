"""`strixwizard deploy` on real parts: lab namespaces with their own sshd, the real SSH
executor and journal, and STAND-IN `ray` and `mpirun` executables (tests/data/deploy/standins;
they are not Ray or OpenMPI, they answer with the same argv, outputs and exit codes).

The lab's fabric is a veth pair: no RDMA, so the RDMA profile is refused and the apply runs
the explicit TCP profile. Files go to /root/... which, for a lab host's SSH sessions, is that
host's own directory under the lab's temp workdir (never this machine's /etc or /root).

A fabric interface named with shell metacharacters: the env file sourced on every node runs
nothing, the Ray daemon gets the exact name, and the RCCL smoke refuses to hand it to mpirun.
On nodes without `ray`, the failure names `ray`, not the shell that execs it.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli import CliResult, run_cli
from tests.support.lab import Lab, LabHost, _kill_in_netns, lab_fixture, reset_hosts
from tests.support.netdevs import rename

lab2 = lab_fixture(2, name="deploylab2")
DATA = Path(__file__).parent / "data"
TARGET = "/root/strixwizard-etc"  # per lab host: HOST.home/strixwizard-etc
NODE_JOURNAL = "/root/strixwizard-journal"
RAY_TEMP = "/root/strixwizard-ray"  # Ray's --temp-dir, in the host's own home
MPIRUN_STAND_IN = f"""#!/bin/sh
# STAND-IN for mpirun: records its argv and prints what RCCL prints without an RDMA device
# (NET/IB : No device found, then NET/Socket), as on this veth lab.
printf '%s\\n' "$@" > "$HOME/mpirun.argv"
cat {DATA / "live" / "all_reduce_perf_gfx1151_net_socket.txt"}
"""
FAILING_RAY = """#!/bin/sh
# STAND-IN for ray whose worker cannot reach the head (Ray's message and exit status).
case "$1" in
  start) echo "ConnectionError: Unable to connect to GCS at 10.99.0.1:6379" >&2; exit 1 ;;
  stop) echo "Did not find any active Ray processes."; exit 0 ;;
esac
exit 2
"""


def state(host: LabHost) -> Path:
    return host.home / ".ray-stand-in"


def raylet_pid(host: LabHost) -> int | None:
    path = state(host) / "raylet.pid"
    return int(path.read_text()) if path.exists() else None


def calls(host: LabHost) -> list[list[str]]:
    path = state(host) / "calls.log"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def alive(host: LabHost, pid: int | None) -> bool:
    """The stand-in raylet `pid` (a PID of the node's own namespace) runs on `host`."""
    if pid is None:
        return False
    try:
        comm = (host.proc / str(pid) / "comm").read_text().strip()
    except OSError:
        return False
    return comm == "raylet"


@pytest.fixture
def lab(deploylab2: Lab) -> Iterator[Lab]:
    for host in deploylab2.hosts:
        for path in host.bin_dir.glob("*"):
            path.unlink()
        host.stand_in("ray", (DATA / "deploy" / "standins" / "ray").read_text())
        host.stand_in("mpirun", MPIRUN_STAND_IN)
    yield deploylab2
    for host in deploylab2.hosts:  # stop what a failed test left, by PID, in its namespace only
        pid = raylet_pid(host)
        root_pid = host.root_pid(pid) if alive(host, pid) and pid is not None else None
        if root_pid is not None:
            _kill_in_netns([root_pid], [host.netns])
        for path in (state(host), host.home / "strixwizard-etc", host.home / "strixwizard-ray"):
            if path.exists():
                for item in sorted(path.rglob("*"), reverse=True):
                    item.rmdir() if item.is_dir() else item.unlink()
                path.rmdir()


def deploy(site: Path, tmp: Path, *args: str) -> CliResult:
    return run_cli("deploy", "--site", str(site), "--target-dir", TARGET,
                   "--node-journal-dir", NODE_JOURNAL, "--ray-temp-dir", RAY_TEMP, *args,
                   env={"XDG_STATE_HOME": str(tmp / "state")}, timeout=120)


def test_rdma_profile_is_refused_on_a_veth_fabric(lab: Lab, tmp_path: Path) -> None:
    site = lab.write_site_yaml(tmp_path / "lab.yaml")
    done = deploy(site, tmp_path, "--json")
    assert done.rc == 2, done.stdout + done.stderr
    assert done.json()["reason"].startswith(
        "no RDMA profile: node0 and node1 share only an Ethernet link (node0:fab0 ↔ "
        "node1:fab0), no RDMA: deploy over TCP with --transport tcp, or fix the RDMA NIC first")
    assert not (lab.hosts[0].home / "strixwizard-etc").exists()


def test_apply_smoke_converge_and_rollback_leave_hosts_as_they_were(lab: Lab, tmp_path: Path) -> None:
    site = lab.write_site_yaml(tmp_path / "lab.yaml")
    head, worker = lab.hosts
    applied = deploy(site, tmp_path, "--transport", "tcp", "--apply", "--yes", "--json")
    assert applied.rc == 0, applied.stdout + applied.stderr
    doc = applied.json()
    assert (doc["status"], doc["apply"]["status"]) == ("deployed", "applied")
    smoke = {c["id"]: (c["status"], c["observed"]) for c in doc["smoke"]["checks"]}
    assert smoke == {"ray.nodes": ("pass", "2 nodes"),
                     "rccl.transport": ("pass", "NET/Socket"),
                     "rccl.results": ("pass", "7 sizes, avg busbw 2.54512 GB/s, peak 5.81 GB/s")}
    env_text = (worker.home / "strixwizard-etc" / "rccl.env").read_text()
    assert "\nNCCL_SOCKET_IFNAME==fab0\n" in env_text and "\nNCCL_IB_DISABLE=1\n" in env_text
    assert f"\nVLLM_HOST_IP={worker.fabric_addr}\n" in env_text
    # the Ray daemon got the environment before it started (its actors inherit it)
    daemon_env = json.loads((state(worker) / "daemon.env").read_text())
    assert (daemon_env["NCCL_SOCKET_IFNAME"], daemon_env["VLLM_HOST_IP"]) == (
        "=fab0", worker.fabric_addr)
    assert calls(worker)[-1] == ["start", f"--address={head.fabric_addr}:6379",
                                 f"--node-ip-address={worker.fabric_addr}", "--num-gpus=1",
                                 "--disable-usage-stats", f"--temp-dir={RAY_TEMP}"]
    assert (head.home / "mpirun.argv").read_text().splitlines()[:6] == [
        "--allow-run-as-root", "-np", "2", "-H", f"{head.fabric_addr}:1,{worker.fabric_addr}:1",
        "--mca"]
    pids = [(h, raylet_pid(h)) for h in lab.hosts]
    assert all(alive(h, p) for h, p in pids)

    again = deploy(site, tmp_path, "--transport", "tcp", "--json")
    assert again.rc == 0 and again.json()["plan"]["summary"]["changes"] == 0

    run_id = doc["apply"]["run_id"]
    rolled = deploy(site, tmp_path, "--rollback", run_id, "--yes")
    assert rolled.rc == 0, rolled.stdout + rolled.stderr
    assert f"Rollback of run {run_id}: done" in rolled.stdout
    for host in lab.hosts:
        assert not (host.home / "strixwizard-etc").exists()
        assert ["stop"] not in calls(host), "stopped by its marker, not by `ray stop`"
    assert not any(alive(h, p) for h, p in pids)


def test_a_worker_that_cannot_start_rolls_back_the_whole_cluster(lab: Lab, tmp_path: Path) -> None:
    site = lab.write_site_yaml(tmp_path / "lab.yaml")
    head, worker = lab.hosts
    worker.stand_in("ray", FAILING_RAY)
    done = deploy(site, tmp_path, "--transport", "tcp", "--apply", "--yes", "--json")
    assert done.rc == 1, done.stdout + done.stderr
    nodes = {n["node"]: n for n in done.json()["apply"]["nodes"]}
    assert nodes["node1"]["status"] == "rolled-back"
    assert "Unable to connect to GCS" in nodes["node1"]["state"]
    assert nodes["node0"]["status"] == "rolled-back"
    assert done.json()["smoke"] is None
    for host in lab.hosts:
        assert not (host.home / "strixwizard-etc").exists()
    assert ["stop"] not in calls(head) and not alive(head, raylet_pid(head))


def test_the_smoke_reads_the_results_from_the_j_document_where_offered(lab: Lab, tmp_path: Path) -> None:
    """STAND-INs: an all_reduce_perf whose `--help` lists -J (rccl-tests' usage line), and an
    mpirun that writes the -J document where asked (rank 0 runs on the head) and prints the
    log without its table rows: the results can only come from the document."""
    site = lab.write_site_yaml(tmp_path / "lab.yaml")
    head = lab.hosts[0]
    report = DATA / "live" / "all_reduce_perf_gfx1151_J_report.json"
    (head.home / "report.json").write_text(report.read_text())
    head.stand_in("all_reduce_perf", "#!/bin/sh\n# STAND-IN: rccl-tests' usage text (src/common.cu)\n"
                  "printf '\\t[-J,--output_file <file> write output to filepath, if accessible. "
                  "Infer type from suffix (only json supported presently.)] \\n'\n")
    head.stand_in("mpirun", "#!/bin/sh\n# STAND-IN for mpirun + all_reduce_perf -J FILE\n"
                            "printf '%s\\n' \"$@\" > \"$HOME/mpirun.argv\"\nout=\n"
                            "while [ $# -gt 0 ]; do [ \"$1\" = -J ] && { shift; out=$1; }; shift; done\n"
                            "cat \"$HOME/report.json\" > \"$out\"\necho \"$out\" > \"$HOME/report.path\"\n"
                            f"grep -v '^ ' {DATA / 'live' / 'all_reduce_perf_gfx1151_net_socket.txt'}\n")
    applied = deploy(site, tmp_path, "--transport", "tcp", "--apply", "--yes", "--json")
    assert applied.rc == 0, applied.stdout + applied.stderr
    doc = applied.json()
    checks = {c["id"]: c for c in doc["smoke"]["checks"]}
    assert checks["rccl.results"]["observed"] == "7 sizes, avg busbw 2.54512 GB/s, peak 5.81 GB/s"
    assert checks["rccl.results"]["detail"] == "RCCL 2.28.3 (figures from all_reduce_perf -J)"
    written = (head.home / "report.path").read_text().strip()
    assert written.startswith("/tmp/strixwizard-smoke-") and not Path(written).exists()
    argv = (head.home / "mpirun.argv").read_text().splitlines()
    assert argv[-11:-7] == ["all_reduce_perf", "-J", written, "-b"]
    rolled = deploy(site, tmp_path, "--rollback", doc["apply"]["run_id"], "--yes")
    assert rolled.rc == 0, rolled.stdout + rolled.stderr


# -- a fabric interface named with shell metacharacters ---------------------------------------

#: The name of the fabric interface on the nodes of `hostile_lab` (Linux takes it).
HOSTILE = "f;id>PWNED0"
hostilelab = lab_fixture(2, name="hostilelab")


@pytest.fixture
def hostile_lab(hostilelab: Lab) -> Iterator[Lab]:
    """A lab of its own whose fabric interface is named HOSTILE, with the stand-in `ray` and an
    `mpirun` that only records its argv."""
    for host in hostilelab.hosts:
        host.stand_in("ray", (DATA / "deploy" / "standins" / "ray").read_text())
        host.stand_in("mpirun", '#!/bin/sh\nprintf "%s\\n" "$@" > "$HOME/mpirun.argv"\nexit 1\n')
        rename(host, "fab0", HOSTILE)
    yield hostilelab
    for host in hostilelab.hosts:
        pid = raylet_pid(host)
        root_pid = host.root_pid(pid) if pid is not None else None  # the node's PID, in the root's
        if root_pid is not None:
            _kill_in_netns([root_pid], [host.netns])
        rename(host, HOSTILE, "fab0")


def test_deploy_with_a_hostile_interface_name_runs_nothing(hostile_lab: Lab, tmp_path: Path) -> None:
    site = hostile_lab.write_site_yaml(tmp_path / "lab.yaml")
    env = {"XDG_STATE_HOME": str(tmp_path / "state")}
    common = ("--site", str(site), "--target-dir", TARGET, "--node-journal-dir", NODE_JOURNAL,
              "--ray-temp-dir", "/root/strixwizard-ray")
    applied = run_cli("deploy", *common, "--transport", "tcp", "--apply", "--yes", "--json",
                      "--no-smoke", env=env, timeout=120)
    assert applied.rc == 0, applied.stdout + applied.stderr
    assert applied.json()["apply"]["status"] == "applied"
    for host in hostile_lab.hosts:
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
    assert not (hostile_lab.hosts[0].home / "mpirun.argv").exists()
    rolled = run_cli("deploy", *common, "--rollback", "--yes", env=env, timeout=120)
    assert rolled.rc == 0, rolled.stdout + rolled.stderr
    for host in hostile_lab.hosts:
        assert not (host.home / "strixwizard-etc").exists()


# -- nodes without Ray ------------------------------------------------------------------------

#: A lab of its own with no stand-in at all: `ray` is not installed on its nodes.
barelab2 = lab_fixture(2, name="barelab2")




@pytest.fixture
def bare_lab(barelab2: Lab) -> Iterator[Lab]:
    reset_hosts(barelab2)
    yield barelab2
    reset_hosts(barelab2)


def test_deploy_on_nodes_without_ray_names_ray_not_sh(bare_lab: Lab, tmp_path: Path) -> None:
    """`sh DIR/ray-start.sh ENV TEMP ray start …` exits 127 when the launcher's `exec` finds no
    `ray`: the message names `ray`, the program that is missing, not the shell."""
    site = bare_lab.write_site_yaml(tmp_path / "lab.yaml")
    done = run_cli("deploy", "--site", str(site), "--transport", "tcp", "--target-dir",
                   "/root/strixwizard-etc", "--node-journal-dir", NODE_JOURNAL, "--ray-temp-dir",
                   "/root/strixwizard-ray", "--apply", "--yes", "--json", "--no-smoke",
                   env={"XDG_STATE_HOME": str(tmp_path / "state")}, timeout=180)
    try:
        assert done.rc == 1, done.stdout + done.stderr
        states = " ".join(n["state"] for n in done.json()["apply"]["nodes"])
        assert "`ray` is not installed on the node" in states, states
        assert "`sh` is not installed" not in states
    finally:
        for host in bare_lab.hosts:
            shutil.rmtree(host.home / "strixwizard-etc", ignore_errors=True)

"""Nodes reached as a user that is not root, through `sudo -n` (`become: sudo`), on the
namespace lab: each node's sshd refuses root (`PermitRootLogin no`), `alice` may run python3
as root without a password, `bob` only with one (Ubuntu's rule for its `sudo` group); the
users exist only inside the nodes (tests/support/lab_users.py). Sudo's own log shows that a
doctor run sends through sudo only the reads declared root=True.

alice's site goes init -> doctor -> fix -> deploy --stack llama-rpc (real llama.cpp programs,
tests/support/llama_parts.py; the lab's fabric is a veth pair, so the TCP path) with no root
login; a site where one node's sudo refuses stops with one error and exit 2, and no node
changed.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from strixwizard.facts import declared
from strixwizard.onnode.collector import AS_ROOT
from strixwizard.site import load_site
from tests.support.cli import CliResult, run_cli
from tests.support.lab import Lab, LabHost, lab_fixture
from tests.support.lab_users import (
    NOPASSWD_PYTHON,
    WITH_PASSWORD,
    add_logins,
    logins,
    sudo_commands,
    sudo_log,
)
from tests.support.llama_parts import build, stand_in_tree, write_tiny_model

sudolab2 = lab_fixture(2, name="sudolab2", scope="module")
NODE_JOURNAL = "/root/strixwizard-journal"
TARGET = "/root/strixwizard-etc"
RUN_DIR = "/root/strixwizard-run"
BUILD_DIR = "/root/strixwizard-llama-build"
INSTALLED = "/root/strixwizard-llama-bin"
PROGRAMS = ("ggml-rpc-server", "llama-server")


@pytest.fixture(scope="module")
def lab(sudolab2: Lab, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """Both nodes: alice (NOPASSWD python3), bob (sudo with a password), no root login; the
    real llama.cpp programs in each node's stand-in folder (on sudo's secure_path there)."""
    built = build()
    programs = tmp_path_factory.mktemp("llama-bin")
    for host in sudolab2.hosts:
        add_logins(sudolab2, host, {"alice": NOPASSWD_PYTHON, "bob": WITH_PASSWORD})
        for name in PROGRAMS:
            shutil.copy2(built / name, programs / name)
            (host.bin_dir / name).symlink_to(programs / name)
    yield sudolab2


def _env(lab: Lab, tmp: Path) -> dict[str, str]:
    home = tmp / "home"
    (home / ".ssh").mkdir(parents=True, exist_ok=True)
    (home / ".ssh" / "known_hosts").write_text(lab.known_hosts.read_text())
    return {"HOME": str(home), "XDG_STATE_HOME": str(tmp / "state")}


def _site(lab: Lab, tmp: Path, users: tuple[str, str]) -> Path:
    """A site file as `init --no-probe --become sudo` writes it, one login per node."""
    out = tmp / f"site-{'-'.join(users)}.yaml"
    nodes = [arg for host, user in zip(lab.hosts, users, strict=True)
             for arg in ("--node", f"{host.name}={user}@{host.mgmt_addr}")]
    done = run_cli("init", "--out", str(out), "--no-probe", "--become", "sudo", *nodes,
                   "--key", str(lab.client_key), env=_env(lab, tmp))
    assert done.rc == 0, done.stderr
    text = out.read_text()
    for host in lab.hosts:  # init --no-probe leaves the fabric address to fill in
        text = text.replace(f'    host: "{host.mgmt_addr}"\n',
                            f'    host: "{host.mgmt_addr}"\n    fabric_address: "{host.fabric_addr}"\n')
    out.write_text(text)
    return out


def _fix(site: Path, env: dict[str, str], *args: str) -> CliResult:
    return run_cli("fix", "--site", str(site), "--only", "net.mtu", "--runtime-only",
                   "--node-journal-dir", NODE_JOURNAL, *args, env=env, timeout=120)


def _deploy(site: Path, env: dict[str, str], *args: str) -> CliResult:
    return run_cli("deploy", "--site", str(site), "--stack", "llama-rpc", "--transport", "tcp",
                   "--target-dir", TARGET, "--llama-run-dir", RUN_DIR,
                   "--node-journal-dir", NODE_JOURNAL, *args, env=env, timeout=180)


def _node_state(host: LabHost) -> tuple[int, list[str]]:
    """What a run could have changed on a node: its fabric MTU and what root's home holds."""
    return host.mtu(), sorted(p.name for p in host.home.iterdir())


def test_a_sudo_login_goes_from_init_to_a_served_completion_with_no_root_login(
        lab: Lab, tmp_path: Path) -> None:
    env = _env(lab, tmp_path)
    for host in lab.hosts:
        host.run_in_ns(["ip", "link", "set", "dev", "fab0", "mtu", "1500"], check=True)
        assert "PermitRootLogin no" in host.sshd_config.read_text()
    site = tmp_path / "site.yaml"
    nodes = [arg for h in lab.hosts for arg in ("--node", f"{h.name}=alice@{h.mgmt_addr}")]
    made = run_cli("init", "--out", str(site), "--become", "sudo", *nodes,
                   "--key", str(lab.client_key), env=env, timeout=120)
    assert made.rc == 0, made.stderr
    read = load_site(site)
    assert [(n.user, n.become) for n in read.nodes] == [("alice", "sudo")] * 2
    # the collector ran (as root, through sudo) and found each node's fabric address
    assert [n.fabric_address for n in read.nodes] == [h.fabric_addr for h in lab.hosts]

    doctor = run_cli("doctor", "--site", str(site), "--json", env=env, timeout=120)
    assert doctor.rc in (0, 1), doctor.stderr
    hosts = doctor.json()["hosts"]
    assert [(h["name"], h["reachable"]) for h in hosts] == [("node0", True), ("node1", True)]

    # changing an MTU takes root (CAP_NET_ADMIN): the step runner ran through sudo
    fixed = _fix(site, env, "--apply", "--yes", "--json")
    assert fixed.rc == 0, fixed.stdout + fixed.stderr
    assert [h.mtu() for h in lab.hosts] == [9000, 9000]
    assert all((h.home / "strixwizard-journal").is_dir() for h in lab.hosts)

    model = write_tiny_model(tmp_path / "tiny.gguf")
    deployed = _deploy(site, env, "--gguf", str(model), "--rpc-on-head", "--apply", "--yes",
                       "--json")
    assert deployed.rc == 0, deployed.stdout + deployed.stderr
    doc = deployed.json()
    smoke = {c["id"]: c for c in doc["smoke"]["checks"]}
    assert smoke["llama.completion"]["status"] == "pass", smoke
    assert smoke["llama.workers"]["observed"] == "2 RPC server(s) hold layers"
    for host in lab.hosts:  # root's files, written through sudo
        pid_file = host.home / "strixwizard-run" / "ggml-rpc-server.pid"
        assert pid_file.stat().st_uid == 0

    rolled = _deploy(site, env, "--rollback", doc["apply"]["run_id"], "--yes", "--json")
    assert rolled.rc == 0, rolled.stdout + rolled.stderr
    undone = _fix(site, env, "--rollback", "--yes")
    assert undone.rc == 0, undone.stdout + undone.stderr
    assert [h.mtu() for h in lab.hosts] == [1500, 1500]
    for host in lab.hosts:
        seen = logins(host)
        assert seen and set(seen) == {"alice"}, seen  # never root


def test_a_refused_sudo_is_one_error_exit_2_and_no_node_changes(lab: Lab, tmp_path: Path) -> None:
    env = _env(lab, tmp_path)
    site = _site(lab, tmp_path, ("alice", "bob"))  # node1's sudo wants bob's password
    for host in lab.hosts:
        host.run_in_ns(["ip", "link", "set", "dev", "fab0", "mtu", "1500"], check=True)
    before = [_node_state(h) for h in lab.hosts]
    model = write_tiny_model(tmp_path / "tiny.gguf")
    nodes = [arg for host, user in zip(lab.hosts, ("alice", "bob"), strict=True)
             for arg in ("--node", f"{host.name}={user}@{host.mgmt_addr}")]
    unwritten = tmp_path / "init.yaml"
    runs = {"init": run_cli("init", "--out", str(unwritten), "--become", "sudo", *nodes, "--key",
                            str(lab.client_key), env=env, timeout=120),
            "doctor": run_cli("doctor", "--site", str(site), env=env, timeout=120),
            "fix": _fix(site, env, "--apply", "--yes"),
            "deploy": _deploy(site, env, "--gguf", str(model), "--apply", "--yes"),
            "deploy --build": _deploy(site, env, "--build", str(stand_in_tree(tmp_path)),
                                      "--build-dir", BUILD_DIR, "--llama-bin-dir", INSTALLED,
                                      "--apply", "--yes")}
    for command, done in runs.items():
        assert done.rc == 2, (command, done.stdout, done.stderr)
        errors = [line for line in done.stderr.splitlines() if line.startswith("strixwizard: error:")]
        assert len(errors) == 1, (command, done.stderr)
        error = errors[0]
        assert "node1: bob@" in error and "sudo: a password is required" in error, error
        assert "echo 'bob ALL=(root) NOPASSWD: /usr/bin/python3' > /etc/sudoers.d/strixwizard" in error
        assert "Nothing was changed on any node" in error
    assert not unwritten.exists()
    assert [_node_state(h) for h in lab.hosts] == before  # node0's sudo works: still untouched
    fixed_json = _fix(site, env, "--apply", "--yes", "--json")
    assert fixed_json.rc == 2 and fixed_json.json()["error"].startswith("node1: bob@")


def test_a_sudo_logins_doctor_sends_only_the_reads_that_need_root_through_sudo(
        lab: Lab, tmp_path: Path) -> None:
    """The collector runs as alice; sudo's own log shows what ran as root: the probe, and each
    read declared root=True (facts/outputs.py) behind the one-line AS_ROOT program, nothing else."""
    env = _env(lab, tmp_path)
    site = _site(lab, tmp_path, ("alice", "alice"))
    since = {h.name: sudo_log(h).stat().st_size if sudo_log(h).exists() else 0 for h in lab.hosts}
    doctor = run_cli("doctor", "--site", str(site), "--json", env=env, timeout=120)
    assert doctor.rc in (0, 1), doctor.stderr
    hosts = doctor.json()["hosts"]
    assert [h["reachable"] for h in hosts] == [True, True]
    root_reads = [o for o in declared() if o.root and o.collect]
    for host in lab.hosts:
        ran = sudo_commands(host, since[host.name])
        assert ran, f"{host.name}: sudo logged nothing"
        assert all(c.split()[0].endswith("/python3") for c in ran), ran  # the rule's program only
        probes = [c for c in ran if c.endswith("/python3 -c pass")]
        # sudo quotes the one-line program in its log: what follows its last word is the read
        end = AS_ROOT.rsplit(";", 1)[1] + "'"
        reads = [c.split(end, 1)[1].strip() for c in ran if end in c]
        assert len(probes) == 1 and len(probes) + len(reads) == len(ran), ran
        # one line per root read of the spec (mlnx_qos once per netdev), in the spec's order
        programs = [r.split()[0] for r in reads]
        assert set(programs) == {o.argv[0] for o in root_reads}, programs
        assert "grubby --info=DEFAULT" in reads
        assert programs.count("sh") == 2  # the llama.cpp survey and the RPC cache survey
        # the collector itself and every root-free read ran as alice, not through sudo
        assert not [c for c in ran if c.endswith("/python3 -")], ran
        for plain in ("ip", "ethtool", "dcb", "devlink", "rdma", "ibv_devinfo", "dpkg-query"):
            assert plain not in programs, (plain, programs)
    # and what those reads found is in the report: the llama.cpp programs as root sees them
    llama = [c for c in doctor.json()["checks"] if c["id"] == "llama.rpc_rdma"]
    assert llama and all(c["status"] == "pass" for c in llama), llama


def test_the_llama_build_writes_through_sudo(lab: Lab, tmp_path: Path) -> None:
    """`deploy --build` as alice: the source sent, compiled and installed in root's folders
    (alice cannot write /root: every write went through sudo), the install journalled. The
    source is a small CMake project standing in for llama.cpp (a real build is the llama
    tier's, tests/test_doctor_llama_builds_lab.py)."""
    env = _env(lab, tmp_path)
    site = _site(lab, tmp_path, ("alice", "alice"))
    first, second = lab.hosts
    try:
        if shutil.which("glslc") is None:  # this machine has no Vulkan toolchain: refused first
            refused = _deploy(site, env, "--build", str(stand_in_tree(tmp_path / "v")),
                              "--build-backend", "vulkan", "--build-dir", BUILD_DIR,
                              "--llama-bin-dir", INSTALLED, "--apply", "--yes")
            assert refused.rc == 2, (refused.stdout, refused.stderr)
            assert f"{first.name} cannot build llama.cpp (vulkan): glslc, Vulkan headers missing" \
                in refused.stderr and "Ubuntu/Debian: sudo apt install glslc libvulkan-dev" \
                in refused.stderr, refused.stderr
            assert not (first.home / BUILD_DIR.removeprefix("/root/")).exists()
        slow = _deploy(site, env, "--build", str(stand_in_tree(tmp_path / "slow", delay=60)),
                       "--build-backend", "cpu", "--build-dir", BUILD_DIR, "--llama-bin-dir",
                       INSTALLED, "--build-timeout", "3", "--apply", "--yes")
        assert slow.rc == 1, (slow.stdout, slow.stderr)
        assert (f"The build on {first.name} ran past 3 s: it was stopped there and nothing was "
                "installed on any node.") in slow.stdout, slow.stdout
        assert slow.stdout.rstrip().endswith("--apply --yes --build-timeout 60"), slow.stdout
        assert not (first.home / INSTALLED.removeprefix("/root/")).exists()
        done = _deploy(site, env, "--build", str(stand_in_tree(tmp_path)), "--build-backend", "cpu",
                       "--build-dir", BUILD_DIR, "--llama-bin-dir", INSTALLED, "--apply", "--yes")
        assert done.rc == 0, (done.stdout, done.stderr)
        assert f"{second.name}: copying llama-server" in done.stderr
        for host in lab.hosts:
            for program in PROGRAMS:
                installed = host.home / INSTALLED.removeprefix("/root/") / program
                assert installed.stat().st_uid == 0 and installed.stat().st_mode & 0o777 == 0o755
        assert (first.home / BUILD_DIR.removeprefix("/root/") / "build.log").stat().st_uid == 0
        for host in lab.hosts:
            assert "root" not in logins(host)  # never root

        undone = run_cli("deploy", "--site", str(site), "--rollback", "--yes", env=env, timeout=120)
        assert undone.rc == 0, (undone.stdout, undone.stderr)
        for host in lab.hosts:  # nothing was installed before: the rollback removed them
            assert not list((host.home / INSTALLED.removeprefix("/root/")).glob("*-server"))
    finally:
        for host in lab.hosts:
            for folder in (BUILD_DIR, INSTALLED):
                shutil.rmtree(host.home / folder.removeprefix("/root/"), ignore_errors=True)

"""The test lab itself: real namespaces, real sshd, real teardown (needs root)."""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import tests.support.lab as lab_module
from tests.support.lab import (
    REGISTRY,
    Lab,
    LabError,
    LabHost,
    lab_fixture,
    require_lab_tools,
    sweep_stale_labs,
)

REPO = Path(__file__).resolve().parents[1]
SSH_TIMEOUT = 20


def ssh(lab: Lab, host: LabHost, *command: str, key: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        lab.ssh_argv(host, *command, key=key), capture_output=True, text=True, timeout=SSH_TIMEOUT
    )


def root_ns_state() -> dict[str, Any]:
    """What a lab leaves in the root namespace: netns names, link names (with the alias each lab
    sets on its own links), 10.99 routes."""
    links = json.loads(
        subprocess.run(["ip", "-j", "link", "show"], capture_output=True, text=True, check=True).stdout
    )
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    return {
        "netns": sorted(line.split()[0] for line in netns.splitlines() if line.strip()),
        "links": sorted(link["ifname"] for link in links),
        "aliases": {link["ifname"]: link.get("ifalias", "") for link in links},
        "routes": sorted(json.dumps(r, sort_keys=True) for r in lab_module._lab_routes()),
        # read after the links: a lab registers its block before it names anything after it, so
        # every link of a block seen above belongs to a lab this reading finds (or one gone since)
        "claims": _registered_blocks(),
    }


def _registered_blocks() -> dict[int, str]:
    """Block -> prefix of every lab in the registry (this checkout's state format)."""
    claims: dict[int, str] = {}
    for path in REGISTRY.glob("*.json"):
        try:
            state = json.loads(path.read_text())
        except (OSError, ValueError):
            continue  # half written or just removed: its links carry its alias soon enough
        if isinstance(state, dict) and isinstance(state.get("block"), int):
            claims[state["block"]] = str(state.get("prefix", ""))
    return claims


def _foreign_links(lab: Lab, state: dict[str, Any]) -> set[str]:
    """Links of other labs up beside this one (pytest-xdist): named by their alias, never by
    their block, which another lab may take as soon as this one gives it back (a link made a
    moment ago, before its alias, by its block)."""
    return {name for name, alias in state["aliases"].items()
            if (alias.startswith("swlab-") and alias != lab.prefix)
            or (not alias and (m := re.fullmatch(r"sw(\d+)\D.*", name)) and int(m.group(1)) != lab.block)}


def assert_gone(lab: Lab, before: dict[str, Any]) -> None:
    after = root_ns_state()
    assert _own(lab, after) == {"netns": [], "links": [], "routes": []}
    assert _own(lab, after) == _own(lab, before), "down() must restore the root namespace exactly"


def _own(lab: Lab, state: dict[str, Any]) -> dict[str, Any]:
    """What of the root namespace can be this lab's: its namespaces (by prefix), links (its
    alias, or a name of its block before the alias is set) and the routes of its /23 on them.
    With test processes side by side (pytest-xdist) everything else may be another lab's at any
    moment: a block given back is taken again at once, the shared `unreachable` route comes
    before any namespace of the lab that adds it, a link being deleted has no name (`if2420`)."""
    foreign = _foreign_links(lab, state)
    block = re.compile(rf"sw{lab.block}\D")

    # the block given back at teardown is taken again at once by the next lab (the lowest free
    # one): its links, before their alias is set, carry this block's names but are not ours
    reclaimed = state["claims"].get(lab.block, lab.prefix) != lab.prefix

    def mine(name: str) -> bool:
        alias = state["aliases"].get(name, "")
        return alias == lab.prefix or (not alias and not reclaimed and bool(block.match(name)))

    def my_route(route: str) -> bool:
        data = json.loads(route)
        dst = str(data.get("dst", ""))
        in_block = dst.startswith((f"10.99.{lab.block}.", f"10.99.{lab.block + 1}."))
        dev = str(data.get("dev", ""))
        # a route on a link the same reading did not list came with a link made after it was
        # read: another lab's, which took this block back at once
        return in_block and dev in listed and mine(dev) and dev not in foreign

    listed = set(state["links"])

    return {
        "netns": [ns for ns in state["netns"] if ns.startswith(lab.prefix)],
        "links": [name for name in state["links"] if mine(name)],
        "routes": [r for r in state["routes"] if my_route(r)],
    }


def sshd_alive(pid: int) -> bool:
    status = Path(f"/proc/{pid}/status")
    return status.exists() and "\nState:\tZ" not in status.read_text()


def test_require_lab_tools_passes_here() -> None:
    require_lab_tools()


lab = lab_fixture(3, scope="class")  # class scope: torn down before the teardown tests below


class TestThreeHosts:
    """Three hosts: node0 and node1 back to back on the fabric, node2 alone."""

    def test_layout(self, lab: Lab) -> None:
        node0, node1, node2 = lab.hosts
        assert [h.name for h in lab.hosts] == ["node0", "node1", "node2"]
        assert all(h.netns.startswith(lab.prefix) for h in lab.hosts)
        assert all(h.mgmt_addr.startswith("10.99.") for h in lab.hosts)
        assert (node0.fabric_peer, node1.fabric_peer) == ("node1", "node0")
        assert node2.fabric_addr is None and node2.fabric_peer is None
        known = lab.known_hosts.read_text().splitlines()
        assert known == [f"{h.mgmt_addr} {h.host_key_pub}" for h in lab.hosts]
        assert all(line.split()[1] == "ssh-ed25519" for line in known)

    def test_openssh_client_reaches_every_host(self, lab: Lab) -> None:
        for host in lab.hosts:
            argv = [
                "ssh",
                "-F",
                "/dev/null",
                "-i",
                str(lab.client_key),
                "-o",
                f"UserKnownHostsFile={lab.known_hosts}",
                "-o",
                "StrictHostKeyChecking=yes",
                "-o",
                "BatchMode=yes",
                "-o",
                "ConnectTimeout=5",
                f"root@{host.mgmt_addr}",
                "true",
            ]
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=SSH_TIMEOUT)
            assert proc.returncode == 0, proc.stderr

    def test_ssh_config_for_people(self, lab: Lab) -> None:
        proc = subprocess.run(
            ["ssh", "-F", str(lab.ssh_config), "node1", "echo", "ok"],
            capture_output=True,
            text=True,
            timeout=SSH_TIMEOUT,
        )
        assert (proc.returncode, proc.stdout) == (0, "ok\n"), proc.stderr

    def test_host_sees_only_its_own_interfaces(self, lab: Lab) -> None:
        for host in lab.hosts:
            proc = ssh(lab, host, "ls", "/sys/class/net")
            expected = ["fab0", "lo", "mgmt0"] if host.fabric_addr else ["lo", "mgmt0"]
            assert proc.stdout.split() == expected

    def test_fab0_over_ssh_is_the_namespace_netdev(self, lab: Lab) -> None:
        host = lab.hosts[1]
        link = json.loads(host.run_in_ns(["ip", "-j", "link", "show", "fab0"], check=True).stdout)[0]
        proc = ssh(lab, host, "cat", "/sys/class/net/fab0/mtu", "/sys/class/net/fab0/address")
        assert proc.stdout.split() == [str(link["mtu"]), link["address"]]
        host.run_in_ns(["ip", "link", "set", "fab0", "mtu", "4000"], check=True)
        try:
            assert ssh(lab, host, "cat", "/sys/class/net/fab0/mtu").stdout == "4000\n"
            peer = lab.host(host.fabric_peer or "")
            assert ssh(lab, peer, "cat", "/sys/class/net/fab0/mtu").stdout == "1500\n"
        finally:
            host.run_in_ns(["ip", "link", "set", "fab0", "mtu", "1500"], check=True)

    def test_commands_run_in_the_lab_home(self, lab: Lab) -> None:
        host = lab.hosts[0]
        proc = ssh(lab, host, 'echo "$HOME"; echo "$PATH"; ls -A ~; touch ~/marker')
        home, path, *listing = proc.stdout.splitlines()
        assert (home, listing) == ("/root", [])
        assert "pyenv" not in path
        assert (host.home / "marker").exists(), "the sshd's /root is the host's own home dir"
        (host.home / "marker").unlink()
        times = []
        for _ in range(5):
            started = time.perf_counter()
            assert ssh(lab, host, "true").returncode == 0
            times.append(time.perf_counter() - started)
        print(
            f"ssh true round trip: median {statistics.median(times) * 1000:.0f} ms, "
            f"min {min(times) * 1000:.0f} ms"
        )

    def test_fabric_peers_ping_each_other(self, lab: Lab) -> None:
        if shutil.which("ping") is None:
            pytest.fail("ping is missing: apt-get install iputils-ping")
        node0, node1, node2 = lab.hosts
        for src, dst in ((node0, node1), (node1, node0)):
            proc = src.run_in_ns(["ping", "-c", "1", "-W", "1", dst.fabric_addr or ""])
            assert proc.returncode == 0, proc.stdout + proc.stderr
        # No route to the fabric from a host without one, nor from the root namespace.
        assert node2.run_in_ns(["ping", "-c", "1", "-W", "1", node0.fabric_addr or ""]).returncode != 0
        root = subprocess.run(
            ["ping", "-c", "1", "-W", "1", node0.fabric_addr or ""],
            capture_output=True,
            text=True,
            timeout=10,
        )
        assert root.returncode != 0

    def test_wrong_client_key_is_refused(self, lab: Lab, tmp_path: Path) -> None:
        key = tmp_path / "stranger"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
        proc = ssh(lab, lab.hosts[0], "true", key=key)
        assert proc.returncode == 255
        assert "Permission denied" in proc.stderr

    def test_unknown_host_key_is_refused(self, lab: Lab, tmp_path: Path) -> None:
        node0, node1, _ = lab.hosts
        wrong = tmp_path / "known_hosts"
        wrong.write_text(f"{node0.mgmt_addr} {node1.host_key_pub}\n")
        argv = lab.ssh_argv(node0, "true")
        argv[argv.index(f"UserKnownHostsFile={lab.known_hosts}")] = f"UserKnownHostsFile={wrong}"
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=SSH_TIMEOUT)
        assert proc.returncode == 255
        assert "Host key verification failed" in proc.stderr

    def test_kill_and_restart_one_sshd(self, lab: Lab) -> None:
        victim, *others = reversed(lab.hosts)
        old_pid = victim.sshd_pid
        assert old_pid is not None and sshd_alive(old_pid)
        victim.kill_sshd()
        assert victim.sshd_pid is None and not sshd_alive(old_pid)
        proc = ssh(lab, victim, "true")
        assert proc.returncode == 255 and "refused" in proc.stderr
        for other in others:  # killed by PID, not by name: the others live on
            assert other.sshd_pid is not None and sshd_alive(other.sshd_pid)
            assert ssh(lab, other, "true").returncode == 0
        victim.restart_sshd()
        assert victim.sshd_pid not in (None, old_pid)
        assert ssh(lab, victim, "true").returncode == 0

    def test_each_node_has_its_own_process_table(self, lab: Lab) -> None:
        node0, node1, _ = lab.hosts
        sleeper = ssh(lab, node1, "sleep 30 >/dev/null 2>&1 & echo $!")
        pid = int(sleeper.stdout)
        root = node1.root_pid(pid)
        assert root is not None and root != pid, "the node's PIDs are its own"
        # bash prints $! right after fork: the child may not have exec'd sleep yet
        cmdline = Path(f"/proc/{root}/cmdline")
        deadline = time.monotonic() + 5
        while cmdline.read_bytes() != b"sleep\x0030\x00" and time.monotonic() < deadline:
            time.sleep(0.01)
        assert cmdline.read_bytes() == b"sleep\x0030\x00"
        assert node1.node_pids()[pid] == "sleep 30"
        assert (node1.proc / "1" / "cmdline").read_bytes().startswith(b"/usr/bin/python3\x00-c")
        listing = ssh(lab, node0, "ls /proc").stdout.split()
        node0_pids = {int(e) for e in listing if e.isdigit()}
        assert max(node0_pids) < 1000 and 1 in node0_pids
        # pkill on node0 cannot reach node1's sleep; on node1 it does
        assert ssh(lab, node0, "pkill -x sleep; true").returncode == 0
        assert Path(f"/proc/{root}").exists()
        assert ssh(lab, node1, "pkill", "-x", "sleep").returncode == 0
        deadline = time.monotonic() + 5
        while node1.root_pid(pid) is not None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert node1.root_pid(pid) is None

    def test_node_processes_outlive_its_sshd_and_die_with_its_init(self, lab: Lab) -> None:
        node = lab.hosts[2]
        pid = int(ssh(lab, node, "setsid sleep 30 >/dev/null 2>&1 < /dev/null & echo $!").stdout)
        root = node.root_pid(pid)
        init = node.init_pid
        assert root is not None and init is not None
        node.restart_sshd()  # a real node's daemons survive an sshd restart
        assert node.init_pid == init and node.root_pid(pid) == root
        assert ssh(lab, node, "cat", f"/proc/{pid}/cmdline").stdout == "sleep\x0030\x00"
        node.kill_all()
        assert not Path(f"/proc/{root}").exists() and not Path(f"/proc/{init}").exists()
        assert node.init_pid is None
        node.start_sshd()  # boots a new node
        node.wait_sshd()
        assert node.init_pid not in (None, init)
        assert ssh(lab, node, "true").returncode == 0
        assert pid not in node.node_pids()

    def test_site_yaml(self, lab: Lab, tmp_path: Path) -> None:
        from strixwizard.site import load_site

        path = lab.write_site_yaml(tmp_path / "site.yaml", hosts=lab.hosts[1:], deadline=7)
        site = load_site(path)
        node1, node2 = lab.hosts[1], lab.hosts[2]
        assert site.name == "lab"
        assert [n.name for n in site.nodes] == ["node1", "node2"]
        assert (site.nodes[0].host, site.nodes[0].user) == (node1.mgmt_addr, "root")
        assert site.nodes[0].key == str(lab.client_key)
        assert site.nodes[0].fabric_address == node1.fabric_addr
        assert site.nodes[1].host == node2.mgmt_addr and site.nodes[1].fabric_address is None
        assert site.ssh.known_hosts == str(lab.known_hosts) and site.ssh.deadline == 7


def test_down_removes_everything_and_is_idempotent(tmp_path: Path) -> None:
    before = root_ns_state()
    lab = Lab(tmp_path, 2).up()
    pids = [h.sshd_pid for h in lab.hosts]
    assert ssh(lab, lab.hosts[0], "sleep", "0").returncode == 0
    # A session still open at down() is ended too.
    session = subprocess.Popen(
        lab.ssh_argv(lab.hosts[1], "sleep", "60"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while lab.hosts[1].exec_count() < 1 and time.monotonic() < deadline:
            time.sleep(0.02)
        lab.down()
        assert session.wait(timeout=10) != 0
    finally:
        session.kill()
        session.wait(timeout=10)
    assert not any(pid and sshd_alive(pid) for pid in pids)
    assert_gone(lab, before)  # incl. the unreachable route, unless it predates this lab
    lab.down()
    assert_gone(lab, before)


def test_failed_up_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = root_ns_state()
    started: list[int] = []

    def fail_waiting(hosts: list[LabHost], timeout: float = 0) -> None:
        started.extend(h.sshd_pid for h in hosts if h.sshd_pid)
        raise LabError("injected failure")

    monkeypatch.setattr(lab_module, "wait_for_sshds", fail_waiting)
    lab = Lab(tmp_path / "a", 3)
    with pytest.raises(LabError, match="injected"):
        lab.up()
    assert len(started) == 3 and not any(sshd_alive(pid) for pid in started)
    assert_gone(lab, before)


def test_failure_while_wiring_namespaces_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = root_ns_state()
    real = Lab._namespace_cmds

    def broken(self: Lab, host: LabHost) -> list[str]:
        return real(self, host) + (["link set dev nosuchdev up"] if host.index == 1 else [])

    monkeypatch.setattr(Lab, "_namespace_cmds", broken)
    lab = Lab(tmp_path, 3)
    with pytest.raises(LabError, match="nosuchdev"):
        lab.up()
    assert_gone(lab, before)


def test_an_sshd_that_cannot_start_is_reported_with_its_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = root_ns_state()
    real = Lab._sshd_config
    monkeypatch.setattr(Lab, "_sshd_config", lambda self, host: real(self, host) + "NoSuchOption yes\n")
    lab = Lab(tmp_path, 1)
    with pytest.raises(LabError, match=r"node0: sshd exited during start: .*NoSuchOption"):
        lab.up()
    assert_gone(lab, before)


def test_missing_tools_are_named_with_their_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(lab_module.REQUIRED_TOOLS, "no-such-tool-xyz", "some-package")
    with pytest.raises(LabError, match="no-such-tool-xyz: apt-get install some-package"):
        require_lab_tools()


def test_two_labs_side_by_side(tmp_path: Path) -> None:
    before = root_ns_state()
    with Lab(tmp_path / "a", 2) as a:
        with Lab(tmp_path / "b", 2) as b:
            assert a.block != b.block and a.prefix != b.prefix
            assert not {h.mgmt_addr for h in a.hosts} & {h.mgmt_addr for h in b.hosts}
            assert ssh(b, b.hosts[1], "true").returncode == 0
        assert ssh(a, a.hosts[1], "true").returncode == 0
        assert any("unreachable" in r for r in root_ns_state()["routes"]), "a is still up"
    assert_gone(a, before)


def test_a_switched_fabric_joins_every_host_and_stays_off_the_root_namespace(tmp_path: Path) -> None:
    before = root_ns_state()
    with Lab(tmp_path, 3, fabric="switch") as lab:
        node0, node1, node2 = lab.hosts
        assert [h.fabric_addr for h in lab.hosts] == [f"10.99.{lab.block + 1}.{i}" for i in (1, 2, 3)]
        assert all(h.fabric_peer is None for h in lab.hosts)
        for src, dst in ((node0, node2), (node2, node1), (node1, node0)):
            proc = src.run_in_ns(["ping", "-c", "1", "-W", "1", dst.fabric_addr or ""])
            assert proc.returncode == 0, proc.stdout + proc.stderr
        root = subprocess.run(["ping", "-c", "1", "-W", "1", node0.fabric_addr or ""],
                              capture_output=True, text=True, timeout=10)
        assert root.returncode != 0
        assert Lab.from_state(lab.save_state(tmp_path / "state.json")).fabric == "switch"
    assert_gone(lab, before)


def test_lab_refuses_a_workdir_under_root() -> None:
    with pytest.raises(ValueError, match="/root"):
        Lab(Path("/root/lab"), 1)


def test_script_detach_then_down(tmp_path: Path) -> None:
    before = root_ns_state()
    script = [sys.executable, str(REPO / "scripts" / "lab.py")]
    up = subprocess.run(
        [*script, "up", "2", "--dir", str(tmp_path), "--detach"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    state = tmp_path / "lab.json"
    try:
        assert up.returncode == 0, up.stderr
        assert "site.yaml" in up.stdout and f"ssh -F {tmp_path / 'ssh_config'} node0" in up.stdout
        assert (tmp_path / "site.yaml").read_text().startswith("site: lab\n")
        lab = Lab.from_state(state)
        assert ssh(lab, lab.hosts[1], "true").returncode == 0
        assert lab.prefix not in sweep_stale_labs(), "a detached lab is not stale"
    finally:
        down = subprocess.run(
            [*script, "down", "--dir", str(tmp_path)], capture_output=True, text=True, timeout=60
        )
    assert down.returncode == 0, down.stderr
    assert not state.exists()
    assert_gone(lab, before)


def _killed_owners_lab(tmp_path: Path) -> Lab:
    """A lab whose owner was SIGKILLed: up, registered, nobody to tear it down."""
    code = (
        "import os, signal, sys\n"
        "from pathlib import Path\n"
        "from tests.support.lab import Lab\n"
        "lab = Lab(Path(sys.argv[1]), 2).up()\n"
        "print(lab.prefix, flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    owner = subprocess.run([sys.executable, "-c", code, str(tmp_path)], cwd=REPO,
                           capture_output=True, text=True, timeout=60)
    assert owner.returncode == -9, owner.stderr
    return Lab.from_state(REGISTRY / f"{owner.stdout.strip().rstrip('-')}.json")


def test_sweep_tears_down_a_lab_whose_owner_was_killed(tmp_path: Path) -> None:
    before = root_ns_state()
    lab = _killed_owners_lab(tmp_path)
    prefix = lab.prefix
    assert root_ns_state() != before, "the killed owner left its lab behind"
    swept = sweep_stale_labs()
    # another test process sweeping at the same moment (pytest-xdist) may have taken it first
    assert prefix in swept or not lab._registry_file.exists()
    assert_gone(lab, before)
    assert not any(h.sshd_pid and sshd_alive(h.sshd_pid) for h in lab.hosts)


def test_two_sweeps_at_once_tear_a_stale_lab_down_once_and_neither_fails(tmp_path: Path) -> None:
    """Test processes side by side (pytest-xdist) each sweep before their first lab: two that
    tore the same stale lab down at once removed each other's namespaces, and every lab test
    after it failed on "lab teardown incomplete"."""
    import threading

    before = root_ns_state()
    lab = _killed_owners_lab(tmp_path)
    swept: list[list[str]] = []
    errors: list[BaseException] = []

    def sweep() -> None:
        try:
            swept.append(sweep_stale_labs())
        except BaseException as error:
            errors.append(error)

    sweepers = [threading.Thread(target=sweep) for _ in range(2)]
    for sweeper in sweepers:
        sweeper.start()
    for sweeper in sweepers:
        sweeper.join(60)
    assert errors == []
    assert sum(lab.prefix in prefixes for prefixes in swept) <= 1  # another process may sweep too
    assert_gone(lab, before)


def test_a_stale_lab_already_partly_gone_is_swept_without_error(tmp_path: Path) -> None:
    """down() is idempotent: what is already gone (a namespace, a bridge) is not an error."""
    before = root_ns_state()
    lab = _killed_owners_lab(tmp_path)
    subprocess.run(["ip", "netns", "del", lab.netns_names[0]], check=True)
    subprocess.run(["ip", "link", "del", "dev", lab.bridge], check=True)
    swept = sweep_stale_labs()
    assert lab.prefix in swept or not lab._registry_file.exists()
    assert_gone(lab, before)


def test_sweep_passes_over_a_state_file_it_cannot_read() -> None:
    """Another checkout's lab (an older or newer tests/support/lab.py) keeps its state in the same
    registry; the sweep leaves it to its owner instead of failing every lab test here."""
    REGISTRY.mkdir(mode=0o700, exist_ok=True)
    foreign = REGISTRY / f"swlab-foreign-{os.getpid()}.json"
    # an owner that is gone: a detached lab is skipped, and include_detached would sweep the
    # detached labs of tests running beside this one (pytest-xdist)
    dead = subprocess.Popen(["true"])
    dead.wait()
    foreign.write_text(json.dumps({"format": lab_module.STATE_FORMAT, "workdir": "/nonexistent", "n": 1,
                                   "prefix": "swlab-foreign-", "owner_pid": dead.pid, "block": 0,
                                   "hosts": [{"index": 0, "a_field_of_another_version": 1}]}))
    try:
        assert "swlab-foreign-" not in sweep_stale_labs()
        assert foreign.exists()
    finally:
        foreign.unlink()

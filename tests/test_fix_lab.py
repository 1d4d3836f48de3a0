"""Fixes on real parts: lab namespaces with their own sshd and a real veth fabric link `fab0`.

Only the fabric MTU (and a `dcb` step, which veth refuses) is applied here, with
--runtime-only and --only net.mtu: lab nodes share this machine's /etc, so no
persistence file may be written. Node journals go to each node's own /root
(a per-host directory bind-mounted for its sshd). A fabric interface named with shell
metacharacters has its MTU set and restored, running nothing.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fixes.steps import command_step, mtu_step
from strixwizard.fixing.engine import apply_plan
from strixwizard.fixing.journal import JournalStore
from strixwizard.fixing.lock import site_lock
from strixwizard.fixing.model import Plan, SitePlan
from strixwizard.fixing.runner import LocalRunner
from strixwizard.fixing.ssh import SshRunner
from strixwizard.node.target import SshTarget
from strixwizard.site import Site
from tests.support.cli import run_cli
from tests.support.lab import Lab, LabHost, lab_fixture, require_lab_tools, sweep_stale_labs
from tests.support.netdevs import rename

lab2 = lab_fixture(2, name="fixlab2")
NODE_JOURNAL = "/root/strixwizard-journal"
ROOT = Path(__file__).resolve().parent.parent


def set_mtu(host: LabHost, value: int) -> None:
    host.run_in_ns(["ip", "link", "set", "dev", "fab0", "mtu", str(value)], check=True)


def fix(site: Path, state: Path, *args: str, timeout: float = 120):
    return run_cli("fix", "--site", str(site), "--only", "net.mtu", "--runtime-only",
                   "--node-journal-dir", NODE_JOURNAL, *args,
                   env={"XDG_STATE_HOME": str(state)}, timeout=timeout)


@pytest.fixture
def lab(fixlab2: Lab):
    for host in fixlab2.hosts:
        set_mtu(host, 1500)
        for stand_in in host.bin_dir.glob("*"):
            stand_in.unlink()
    yield fixlab2
    for host in fixlab2.hosts:
        if host.sshd_running():
            set_mtu(host, 1500)


def target(lab: Lab, host: LabHost) -> SshTarget:
    return SshTarget(name=host.name, host=host.mgmt_addr, key_file=str(lab.client_key),
                     known_hosts=lab.known_hosts)


def test_mtu_over_ssh_apply_verify_rollback_and_idempotent(lab: Lab, tmp_path: Path) -> None:
    site = lab.write_site_yaml(tmp_path / "lab.yaml")
    plan = fix(site, tmp_path / "state", "--json")
    doc = plan.json()
    assert [(p["node"], p["group"], p["steps"][0]["before"], p["steps"][0]["after"])
            for p in doc["plans"]] == [
        ("node0", "node0:fab0 <-> node1:fab0", "1500", "9000"),
        ("node1", "node0:fab0 <-> node1:fab0", "1500", "9000")]
    applied = fix(site, tmp_path / "state", "--apply", "--yes", "--json")
    report = applied.json()["apply"]
    assert applied.rc == 0, applied.stdout + applied.stderr
    assert report["status"] == "applied" and report["dry_run"] is False
    assert [h.mtu() for h in lab.hosts] == [9000, 9000]
    # both ends were 1500 and equal, below the site's 9000: link.mtu warned before, passes now
    assert {(v["fix"], v["status"]) for v in report["verification"]} == {("net.mtu", "cured")}
    run_id = report["run_id"]
    for host in lab.hosts:  # the journal is kept on the node (its own /root)
        on_node = json.loads((host.home / "strixwizard-journal" / f"{run_id}.json").read_text())
        assert on_node["status"] == "applied" and on_node["steps"][0]["observed_before"] == "1500"
    again = fix(site, tmp_path / "state", "--apply", "--yes", "--json").json()
    assert again["summary"]["changes"] == 0 and again["apply"]["status"] == "nothing-to-do"
    rolled = fix(site, tmp_path / "state", "--rollback", run_id, "--yes")
    assert rolled.rc == 0, rolled.stdout + rolled.stderr
    assert f"Rollback of run {run_id}: done" in rolled.stdout
    assert [h.mtu() for h in lab.hosts] == [1500, 1500]


def test_mtu_locally_in_a_namespace_with_pyroute2(lab: Lab, tmp_path: Path) -> None:
    host = lab.hosts[0]
    runner = LocalRunner(host.name, netns=host.netns, journal_dir=str(tmp_path / "node-journal"))
    plan = SitePlan("lab", [Plan("net.mtu", host.name, f"{host.name}:fab0",
                                 (mtu_step("fab0", 1500, 4000),))])
    store = JournalStore(tmp_path / "journal")
    with site_lock(store.root, "lab", "fix --apply") as holder:
        report = apply_plan(plan, {host.name: runner}, store, Site("lab"), {}, dry_run=False,
                            holder=holder)
    assert report.status == "applied", report.to_json()
    assert host.mtu() == 4000
    step = report.nodes[0].steps[0]
    runner.undo(step.step, step.observed_before)
    assert host.mtu() == 1500


def test_dcb_on_veth_is_refused_clearly_and_nothing_changes(lab: Lab, tmp_path: Path) -> None:
    host = lab.hosts[0]
    plan = SitePlan("lab", [Plan("dcb.pfc", host.name, f"{host.name}:fab0", (
        mtu_step("fab0", 1500, 9000),
        command_step("fab0", "PFC on priority 3 only on fab0",
                     ("dcb", "pfc", "set", "dev", "fab0", "prio-pfc", "all:off", "3:on"),
                     ("dcb", "pfc", "set", "dev", "fab0", "prio-pfc", "all:off"),
                     ("dcb", "-j", "pfc", "show", "dev", "fab0"), "dcb.pfc", "all:off",
                     "all:off 3:on")))])
    store = JournalStore(tmp_path / "journal")
    runner = SshRunner(target(lab, host), NODE_JOURNAL)
    try:
        with site_lock(store.root, "lab", "fix --apply") as holder:
            report = apply_plan(plan, {host.name: runner}, store, Site("lab"), {}, dry_run=False,
                                holder=holder)
    finally:
        runner.close()
    assert report.status == "aborted"
    assert "cannot read the current value of fab0" in report.message
    assert "Operation not supported" in report.message
    assert "nothing was changed on any node" in report.message
    assert host.mtu() == 1500


def test_dcb_set_refused_midway_rolls_back_the_mtu_already_changed(lab: Lab, tmp_path: Path
                                                                   ) -> None:
    host = lab.hosts[1]
    # `dcb ... show` answers as a DCB-capable NIC would; `dcb ... set` is the real dcb on veth
    host.stand_in("dcb", '#!/bin/sh\ncase "$*" in\n*" show "*) echo \'{"pfc_cap":8,"macsec_bypass":'
                  'false,"delay":0,"prio_pfc":[false,false,false,false,false,false,false,false]}\';;\n'
                  '*) exec /usr/sbin/dcb "$@";;\nesac\n')
    plan = SitePlan("lab", [Plan("dcb.pfc", host.name, f"{host.name}:fab0", (
        mtu_step("fab0", 1500, 9000),
        command_step("fab0", "PFC on priority 3 only on fab0",
                     ("dcb", "pfc", "set", "dev", "fab0", "prio-pfc", "all:off", "3:on"),
                     ("dcb", "pfc", "set", "dev", "fab0", "prio-pfc", "all:off"),
                     ("dcb", "-j", "pfc", "show", "dev", "fab0"), "dcb.pfc", "all:off",
                     "all:off 3:on")))])
    store = JournalStore(tmp_path / "journal")
    runner = SshRunner(target(lab, host), NODE_JOURNAL)
    try:
        with site_lock(store.root, "lab", "fix --apply") as holder:
            report = apply_plan(plan, {host.name: runner}, store, Site("lab"), {}, dry_run=False,
                                holder=holder)
    finally:
        runner.close()
    (node,) = report.nodes
    assert report.status == "failed" and node.status == "rolled-back"
    assert [r.status for r in node.steps] == ["rolled-back", "failed"]
    assert "`dcb pfc set dev fab0 prio-pfc all:off 3:on` failed:" in (node.steps[1].error or "")
    assert "Operation not supported" in (node.steps[1].error or "")
    assert "the node is as it was" in node.state
    assert host.mtu() == 1500
    journal = json.loads((host.home / "strixwizard-journal" / f"{report.run_id}.json").read_text())
    assert journal["status"] == "rolled-back"


@pytest.fixture
def fresh_lab(tmp_path_factory: pytest.TempPathFactory):
    require_lab_tools()
    sweep_stale_labs()
    with Lab(tmp_path_factory.mktemp("lab"), 2) as lab:
        yield lab


def test_node_killed_mid_apply_is_reported_and_the_other_end_rolled_back(fresh_lab: Lab,
                                                                        tmp_path: Path) -> None:
    lab = fresh_lab
    node0, node1 = lab.hosts
    marker = node1.home / "mtu-started"
    # node1's `ip` stalls on the MTU change, long enough to pull the plug
    node1.stand_in("ip", '#!/bin/sh\ncase "$*" in\n*" mtu "*) touch /root/mtu-started; sleep 60;;\n'
                   'esac\nexec /usr/sbin/ip "$@"\n')
    site = lab.write_site_yaml(tmp_path / "lab.yaml")
    state = tmp_path / "state"
    argv = [sys.executable, "-m", "strixwizard", "fix", "--site", str(site), "--only", "net.mtu",
            "--runtime-only", "--node-journal-dir", NODE_JOURNAL, "--apply", "--yes", "--json"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**__import__("os").environ, "XDG_STATE_HOME": str(state)})
    deadline = time.monotonic() + 60
    while not marker.exists():
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    killer = threading.Thread(target=node1.kill_all)
    killer.start()
    out, err = proc.communicate(timeout=120)
    killer.join()
    report = json.loads(out)["apply"]
    nodes = {n["node"]: n for n in report["nodes"]}
    assert nodes["node1"]["status"] == "interrupted", err
    assert "unreachable during 'set the MTU of fab0 to 9000'" in nodes["node1"]["state"]
    assert f"--rollback {report['run_id']}" in nodes["node1"]["state"]
    assert nodes["node0"]["status"] == "rolled-back"
    assert "node1 did not complete" in nodes["node0"]["state"]
    assert node0.mtu() == 1500 and node1.mtu() == 1500  # the link is not left mismatched
    head = json.loads(Path(nodes["node1"]["journal"]).read_text())
    assert head["status"] == "interrupted" and head["steps"][0]["status"] == "unknown"
    # the node comes back: the journal rolls it back (nothing to undo: the change never happened)
    (node1.bin_dir / "ip").unlink()
    node1.start_sshd()
    node1.wait_sshd()
    rolled = run_cli("fix", "--rollback", report["run_id"], "--yes",
                     env={"XDG_STATE_HOME": str(state)})
    assert rolled.rc == 0, rolled.stdout + rolled.stderr
    assert "done" in rolled.stdout.splitlines()[0]


# -- a fabric interface named with shell metacharacters ---------------------------------------

#: The name of the fabric interface on the nodes of `hostile_lab` (Linux takes it).
HOSTILE = "f;id>PWNED0"
hostilelab = lab_fixture(2, name="hostilelab")


@pytest.fixture
def hostile_lab(hostilelab: Lab) -> Iterator[Lab]:
    """A lab of its own whose fabric interface is named HOSTILE."""
    for host in hostilelab.hosts:
        rename(host, "fab0", HOSTILE)
    yield hostilelab
    for host in hostilelab.hosts:
        rename(host, HOSTILE, "fab0")


def test_fix_with_a_hostile_interface_name_runs_nothing(hostile_lab: Lab, tmp_path: Path) -> None:
    site = hostile_lab.write_site_yaml(tmp_path / "lab.yaml")
    env = {"XDG_STATE_HOME": str(tmp_path / "state")}
    common = ("--site", str(site), "--only", "net.mtu", "--runtime-only",
              "--node-journal-dir", NODE_JOURNAL)

    def mtus() -> list[int]:
        return [int(json.loads(h.run_in_ns(["ip", "-j", "link", "show", "dev", HOSTILE],
                                           check=True).stdout)[0]["mtu"]) for h in hostile_lab.hosts]

    applied = run_cli("fix", *common, "--apply", "--yes", "--json", env=env, timeout=120)
    assert applied.rc == 0, applied.stdout + applied.stderr
    assert mtus() == [9000, 9000]
    rolled = run_cli("fix", *common, "--rollback", "--yes", env=env, timeout=120)
    assert rolled.rc == 0, rolled.stdout + rolled.stderr
    assert mtus() == [1500, 1500]
    for host in hostile_lab.hosts:
        assert not list(host.home.rglob("PWNED*"))

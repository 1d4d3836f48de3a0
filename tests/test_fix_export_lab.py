"""The fix plan on real lab hosts, beyond the engine's own tests:

- exported to Ansible and run by the real `ansible-playbook` over SSH (check mode
  changes nothing; a real run applies the same change the engine would);
- apply → verify → rollback leaves each host as it began, compared through a
  full capture of the host before and after.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from strixwizard.facts.spec import SPEC
from strixwizard.node import SshTarget, connect
from strixwizard.probe.snapshot import SnapshotProbe
from tests.support.cli import run_cli
from tests.support.lab import Lab, LabHost, lab_fixture

exportlab = lab_fixture(2, name="exportlab")
NODE_JOURNAL = "/root/strixwizard-journal"


@pytest.fixture
def lab(exportlab: Lab):
    for host in exportlab.hosts:
        host.run_in_ns(["ip", "link", "set", "dev", "fab0", "mtu", "1500"], check=True)
    yield exportlab
    for host in exportlab.hosts:
        host.run_in_ns(["ip", "link", "set", "dev", "fab0", "mtu", "1500"], check=True)


def _ansible(lab: Lab, *args: str) -> tuple[int, str]:
    import subprocess

    playbook = Path(sys.executable).with_name("ansible-playbook")
    assert playbook.exists(), "ansible-playbook missing: install the test extras (.[test])"
    env = dict(os.environ, LC_ALL="C.UTF-8", ANSIBLE_NOCOLOR="1",
               ANSIBLE_SSH_COMMON_ARGS=f"-o UserKnownHostsFile={lab.known_hosts} "
               "-o StrictHostKeyChecking=yes -o BatchMode=yes",
               ANSIBLE_PYTHON_INTERPRETER="/usr/bin/python3")
    done = subprocess.run([str(playbook), *args], capture_output=True, text=True, env=env,
                          timeout=180, check=False)
    return done.returncode, done.stdout + done.stderr


def test_exported_playbook_runs_on_lab_hosts(lab: Lab, tmp_path: Path) -> None:
    site = lab.write_site_yaml(tmp_path / "lab.yaml")
    out = tmp_path / "ansible"
    emitted = run_cli("fix", "--site", str(site), "--only", "net.mtu", "--runtime-only",
                      "--emit", "ansible", str(out))
    assert emitted.rc == 0, emitted.stderr
    inventory, playbook = str(out / "inventory.yml"), str(out / "playbook.yml")

    rc, output = _ansible(lab, "--check", "-i", inventory, playbook)
    assert rc == 0, output
    assert "unreachable=0" in output and "failed=0" in output
    assert [h.mtu() for h in lab.hosts] == [1500, 1500]  # check mode changed nothing

    rc, output = _ansible(lab, "-i", inventory, playbook)
    assert rc == 0, output
    assert [h.mtu() for h in lab.hosts] == [9000, 9000]  # the same change the engine plans


def _capture(lab: Lab, host: LabHost) -> SnapshotProbe:
    session = connect(SshTarget(name=host.name, host=host.mgmt_addr, key_file=str(lab.client_key),
                                known_hosts=lab.known_hosts))
    try:
        probe = session.collect(SPEC)
    finally:
        session.close()
    assert isinstance(probe, SnapshotProbe)
    return probe


def _network_state(probe: SnapshotProbe) -> dict[str, object]:
    """Everything the capture saw of the host's network: sysfs net files (its traffic counters
    left out: they grow by themselves) and `ip -j addr`."""
    files = {p: t for p, t in probe.tree.files.items()
             if p.startswith("/sys/devices/virtual/net/") and "/statistics/" not in p}
    addresses = json.loads(probe.run(["ip", "-j", "addr", "show"]).stdout)
    for link in addresses:  # an IPv6 link-local address is "tentative" until the kernel's
        for address in link.get("addr_info", ()):  # duplicate address detection ends: not ours
            address.pop("tentative", None)
    links = {p: t for p, t in probe.tree.links.items() if not p.startswith("/proc/")}  # pids
    return {"files": files, "links": links, "addresses": addresses}


def test_apply_verify_rollback_leaves_hosts_as_they_began(lab: Lab, tmp_path: Path) -> None:
    site = lab.write_site_yaml(tmp_path / "lab.yaml")
    env = {"XDG_STATE_HOME": str(tmp_path / "state")}
    before = [_network_state(_capture(lab, h)) for h in lab.hosts]
    assert any("/mtu" in p for p in before[0]["files"])  # type: ignore[operator]

    applied = run_cli("fix", "--site", str(site), "--only", "net.mtu", "--runtime-only",
                      "--node-journal-dir", NODE_JOURNAL, "--apply", "--yes", "--json", env=env)
    assert applied.rc == 0, applied.stdout + applied.stderr
    report = applied.json()["apply"]
    # both ends were 1500 and equal, below the site's 9000: link.mtu warned before, passes now
    assert {(v["fix"], v["status"]) for v in report["verification"]} == {("net.mtu", "cured")}
    assert _network_state(_capture(lab, lab.hosts[0])) != before[0]

    rolled = run_cli("fix", "--site", str(site), "--rollback", report["run_id"], "--yes",
                     "--node-journal-dir", NODE_JOURNAL, env=env)
    assert rolled.rc == 0, rolled.stdout + rolled.stderr
    after = [_network_state(_capture(lab, h)) for h in lab.hosts]
    for node_before, node_after in zip(before, after, strict=True):
        for key in node_before:
            assert node_after[key] == node_before[key], (key, _diff(node_before[key], node_after[key]))


def _diff(before: object, after: object) -> str:
    import difflib

    def lines(value: object) -> list[str]:
        return json.dumps(value, indent=1, sort_keys=True).splitlines()

    return "\n".join(difflib.unified_diff(lines(before), lines(after), lineterm="", n=1))

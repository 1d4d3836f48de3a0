"""Many nodes over SSH, against the lab: real namespaces, real sshd, real paramiko.

The lab's hosts are not Strix Halo machines and have no RDMA: the report must
say so as findings, and never crash.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from pathlib import Path

import pytest

from strixwizard.facts.spec import SPEC
from tests.support.cli import run_cli, validate_report
from tests.support.lab import Lab, lab_fixture, require_lab_tools, sweep_stale_labs

lab3 = lab_fixture(3)


@pytest.fixture
def fresh_lab(tmp_path_factory: pytest.TempPathFactory):
    """A lab of 3 hosts for one test, for tests that break hosts."""
    require_lab_tools()
    sweep_stale_labs()
    with Lab(tmp_path_factory.mktemp("lab"), 3) as lab:
        yield lab


SCHEMA = json.loads((Path(__file__).resolve().parent.parent / "strixwizard" / "schema"
                     / "doctor.schema.json").read_text())


def _doctor(site: Path, *extra: str):
    """Every path must end with one valid JSON document and a documented exit code."""
    result = run_cli("doctor", "--site", str(site), "--json", *extra)
    validate_report(result.json(), SCHEMA)
    assert result.rc in (0, 1, 2)
    assert "Traceback" not in result.stderr
    return result


def test_doctor_over_ssh_reports_every_host_with_one_exec_each(lab3: Lab, tmp_path: Path,
                                                               report_schema) -> None:
    site = lab3.write_site_yaml(tmp_path / "lab.yaml")
    before = [host.exec_count() for host in lab3.hosts]
    result = _doctor(site)
    report = result.json()
    validate_report(report, report_schema)
    assert [h["name"] for h in report["hosts"]] == ["node0", "node1", "node2"]
    for host in report["hosts"]:
        assert host["reachable"] is True and host["source"] == "ssh", host
        assert host["address"].startswith("root@10.99.")
        assert host["facts"]["strix_halo"] is False
    strix = [c for c in report["checks"] if c["id"] == "node.strix_halo"]
    assert [c["status"] for c in strix] == ["fail"] * 3
    assert result.rc == 1
    assert [host.exec_count() - b for host, b in zip(lab3.hosts, before, strict=True)] == [1, 1, 1]


def test_the_lab_nodes_facts_come_from_their_own_namespace(lab3: Lab, tmp_path: Path) -> None:
    """What was collected over SSH is the remote node's, e.g. its hostname-independent kernel."""
    site = lab3.write_site_yaml(tmp_path / "lab.yaml")
    capture = run_cli("capture", "--site", str(site), "--out", str(tmp_path / "bundle"))
    assert capture.rc == 0, capture.stderr
    archives = sorted((tmp_path / "bundle").glob("*.tar.gz"))
    assert [a.name for a in archives] == ["node0.tar.gz", "node1.tar.gz", "node2.tar.gz"]
    replay = run_cli("doctor", "--json", *[arg for a in archives for arg in ("--snapshot", str(a))])
    report = replay.json()
    assert len(report["hosts"]) == 3
    assert all(h["source"] == "snapshot" and h["reachable"] for h in report["hosts"])
    assert replay.rc == 1


def _but_for_source(report: dict) -> dict:
    """A doctor report without what differs between a node read live and its snapshot."""
    doc = {k: v for k, v in report.items() if k != "generated_at"}
    doc["hosts"] = [{k: v for k, v in h.items() if k not in ("source", "address")} for h in doc["hosts"]]
    return doc


def test_a_site_bundle_replays_as_the_site(lab3: Lab, tmp_path: Path) -> None:
    """`capture --site` then `doctor --snapshot bundle/*`: same names, links and findings."""
    site = lab3.write_site_yaml(tmp_path / "lab.yaml")
    live = _doctor(site)
    capture = run_cli("capture", "--site", str(site), "--out", str(tmp_path / "bundle"))
    assert capture.rc == 0, capture.stderr
    archives = sorted(str(a) for a in (tmp_path / "bundle").glob("*.tar.gz"))
    assert f"replay as the site with: strixwizard doctor --snapshot {' '.join(archives)}" in capture.stdout
    replay = run_cli("doctor", "--json", "--snapshot", *archives)
    assert replay.rc == live.rc
    replayed, real = replay.json(), live.json()
    assert [h["name"] for h in replayed["hosts"]] == ["node0", "node1", "node2"]
    assert {h["source"] for h in replayed["hosts"]} == {"snapshot"}
    assert [link["id"] for link in replayed["links"]] == [link["id"] for link in real["links"]]
    assert any("fab0" in link["id"] for link in real["links"])
    assert _but_for_source(replayed) == _but_for_source(real)
    refused = run_cli("capture", "--site", str(site), "--tar", "--out", str(tmp_path / "b.tar.gz"))
    assert refused.rc == 2 and "leave out --tar" in refused.stderr
    assert not (tmp_path / "b.tar.gz").exists()


def test_init_reads_the_nodes_and_writes_their_fabric_addresses(lab3: Lab, tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "known_hosts").write_text(lab3.known_hosts.read_text())
    out = tmp_path / "site.yaml"
    nodes = [arg for h in lab3.hosts for arg in ("--node", f"{h.name}=root@{h.mgmt_addr}")]
    before = [host.exec_count() for host in lab3.hosts]
    result = run_cli("init", "--out", str(out), *nodes, "--key", str(lab3.client_key),
                     env={"HOME": str(home)})
    assert result.rc == 0, result.stderr
    assert [host.exec_count() - b for host, b in zip(lab3.hosts, before, strict=True)] == [1, 1, 1]
    from strixwizard.site import load_site

    written = {n.name: n.fabric_address for n in load_site(out).nodes}
    with_fabric = [h for h in lab3.hosts if h.fabric_addr]
    assert with_fabric and all(written[h.name] == h.fabric_addr for h in with_fabric)
    assert all(written[h.name] is None for h in lab3.hosts if not h.fabric_addr)
    text = out.read_text()
    assert "found by init: fab0" in text
    report = run_cli("doctor", "--site", str(out), "--json", env={"HOME": str(home)}).json()
    assert any("fab0" in link["id"] for link in report["links"])
    paths = [c for c in report["checks"] if c["id"] == "site.rdma_path"]
    for check in paths:
        assert "No fabric interfaces of these nodes share a subnet" not in check["detail"]
    # without the addresses, doctor says what is true: fab0 on both ends does share a subnet
    bare = tmp_path / "bare.yaml"
    assert run_cli("init", "--out", str(bare), *nodes, "--key", str(lab3.client_key), "--no-probe").rc == 0
    report = run_cli("doctor", "--site", str(bare), "--json", env={"HOME": str(home)}).json()
    a, b = with_fabric[:2]
    (pair,) = [c for c in report["checks"]
               if c["id"] == "site.rdma_path" and c["entity"] == f"{a.name} <-> {b.name}"]
    assert f"{a.name}:fab0 {a.fabric_addr}/30 and {b.name}:fab0 {b.fabric_addr}/30 do share a subnet" \
        in pair["detail"], pair["detail"]


def test_unknown_host_key_is_refused_with_its_fingerprint_then_trusted(lab3: Lab, tmp_path: Path
                                                                      ) -> None:
    known = tmp_path / "known_hosts"
    site = lab3.write_site_yaml(tmp_path / "lab.yaml", hosts=lab3.hosts[:1], known_hosts=known)
    refused = _doctor(site)
    assert refused.rc == 2  # nothing reachable: no verdict
    error = refused.json()["hosts"][0]["error"]
    assert "unknown host key for 10.99." in error and "SHA256:" in error
    assert "--trust-new-hosts" in error
    assert not known.exists()
    trusted = _doctor(site, "--trust-new-hosts")
    assert trusted.json()["hosts"][0]["reachable"] is True
    assert lab3.hosts[0].host_key_pub.split()[1] in known.read_text()
    again = _doctor(site)  # now known: no flag needed
    assert again.json()["hosts"][0]["reachable"] is True


def test_changed_host_key_is_always_refused(lab3: Lab, tmp_path: Path) -> None:
    host = lab3.hosts[0]
    other_key = lab3.hosts[1].host_key_pub
    known = tmp_path / "known_hosts"
    known.write_text(f"{host.mgmt_addr} {other_key}\n")
    site = lab3.write_site_yaml(tmp_path / "lab.yaml", hosts=[host], known_hosts=known)
    for extra in ((), ("--trust-new-hosts",)):
        result = _doctor(site, *extra)
        assert result.rc == 2
        error = result.json()["hosts"][0]["error"]
        assert "CHANGED" in error and "ssh-keygen -R" in error


def test_wrong_key_is_refused_and_the_others_still_get_verdicts(lab3: Lab, tmp_path: Path) -> None:
    wrong = tmp_path / "wrong_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(wrong)], check=True)
    site = lab3.write_site_yaml(tmp_path / "lab.yaml")
    text = site.read_text().replace(f'"{lab3.client_key}"', f'"{wrong}"', 1)
    site.write_text(text)
    result = _doctor(site)
    report = result.json()
    hosts = {h["name"]: h for h in report["hosts"]}
    assert hosts["node0"]["reachable"] is False
    assert f"root@{lab3.hosts[0].mgmt_addr} refused key {wrong}" in hosts["node0"]["error"]
    assert hosts["node1"]["reachable"] and hosts["node2"]["reachable"]
    assert {c["host"] for c in report["checks"]} - {None} == {"node1", "node2"}
    assert result.rc == 1
    private = wrong.read_text()
    body = private.splitlines()[1]
    assert body not in result.stdout and body not in result.stderr  # no key material


def test_a_node_that_is_down_is_reported_and_the_run_goes_on(fresh_lab: Lab, tmp_path: Path) -> None:
    fresh_lab.hosts[1].kill_sshd()
    site = fresh_lab.write_site_yaml(tmp_path / "lab.yaml", connect_timeout=2)
    started = time.monotonic()
    result = _doctor(site)
    report = result.json()
    hosts = {h["name"]: h for h in report["hosts"]}
    assert hosts["node1"]["reachable"] is False
    assert "cannot connect to 10.99." in hosts["node1"]["error"]
    assert hosts["node0"]["reachable"] and hosts["node2"]["reachable"]
    assert result.rc == 1
    assert time.monotonic() - started < 15


def test_a_collector_that_hangs_hits_the_deadline(fresh_lab: Lab, tmp_path: Path) -> None:
    fresh_lab.hosts[2].stand_in("python3", "#!/bin/sh\n# stand-in: a collector that hangs\nexec sleep 20\n")
    site = fresh_lab.write_site_yaml(tmp_path / "lab.yaml", deadline=2)
    started = time.monotonic()
    result = _doctor(site)
    elapsed = time.monotonic() - started
    hosts = {h["name"]: h for h in result.json()["hosts"]}
    assert hosts["node2"]["reachable"] is False
    assert "did not finish within 2 s" in hosts["node2"]["error"]
    assert hosts["node0"]["reachable"] and hosts["node1"]["reachable"]
    assert result.rc == 1
    assert elapsed < 12


def test_sshd_killed_mid_run(fresh_lab: Lab, tmp_path: Path) -> None:
    victim = fresh_lab.hosts[0]
    # stand-in: the collector starts slowly, so the host can die while it runs
    victim.stand_in("python3", "#!/bin/sh\nsleep 3\nexec /usr/bin/python3 \"$@\"\n")
    site = fresh_lab.write_site_yaml(tmp_path / "lab.yaml", deadline=20)

    def kill_when_session_starts() -> None:
        deadline = time.monotonic() + 10
        while victim.exec_count() == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        victim.kill_all()

    killer = threading.Thread(target=kill_when_session_starts)
    killer.start()
    result = _doctor(site)
    killer.join(timeout=15)
    hosts = {h["name"]: h for h in result.json()["hosts"]}
    assert hosts["node0"]["reachable"] is False
    assert "node0" not in {c["host"] for c in result.json()["checks"]}
    assert any(word in hosts["node0"]["error"] for word in ("collector failed", "connection lost"))
    assert hosts["node1"]["reachable"] and hosts["node2"]["reachable"]
    assert result.rc == 1


def test_no_python_on_the_node_is_explained(fresh_lab: Lab, tmp_path: Path) -> None:
    fresh_lab.hosts[0].stand_in("python3", "#!/bin/sh\necho 'python3: not found' >&2\nexit 127\n")
    site = fresh_lab.write_site_yaml(tmp_path / "lab.yaml", hosts=fresh_lab.hosts[:1])
    result = _doctor(site)
    assert result.rc == 2
    assert "python3 is not installed" in result.json()["hosts"][0]["error"]


def test_an_ansible_inventory_is_the_node_list(lab3: Lab, tmp_path: Path) -> None:
    hosts = "\n".join(
        f"        {h.name}:\n          ansible_host: {h.mgmt_addr}\n"
        + (f"          fabric_address: {h.fabric_addr}\n" if h.fabric_addr else "")
        for h in lab3.hosts
    )
    inventory = tmp_path / "inventory.yml"
    inventory.write_text(
        "all:\n  vars:\n    ansible_user: root\n"
        f"    ansible_ssh_private_key_file: {lab3.client_key}\n"
        f"  children:\n    strix:\n      hosts:\n{hosts}"
    )
    site = tmp_path / "site.yaml"
    site.write_text(f"site: lab\nssh:\n  known_hosts: {lab3.known_hosts}\n")
    result = run_cli("doctor", "--site", str(site), "--inventory", str(inventory), "--json")
    report = result.json()
    assert [h["name"] for h in report["hosts"]] == ["node0", "node1", "node2"]
    assert all(h["reachable"] for h in report["hosts"])
    assert result.rc == 1


def test_a_malformed_inventory_names_file_and_line(tmp_path: Path) -> None:
    inventory = tmp_path / "inventory.yml"
    inventory.write_text("all:\n  hosts:\n    node0:\n      ansible_port: [22]\n")
    result = run_cli("doctor", "--inventory", str(inventory), "--json")
    assert result.rc == 2
    assert f"{inventory}:4: host node0.ansible_port must be a single value" in result.stderr
    assert result.json()["status"] == "error"


def test_progress_goes_to_stderr_on_a_terminal_only(lab3: Lab, tmp_path: Path) -> None:
    site = lab3.write_site_yaml(tmp_path / "lab.yaml")
    piped = run_cli("doctor", "--site", str(site))
    assert "collecting over SSH" not in piped.stderr
    from tests.support.terminal import run_on_pty

    on_terminal = run_on_pty(["doctor", "--site", str(site)])
    assert "node0: collecting over SSH from root@10.99." in on_terminal
    assert "✓ node0: collected in" in on_terminal


def test_a_confirmed_fingerprint_trusts_that_key_only(lab3: Lab, tmp_path: Path) -> None:
    """The wizard pins the key the user saw: a different key is refused even when trusting."""
    from strixwizard.services.nodes import site_nodes
    from strixwizard.site import load_site

    host = lab3.hosts[0]
    known = tmp_path / "known_hosts"
    site = load_site(lab3.write_site_yaml(tmp_path / "lab.yaml", hosts=[host], known_hosts=known))
    [refused] = site_nodes(site)
    assert refused.report.reachable is False
    seen = refused.report.error.split("ssh-ed25519 ")[1].split(";")[0]
    assert seen.startswith("SHA256:")
    [wrong] = site_nodes(site, trusted_fingerprints={host.name: "SHA256:not-the-one-you-saw"})
    assert wrong.report.reachable is False
    assert "not the SHA256:not-the-one-you-saw you confirmed" in (wrong.report.error or "")
    assert not known.exists()
    [trusted] = site_nodes(site, trusted_fingerprints={host.name: seen})
    assert trusted.report.reachable is True
    assert host.host_key_pub.split()[1] in known.read_text()


def test_an_encrypted_key_without_passphrase_says_so(lab3: Lab, tmp_path: Path) -> None:
    """Not "refused key": the node never saw the key, strixwizard could not unlock it."""
    locked = tmp_path / "locked_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "a passphrase", "-f", str(locked)],
                   check=True)
    site = lab3.write_site_yaml(tmp_path / "lab.yaml", hosts=lab3.hosts[:1])
    site.write_text(site.read_text().replace(f'"{lab3.client_key}"', f'"{locked}"'))
    result = _doctor(site)
    error = result.json()["hosts"][0]["error"]
    assert f"key {locked} is encrypted and needs a passphrase" in error
    assert "refused" not in error
    assert result.rc == 2


def test_an_unreadable_key_file_is_named(lab3: Lab, tmp_path: Path) -> None:
    site = lab3.write_site_yaml(tmp_path / "lab.yaml", hosts=lab3.hosts[:1])
    missing = tmp_path / "no_such_key"
    site.write_text(site.read_text().replace(f'"{lab3.client_key}"', f'"{missing}"'))
    error = _doctor(site).json()["hosts"][0]["error"]
    assert error == f"cannot read key {missing}: No such file or directory"


def test_one_connection_serves_collection_ops_and_programs(lab3: Lab, tmp_path: Path) -> None:
    """The session keeps one SSH connection per node for everything it does there."""
    from strixwizard.node.channel import Run
    from strixwizard.node.ssh import SshSession
    from strixwizard.node.target import SshTarget, target_for
    from strixwizard.site import load_site

    site = load_site(lab3.write_site_yaml(tmp_path / "lab.yaml", hosts=lab3.hosts[:1]))
    target = target_for(site, site.nodes[0])
    assert isinstance(target, SshTarget)
    session = SshSession(target)
    host = lab3.hosts[0]
    before = host.sshd_log.read_text().count("Accepted publickey")
    try:
        probe = session.collect(SPEC)
        assert "processor" in (probe.read("/proc/cpuinfo") or "")
        ops = session.ops()
        assert ops.send(Run(("echo", "a b; c"))).stdout == "a b; c\n"
        ops.close()
        process = session.start(["sh", "-c", "exec strixwizard-no-such-tool"], 10)
        assert process.wait(10) and process.not_found
        assert process.program == "strixwizard-no-such-tool"
    finally:
        session.close()
    assert host.sshd_log.read_text().count("Accepted publickey") - before == 1


@pytest.mark.parametrize("program", ["collector", "step runner", "first request"])
def test_a_python3_that_ends_before_taking_its_program_is_said_missing(fresh_lab: Lab, program: str
                                                                      ) -> None:
    """The stand-in exits 127 at once; when that beats the upload of the collector (or of the
    fix engine's step runner), the write finds the session closed. It must still say python3
    is missing (the exit status), not "connection lost" (CI saw that twice, under load): the
    write is made to come late here. The last case is CI's second: the upload was taken (the
    bytes queued before the close arrived) and the step runner's first request found the
    session closed."""
    from strixwizard.node.errors import RuntimeMissing
    from strixwizard.node.ssh import SshOps, SshSession
    from strixwizard.node.target import SshTarget

    host = fresh_lab.hosts[0]
    host.stand_in("python3", "#!/bin/sh\nexit 127\n")

    class LateWriter(SshSession):
        def open_channel(self):  # type: ignore[no-untyped-def]
            channel = super().open_channel()
            run = channel.exec_command

            def run_then_wait_for_its_end(command: str) -> None:
                run(command)
                assert channel.status_event.wait(10)  # the program ended before the upload
                assert channel.closed or channel.exit_status_ready()

            channel.exec_command = run_then_wait_for_its_end  # type: ignore[method-assign]
            if program == "first request":
                send = channel.sendall

                def take_the_upload_then_wait_for_the_close(data: bytes) -> None:
                    channel.sendall = send  # type: ignore[method-assign]
                    deadline = time.monotonic() + 10
                    while not channel.closed and time.monotonic() < deadline:
                        time.sleep(0.01)
                    assert channel.closed

                channel.sendall = take_the_upload_then_wait_for_the_close  # type: ignore[method-assign]
            return channel

    session = LateWriter(SshTarget(name=host.name, host=host.mgmt_addr, key_file=str(fresh_lab.client_key),
                                   known_hosts=fresh_lab.known_hosts))
    with pytest.raises(RuntimeMissing, match="python3 is not installed"):
        if program == "collector":
            session.collect_archive(SPEC)
        else:
            SshOps(session)

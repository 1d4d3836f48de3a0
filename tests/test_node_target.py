"""One node factory: `target_for` picks a site node's target, `connect` its session, and a
target writes itself into a journal and is read back from one (old descriptors included)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from strixwizard.facts.spec import SPEC
from strixwizard.fixing.journal import NodeJournal
from strixwizard.fixing.model import Kind, Read, Step
from strixwizard.fixing.runner import LocalRunner, SnapshotRunner, Unreachable
from strixwizard.fixing.site_apply import descriptor, runner_for, runner_for_session, runner_from_journal
from strixwizard.fixing.ssh import SshRunner
from strixwizard.node import LocalTarget, SnapshotTarget, SshTarget, connect, target_for
from strixwizard.node.local import LocalSession
from strixwizard.node.replay import ReplayConnector, SnapshotSession
from strixwizard.node.target import target_from_json
from strixwizard.services.nodes import site_nodes
from strixwizard.site import Site, load_site

DEMO = Path(__file__).resolve().parent.parent / "strixwizard" / "demo" / "snapshots"


def _site(tmp_path: Path) -> Site:
    path = tmp_path / "site.yaml"
    path.write_text("site: mixed\nssh:\n  known_hosts: kh\n  connect_timeout: 2\n  deadline: 30\n"
                    f"nodes:\n  - name: snap\n    snapshot: {DEMO / 'node-a.tar.gz'}\n"
                    "  - name: here\n    host: local\n"
                    "  - name: there\n    host: 10.99.250.2\n    user: admin\n    port: 2222\n"
                    "    key: id_test\n")
    return load_site(path)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_target_for_picks_the_kind_of_every_node(tmp_path: Path) -> None:
    site = _site(tmp_path)
    snap, here, there = (target_for(site, spec, dry_run_root=tmp_path / "dry") for spec in site.nodes)
    assert snap == SnapshotTarget("snap", DEMO / "node-a.tar.gz", tmp_path / "dry" / "snap")
    assert here == LocalTarget("here")
    assert there == SshTarget("there", "10.99.250.2", "admin", 2222, str(tmp_path / "id_test"),
                              tmp_path / "kh", connect_timeout=2, deadline=30)
    assert [t.kind for t in (snap, here, there)] == ["snapshot", "local", "ssh"]
    assert there.address == "admin@10.99.250.2:2222" and snap.address == str(DEMO / "node-a.tar.gz")


def test_connect_gives_a_session_for_every_kind(tmp_path: Path) -> None:
    site = _site(tmp_path)
    snap, here, _ = (target_for(site, spec) for spec in site.nodes)
    session = connect(snap)
    assert isinstance(session, SnapshotSession) and session.copy is None
    assert session.collect(SPEC).read("/proc/cpuinfo") is not None
    assert isinstance(connect(here), LocalSession)


@pytest.mark.parametrize("target", [
    SshTarget("n", "10.0.0.2", "admin", 2222, "/k", Path("/kh"), connect_timeout=2, deadline=30),
    LocalTarget("n"), LocalTarget("n", "ns1"), SnapshotTarget("n", Path("/c"), Path("/c")),
])
def test_a_target_reads_back_from_what_it_writes(target: SshTarget | LocalTarget | SnapshotTarget
                                                 ) -> None:
    assert target_from_json("n", target.to_json()) == target


def test_journals_written_before_targets_serialised_themselves_still_read() -> None:
    """The descriptors journals held before targets wrote themselves (field by field)."""
    old_ssh = {"kind": "ssh", "host": "10.0.0.2", "user": "root", "port": 22, "key_file": None,
               "known_hosts": "/root/.ssh/known_hosts", "connect_timeout": 5.0, "deadline": 60.0,
               "journal_dir": "/var/lib/strixwizard/journal"}
    assert target_from_json("n", old_ssh) == SshTarget("n", "10.0.0.2",
                                                       known_hosts=Path("/root/.ssh/known_hosts"))
    assert descriptor(target_from_json("n", old_ssh), "/var/lib/strixwizard/journal") == old_ssh
    old_local = {"kind": "local", "journal_dir": "/j"}
    assert descriptor(target_from_json("n", old_local), "/j") == old_local
    old_snapshot = {"kind": "snapshot", "root": "/tmp/copy/n"}
    assert descriptor(target_from_json("n", old_snapshot), "/j") == old_snapshot
    with pytest.raises(ValueError, match="does not say how to reach n"):
        target_from_json("n", {"kind": "carrier-pigeon"})


def test_a_dry_run_writes_only_into_its_private_copy(tmp_path: Path) -> None:
    site = _site(tmp_path)
    original = DEMO / "node-a.tar.gz"
    before = _digest(original)
    runner, desc = runner_for(site, site.nodes[0], trust_new_hosts=False, node_journal_dir="/j",
                              dry_run_root=tmp_path / "dry")
    assert isinstance(runner, SnapshotRunner) and runner.root == tmp_path / "dry" / "snap"
    assert desc == {"kind": "snapshot", "root": str(tmp_path / "dry" / "snap")}
    step = Step(Kind.WRITE, "/etc/strixwizard-test", "test", Read("file", path="/etc/strixwizard-test"),
                before=None, after="1")
    runner.apply(step)
    assert (runner.root / "fs" / "etc" / "strixwizard-test").read_text() == "1\n"
    assert _digest(original) == before
    again = runner_from_journal(NodeJournal("r", "snap", "mixed", runner.where, desc, True, [], []))
    assert isinstance(again, SnapshotRunner) and again.root == runner.root


def test_a_snapshot_without_a_copy_is_never_written(tmp_path: Path) -> None:
    target = SnapshotTarget("snap", DEMO / "node-a.tar.gz")
    with pytest.raises(Unreachable, match="without a private copy"):
        runner_for_session(target, connect(target))


def test_a_journal_whose_copy_is_gone_is_unreachable(tmp_path: Path) -> None:
    journal = NodeJournal("r", "snap", "s", "w", {"kind": "snapshot", "root": str(tmp_path / "gone")},
                          True, [], [])
    with pytest.raises(Unreachable, match=r"dry-run copy .* is gone"):
        runner_from_journal(journal)


def test_every_caller_reaches_nodes_through_the_one_connector(tmp_path: Path) -> None:
    """Discovery and the fix engine ask the same connector, snapshots included."""
    site = _site(tmp_path)
    connector = ReplayConnector(unreachable={"there": "refused"})
    snap, here, there = site_nodes(site, connector=connector)
    assert snap.report.reachable and snap.report.source == "snapshot"
    assert not here.report.reachable and here.report.source == "local"  # nothing recorded for it
    assert there.report.error == "refused" and there.report.address == "admin@10.99.250.2:2222"
    assert sorted(connector.sessions) == ["here", "snap", "there"]
    local = runner_for_session(LocalTarget("here"), connector(LocalTarget("here")), "/j")
    ssh = runner_for_session(target_for(site, site.nodes[2]), connector(target_for(site, site.nodes[2])))
    assert isinstance(local, LocalRunner) and isinstance(ssh, SshRunner)
    assert ssh.where == "ssh admin@10.99.250.2:2222"

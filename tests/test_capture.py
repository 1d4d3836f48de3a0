"""The collector and `strixwizard capture`, on fake trees and on this very machine; a support
bundle's snapshots say which site and node they are, and plain snapshots stay plain; a capture
writes only inside its directory, and its archive is private."""

from __future__ import annotations

import json
import os
import stat
import tarfile
from pathlib import Path
from typing import Any

import pytest

from strixwizard.demo.scenarios import strix_halo_node
from strixwizard.errors import UsageError
from strixwizard.facts import NodeFacts
from strixwizard.onnode.collector import DirSink, collect
from strixwizard.probe.local import LocalProbe
from strixwizard.probe.snapshot import SnapshotProbe
from strixwizard.services.capture import capture_local, capture_site, replayed_site, with_site_meta
from strixwizard.site import NodeSpec, Site
from tests.support.cli import invoke
from tests.support.hostile import strings
from tests.support.hostile.bundles import hostile_bundle
from tests.support.hostile.strings import assert_no_control

#: what a newer Python changes (tarfile: snapshots written and read back): run on 3.12 and up too
pytestmark = pytest.mark.interpreter


def _fake_root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    device = root / "sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0"
    device.mkdir(parents=True)
    (device / "vendor").write_text("0x8086\n")
    (device / "device").write_text("0x1592\n")
    (root / "sys/bus/pci/devices").mkdir(parents=True)
    (root / "sys/bus/pci/devices/0000:01:00.0").symlink_to(
        "../../../devices/pci0000:00/0000:00:01.0/0000:01:00.0")
    # an absolute symlink must come out relative, inside the snapshot
    (root / "sys/bus/pci/drivers/ice").mkdir(parents=True)
    (device / "driver").symlink_to("/sys/bus/pci/drivers/ice")
    return root


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_collector_keeps_symlinks_relative_and_inside(tmp_path: Path) -> None:
    out = tmp_path / "snap"
    spec = {"files": ["/sys/bus/pci/devices/*/vendor", "/sys/bus/pci/devices/*/device"],
            "links": ["/sys/bus/pci/devices/*/driver"], "commands": []}
    collect(spec, DirSink(str(out)), "test", root=str(_fake_root(tmp_path)))
    link = out / "fs/sys/bus/pci/devices/0000:01:00.0"
    assert link.is_symlink()
    assert os.readlink(link) == "../../../devices/pci0000:00/0000:00:01.0/0000:01:00.0"
    driver = out / "fs/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/driver"
    assert not os.path.isabs(os.readlink(driver))
    probe = SnapshotProbe.load(out)
    assert probe.read("/sys/bus/pci/devices/0000:01:00.0/device") == "0x1592\n"
    assert probe.readlink("/sys/bus/pci/devices/0000:01:00.0/driver") == (
        "../../../../bus/pci/drivers/ice"
    )


def test_collector_runs_commands_and_records_missing_ones(tmp_path: Path) -> None:
    out = tmp_path / "snap"
    before = {n for n in os.listdir("/sys/class/net") if n != "lo"}
    spec = {"files": [], "links": [], "commands": [
        {"argv": ["echo", "hello world"]},
        {"argv": ["strixwizard-no-such-tool", "--x"]},
        {"argv": ["cat", "/sys/class/net/{netdev}/mtu"], "each": "netdev"},
    ]}
    collect(spec, DirSink(str(out)), "test")
    commands = json.loads((out / "commands.json").read_text())
    by_argv = {tuple(c["argv"]): c for c in commands}
    assert by_argv[("echo", "hello world")]["stdout"] == "hello world\n"
    assert by_argv[("strixwizard-no-such-tool", "--x")]["rc"] == 127
    # interfaces present throughout (test labs may come and go around this test)
    netdevs = before & set(os.listdir("/sys/class/net"))
    assert netdevs
    for netdev in netdevs:
        assert by_argv[("cat", f"/sys/class/net/{netdev}/mtu")]["rc"] == 0
    probe = SnapshotProbe.load(out)
    assert probe.run(["echo", "hello world"]).stdout == "hello world\n"


def test_capture_of_this_machine_replays_to_the_same_facts(cli, tmp_path: Path) -> None:
    out = tmp_path / "here"
    result = cli("capture", "--out", str(out))
    assert result.rc == 0, result.stderr
    assert f"doctor --snapshot {out}" in result.stdout
    live = NodeFacts("here", LocalProbe())
    replay = NodeFacts("here", SnapshotProbe.load(out))
    assert replay.cpu == live.cpu
    assert replay.kernel == live.kernel
    assert replay.pci == live.pci
    assert replay.gpu == live.gpu
    assert replay.memory.total_bytes is not None


def test_capture_tar_then_doctor_reports_this_machine_is_not_strix_halo(cli, tmp_path) -> None:
    result = cli("capture", "--out", str(tmp_path / "bundle"), "--tar")
    assert result.rc == 0, result.stderr
    archive = tmp_path / "bundle.tar.gz"
    with tarfile.open(archive) as tar:
        names = tar.getnames()
    assert {"meta.json", "commands.json"} <= set(names)
    doctor = cli("doctor", "--snapshot", str(archive), "--json")
    assert doctor.rc == 1, doctor.stderr
    report = doctor.json()
    strix = [c for c in report["checks"] if c["id"] == "node.strix_halo"]
    assert strix[0]["status"] == "fail"
    assert "Not a Strix Halo node" in strix[0]["detail"]
    assert report["hosts"][0]["facts"]["strix_halo"] is False


def test_capture_refuses_to_overwrite(cli, tmp_path: Path) -> None:
    out = tmp_path / "taken"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    result = cli("capture", "--out", str(out))
    assert result.rc == 2
    assert "already exists" in result.stderr
    assert (out / "keep.txt").read_text() == "mine"


def test_empty_gid_slots_are_not_listed_as_unreadable(tmp_path: Path, monkeypatch: Any) -> None:
    """An unused GID slot's attributes answer EINVAL (ENODATA on newer kernels); any other
    failed read is still listed, with its errno text."""
    import errno

    from strixwizard.onnode import collector

    root = tmp_path / "root"
    port = root / "sys/class/infiniband/rxe0/ports/1"
    (port / "gid_attrs/types").mkdir(parents=True)
    for index in range(3):
        (port / f"gid_attrs/types/{index}").write_text("")
    (port / "rate").write_text("")
    real_read = collector.read_bounded

    def kernel_read(path: str) -> bytes:
        if path.endswith("/types/1"):
            raise OSError(errno.EINVAL, os.strerror(errno.EINVAL), path)
        if path.endswith("/types/2"):
            raise OSError(errno.ENODATA, os.strerror(errno.ENODATA), path)
        if path.endswith("/rate"):
            raise OSError(errno.EIO, os.strerror(errno.EIO), path)
        return real_read(path)

    monkeypatch.setattr(collector, "read_bounded", kernel_read)
    spec = {"files": ["/sys/class/infiniband/*/ports/*/gid_attrs/types/*",
                      "/sys/class/infiniband/*/ports/*/rate"], "links": [], "commands": []}
    out = tmp_path / "snap"
    collect(spec, DirSink(str(out)), "test", root=str(root))
    meta = json.loads((out / "meta.json").read_text())
    assert meta["unreadable"] == {"/sys/class/infiniband/rxe0/ports/1/rate": os.strerror(errno.EIO)}
    assert (out / "fs/sys/class/infiniband/rxe0/ports/1/gid_attrs/types/0").exists()


def test_commands_find_sbin_tools_from_a_login_without_sbin_on_path(monkeypatch: Any) -> None:
    """A non-root SSH login on Debian has PATH=/usr/local/bin:/usr/bin:/bin: ethtool, dcb and
    rdma (in /usr/sbin) must still be found; the user's own PATH keeps its order."""
    from strixwizard.onnode.collector import run_command, search_path

    assert search_path("/usr/bin:/sbin") == "/usr/bin:/sbin:/usr/local/sbin:/usr/sbin"
    monkeypatch.setenv("PATH", "/usr/local/bin:/usr/bin:/bin")
    done = run_command(["sh", "-c", 'echo "$PATH"'])
    assert done["stdout"].strip() == "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"


def _bundle_node(snapshot_of, tmp_path: Path, host: str, node: str, site: str = "lab") -> Path:
    archive = snapshot_of(strix_halo_node(host), as_tar=True)
    meta = {"name": site, "node": node, "fabric_address": None, "fabric": {"mtu": 4200},
            "thresholds": {"rdma_latency_us": 6.0}, "allow_soft_rdma": False}
    out = tmp_path / f"{node}.tar.gz"
    out.write_bytes(with_site_meta(archive.read_bytes(), meta))
    return out


def test_bundle_snapshots_replay_with_their_site_names_and_settings(snapshot_of, tmp_path: Path) -> None:
    paths = [_bundle_node(snapshot_of, tmp_path, "vm", "node0"),
             _bundle_node(snapshot_of, tmp_path, "vm", "node1")]
    site = replayed_site([(p, SnapshotProbe.load(p)) for p in paths])
    assert site is not None and site.name == "lab"
    assert [n.name for n in site.nodes] == ["node0", "node1"]
    assert site.fabric.mtu == 4200 and site.thresholds.rdma_latency_us == 6.0
    report = invoke("doctor", "--json", "--snapshot", *map(str, paths)).json()
    assert report["site"] == "lab" and [h["name"] for h in report["hosts"]] == ["node0", "node1"]


def test_snapshots_of_different_sites_replay_by_host_name(snapshot_of, tmp_path: Path) -> None:
    a = _bundle_node(snapshot_of, tmp_path, "vm", "node0", site="one")
    b = _bundle_node(snapshot_of, tmp_path, "vm", "node1", site="two")
    assert replayed_site([(p, SnapshotProbe.load(p)) for p in (a, b)]) is None
    plain = snapshot_of(strix_halo_node("strix-a"))
    assert replayed_site([(plain, SnapshotProbe.load(plain))]) is None
    report = invoke("doctor", "--json", "--snapshot", str(a), str(b)).json()
    assert [h["name"] for h in report["hosts"]] == ["vm", "vm-2"]


def test_a_bundle_naming_a_bad_node_is_refused(snapshot_of, tmp_path: Path) -> None:
    archive = snapshot_of(strix_halo_node("vm"), as_tar=True)
    bad = tmp_path / "bad.tar.gz"
    bad.write_bytes(with_site_meta(archive.read_bytes(), {"name": "lab", "node": "../x"}))
    with pytest.raises(UsageError, match="not a node name"):
        replayed_site([(bad, SnapshotProbe.load(bad))])
    assert json.loads(json.dumps(SnapshotProbe.load(bad).meta))["site"]["node"] == "../x"


def test_local_capture_archive_is_private(tmp_path: Path) -> None:
    out = capture_local(tmp_path / "me", as_tar=True, root=str(tmp_path / "empty-root"))
    assert mode(out) == 0o600


def test_capture_never_writes_outside_its_directory(tmp_path: Path) -> None:
    out = tmp_path / "out" / "captures"
    site = Site("lab", nodes=(NodeSpec(name="../../x", host="local"),))
    result = capture_site(site, out, trust_new_hosts=False)
    assert result.written == {} and "would not land in" in result.failed["../../x"]
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["captures", "out"]


@pytest.mark.parametrize("site_name", ["x\n\x1b]0;PWNED\x07[/]", "[/]", "a b", "../etc"])
def test_a_bundles_site_name_follows_the_site_file_rules(tmp_path: Path, site_name: str) -> None:
    paths = hostile_bundle(tmp_path, "6.18.5", "4.91", site_name=site_name)
    result = invoke("doctor", "--snapshot", *map(str, paths))
    assert result.rc == 2 and "which is not a site name" in result.stderr, result.stderr
    assert_no_control(result.stdout + result.stderr)


@pytest.mark.parametrize(("field", "value"), [("host", "10.99.250.1\n  - name: ghost"),
                                              ("host", "x\x1b]0;PWNED\x07"),
                                              ("fabric_address", strings.IPV6_SCOPES[0]),
                                              ("fabric_address", "not-an-address")])
def test_a_bundles_node_addresses_follow_the_site_file_rules(tmp_path: Path, field: str,
                                                             value: str) -> None:
    paths = hostile_bundle(tmp_path, "6.18.5", "4.91", nodes={"node-b": {field: value}})
    result = invoke("doctor", "--snapshot", *map(str, paths))
    assert result.rc == 2 and f"meta.json's node 'node-b': {field}" in result.stderr, result.stderr
    assert_no_control(result.stdout + result.stderr)

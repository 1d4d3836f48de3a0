"""The snapshot probe: loading directories and archives, symlinks, and refusing bad input."""

from __future__ import annotations

import gzip
import io
import json
import os
import tarfile
from pathlib import Path

import pytest

from strixwizard.demo.builder import FakeNode
from strixwizard.demo.scenarios import strix_halo_node
from strixwizard.probe import NotCaptured
from strixwizard.probe.snapshot import SnapshotError, SnapshotProbe


def test_directory_snapshot_answers_files_links_and_listings(snapshot_of) -> None:
    probe = SnapshotProbe.load(snapshot_of(strix_halo_node("strix-a")))
    assert probe.host == "strix-a"
    # /sys/bus/pci/devices/X is a symlink into /sys/devices; reads go through it.
    assert probe.read("/sys/bus/pci/devices/0000:c5:00.0/device") == "0x1586\n"
    assert probe.readlink("/sys/bus/pci/devices/0000:c5:00.0/driver") == (
        "../../../../bus/pci/drivers/amdgpu"
    )
    assert "0000:c5:00.0" in probe.listdir("/sys/bus/pci/devices")
    # /etc/os-release is a relative symlink to ../usr/lib/os-release
    assert 'PRETTY_NAME="Fedora Linux 43' in (probe.read("/etc/os-release") or "")
    assert probe.read("/no/such/file") is None
    assert probe.listdir("/no/such/dir") == []


def test_tar_snapshot_answers_like_the_directory(snapshot_of) -> None:
    node = strix_halo_node("strix-a")
    from_dir = SnapshotProbe.load(snapshot_of(node))
    from_tar = SnapshotProbe.load(snapshot_of(node, as_tar=True))
    for path in ("/proc/cpuinfo", "/sys/class/drm/card1/device/mem_info_gtt_total",
                 "/sys/class/kfd/kfd/topology/nodes/1/properties"):
        assert from_tar.read(path) == from_dir.read(path) is not None


def test_archive_with_a_top_directory_is_accepted(snapshot_of, tmp_path: Path) -> None:
    directory = snapshot_of(strix_halo_node("strix-a"))
    archive = tmp_path / "bundle.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(directory, arcname="strix-a")
    assert SnapshotProbe.load(archive).read("/proc/sys/kernel/hostname") == "strix-a\n"


def test_commands_not_captured_raise(snapshot_of) -> None:
    node = FakeNode("n")
    probe = SnapshotProbe.load(snapshot_of(node))
    with pytest.raises(NotCaptured, match="command not captured: ethtool -i eth0"):
        probe.run(["ethtool", "-i", "eth0"])


def test_symlink_loops_and_escapes_stay_inside_the_snapshot(tmp_path: Path) -> None:
    root = tmp_path / "snap"
    (root / "fs" / "sys").mkdir(parents=True)
    (root / "meta.json").write_text(json.dumps({"format": "strixwizard-snapshot/1", "host": "h"}))
    (root / "fs" / "sys" / "loop").symlink_to("loop")
    (root / "fs" / "sys" / "escape").symlink_to("../../../../../../etc")
    probe = SnapshotProbe.load(root)
    assert probe.read("/sys/loop/x") is None
    assert probe.read("/sys/escape/passwd") is None  # never the real /etc/passwd


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p.mkdir(), "no meta.json"),
        (lambda p: (p.mkdir(), (p / "meta.json").write_text("{oops")), "meta.json is not valid JSON"),
        (lambda p: (p.mkdir(), (p / "meta.json").write_text('{"format": "other/2"}')),
         "format is 'other/2'"),
        (lambda p: (p.mkdir(), (p / "meta.json").write_text(
            '{"format": "strixwizard-snapshot/1"}'), (p / "commands.json").write_text('[{"x": 1}]')),
         "commands.json is malformed"),
    ],
    ids=["empty-dir", "bad-meta", "wrong-format", "bad-commands"],
)
def test_directories_that_are_not_snapshots_are_refused(tmp_path: Path, make, message) -> None:
    path = tmp_path / "snap"
    make(path)
    with pytest.raises(SnapshotError, match=message):
        SnapshotProbe.load(path)


def test_missing_path_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SnapshotError, match="no such file or directory"):
        SnapshotProbe.load(tmp_path / "absent")


def test_truncated_archive_is_refused(snapshot_of, tmp_path: Path) -> None:
    archive = snapshot_of(strix_halo_node("strix-a"), as_tar=True)
    data = archive.read_bytes()
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(SnapshotError, match="not a readable snapshot archive"):
        SnapshotProbe.load(cut)


def test_garbage_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "garbage.tar.gz"
    path.write_bytes(b"this is not a tar archive at all" * 10)
    with pytest.raises(SnapshotError, match="not a readable snapshot archive"):
        SnapshotProbe.load(path)


def test_archive_without_meta_is_refused(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        info = tarfile.TarInfo("fs/proc/cpuinfo")
        info.size = 3
        tar.addfile(info, io.BytesIO(b"abc"))
    path = tmp_path / "nometa.tar.gz"
    path.write_bytes(gzip.compress(buffer.getvalue()))
    with pytest.raises(SnapshotError, match=r"no meta\.json"):
        SnapshotProbe.load(path)


def test_snapshot_archive_links_are_rewritten_inside_the_copy(tmp_path: Path) -> None:
    from strixwizard.probe.snapshot import SnapshotProbe, SnapshotTree

    tree = SnapshotTree()
    tree.add_file("/sys/devices/x/mtu", "1500\n")
    tree.add_link("/sys/class/net/eth0", "/sys/devices/x")
    tree.add_link("/sys/class/net/up", "../../../../../etc")
    probe = SnapshotProbe(tree, {"host": "n"}, [], "n")
    out = probe.write_dir(tmp_path / "copy")
    net = out / "fs" / "sys" / "class" / "net"
    assert os.readlink(net / "eth0") == "../../devices/x"
    assert os.readlink(net / "up") == "../../../etc"
    assert (net / "eth0" / "mtu").read_text() == "1500\n"

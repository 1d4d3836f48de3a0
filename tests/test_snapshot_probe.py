"""The snapshot probe: loading directories and archives, symlinks, and refusing bad input; a
hostile snapshot or archive (a member claiming 2 GiB, a device, a FIFO, 1800 levels, a command
whose rc is not a whole number) is refused in one line and exit 2, in bounded memory and time,
reading nothing outside it; a copy's links are rewritten to stay inside it."""

from __future__ import annotations

import gzip
import io
import json
import os
import resource
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import jsonschema
import pytest

from strixwizard.demo.builder import FakeNode
from strixwizard.demo.scenarios import strix_halo_node
from strixwizard.probe import NotCaptured, snapshot
from strixwizard.probe.snapshot import SnapshotError, SnapshotProbe
from tests.support.cli import SCHEMA_PATH

#: what a newer Python changes (tarfile and the snapshot reader): run on 3.12 and up too
pytestmark = pytest.mark.interpreter


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


META = json.dumps({"format": "strixwizard-snapshot/1", "host": "h"}).encode()


#: The doctor process may use this much address space; a snapshot that would need more is a bug.
MEMORY_CAP = 1024 * 1024 * 1024


def _add(tar: tarfile.TarFile, name: str, data: bytes, **fields: object) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    for key, value in fields.items():
        setattr(info, key, value)
    tar.addfile(info, io.BytesIO(data))


def _archive(path: Path, build: object) -> Path:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        _add(tar, "meta.json", META)
        build(tar)  # type: ignore[operator]
    path.write_bytes(gzip.compress(buffer.getvalue(), compresslevel=1))
    return path


def _huge_member_header(path: Path) -> Path:
    """A member whose header claims 2 GiB, followed by only a little data: a loader that reads
    before it checks the size would first try to read it all."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        _add(tar, "meta.json", META)
    head = buffer.getvalue()[:1024]  # meta.json's header and its one block of data, no end blocks
    info = tarfile.TarInfo("fs/proc/cpuinfo")
    info.size = 2 * 1024**3
    path.write_bytes(gzip.compress(head + info.tobuf() + bytes(4 * 1024 * 1024), compresslevel=1))
    return path


def _device_member(path: Path) -> Path:
    def build(tar: tarfile.TarFile) -> None:
        _add(tar, "fs/dev/zero", b"", type=tarfile.CHRTYPE, devmajor=1, devminor=5)
    return _archive(path, build)


def _fifo_member(path: Path) -> Path:
    return _archive(path, lambda tar: _add(tar, "fs/run/pipe", b"", type=tarfile.FIFOTYPE))


def _deep_directory(path: Path) -> Path:
    path.mkdir()
    (path / "meta.json").write_bytes(META)
    deep = path / "fs"
    os.makedirs(deep)
    descriptor = os.open(deep, os.O_RDONLY)
    try:  # 1800 levels: more than a recursive walk can take, made relative to stay under PATH_MAX
        for _ in range(1800):
            os.mkdir("d", dir_fd=descriptor)
            child = os.open("d", os.O_RDONLY, dir_fd=descriptor)
            os.close(descriptor)
            descriptor = child
    finally:
        os.close(descriptor)
    return path


def _remove_deep(path: Path) -> None:
    """Remove what `_deep_directory` made, bottom up (a recursive rmtree would overflow)."""
    if not (path / "fs").is_dir():
        return
    descriptors = [os.open(path / "fs", os.O_RDONLY)]
    try:
        while os.path.isdir(f"/proc/self/fd/{descriptors[-1]}/d"):
            descriptors.append(os.open("d", os.O_RDONLY, dir_fd=descriptors[-1]))
        for parent in reversed(descriptors[:-1]):
            os.rmdir("d", dir_fd=parent)
    finally:
        for descriptor in descriptors:
            os.close(descriptor)


def _fifo_in_directory(path: Path) -> Path:
    path.mkdir()
    (path / "meta.json").write_bytes(META)
    (path / "fs" / "run").mkdir(parents=True)
    os.mkfifo(path / "fs" / "run" / "pipe")
    return path


def _commands(rc: str) -> object:
    def make(path: Path) -> Path:
        path.mkdir()
        (path / "meta.json").write_bytes(META)
        (path / "commands.json").write_text(f'[{{"argv": ["ip", "-j", "addr", "show"], "rc": {rc}}}]')
        return path
    return make


CORPUS = {
    "member-claims-2GiB": (_huge_member_header, "the cap on one file"),
    "device-in-archive": (_device_member, "device, FIFO or socket"),
    "fifo-in-archive": (_fifo_member, "device, FIFO or socket"),
    "1800-deep-directory": (_deep_directory, "the cap on depth"),
    "fifo-in-directory": (_fifo_in_directory, "device, FIFO or socket"),
    "rc-infinity": (_commands("Infinity"), "rc must be a whole number"),
    "rc-nan": (_commands("NaN"), "rc must be a whole number"),
    "rc-float": (_commands("1.5"), "rc must be a whole number"),
    "rc-true": (_commands("true"), "rc must be a whole number"),
    "rc-huge": (_commands("1e400"), "rc must be a whole number"),
}


def _doctor_capped(*args: str) -> subprocess.CompletedProcess[str]:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))

    return subprocess.run([sys.executable, "-m", "strixwizard", "doctor", *args],
                          capture_output=True, text=True, timeout=60, check=False,
                          stdin=subprocess.DEVNULL, preexec_fn=limit)


@pytest.mark.parametrize("case", sorted(CORPUS))
def test_hostile_snapshot_is_refused_in_one_line(case: str, tmp_path: Path) -> None:
    make, message = CORPUS[case]
    if case != "1800-deep-directory":
        _judged_in_one_line(make(tmp_path / case), message)
        return
    # Outside pytest's temporary directory: its clean-up walks trees recursively.
    scratch = Path(tempfile.mkdtemp(prefix="sw-deep-"))
    try:
        _judged_in_one_line(make(scratch / case), message)
    finally:
        _remove_deep(scratch / case)
        shutil.rmtree(scratch)


def _judged_in_one_line(path: Path, message: str) -> None:
    with pytest.raises(SnapshotError, match=message):
        SnapshotProbe.load(path)
    text = _doctor_capped("--snapshot", str(path))
    assert text.returncode == 2
    assert message in text.stderr and "Traceback" not in text.stderr
    assert len(text.stderr.strip().splitlines()) == 1
    as_json = _doctor_capped("--json", "--snapshot", str(path))
    assert as_json.returncode == 2 and "Traceback" not in as_json.stderr
    document = json.loads(as_json.stdout)
    jsonschema.validate(document, json.loads(SCHEMA_PATH.read_text()))
    assert document["status"] == "error" and message in document["error"]


def test_a_device_path_is_refused_without_reading_it() -> None:
    with pytest.raises(SnapshotError, match="not a directory or a regular file"):
        SnapshotProbe.load("/dev/zero")


@pytest.mark.parametrize(("cap", "value", "message", "members"), [
    ("MAX_SNAPSHOT_BYTES", 1000, "the cap on a snapshot's size", 3),
    ("MAX_MEMBERS", 10, "the cap on entries", 20),
])
def test_archive_caps_stop_loading_as_entries_arrive(cap: str, value: int, message: str, members: int,
                                                     tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                     ) -> None:
    monkeypatch.setattr(snapshot, cap, value)

    def build(tar: tarfile.TarFile) -> None:
        for index in range(members):
            _add(tar, f"fs/sys/file{index}", bytes(600))

    with pytest.raises(SnapshotError, match=message):
        SnapshotProbe.load(_archive(tmp_path / "many.tar.gz", build))

"""A dry run changes its copy of the snapshots and nothing else, even for a hostile bundle
whose links point out of it; a fix whose checks all skip is "not verified", never "cured"."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tarfile
from pathlib import Path

import pytest

from checks import ALL
from fixes import BY_ID
from fixes.steps import mtu_step
from strixwizard.demo.hardware import RoceSetup, e810
from strixwizard.demo.scenarios import strix_halo_node
from strixwizard.fixing.engine import verify
from strixwizard.fixing.model import Plan, SitePlan
from strixwizard.fixing.runner import SnapshotRunner, StepFailed
from strixwizard.site import Site
from tests.support.cli import run_cli


def tree_hash(root: Path) -> str:
    """Every path under `root`, its kind, link target or content."""
    digest = hashlib.sha256()
    for dirpath, dirnames, filenames in sorted(os.walk(root)):
        dirnames.sort()
        for name in sorted([*dirnames, *filenames]):
            path = Path(dirpath) / name
            digest.update(str(path.relative_to(root)).encode() + b"\0")
            if path.is_symlink():
                digest.update(b"L" + os.readlink(path).encode())
            elif path.is_file():
                digest.update(b"F" + path.read_bytes())
            else:
                digest.update(b"D")
    return digest.hexdigest()


def hostile_bundle(world: Path, name: str) -> Path:
    """A snapshot whose configfs is a link the snapshot's own tree sees as a loop, while on
    disk it leads to `world/outside`: a dry run that falls back to the raw path writes there."""
    node = strix_halo_node(name)
    e810(node, "192.168.100.2/30", "b4:96:91:9c:41:d8", setup=RoceSetup(roce_mode="RoCE v2"))
    node.file("/proc/1/comm", "systemd\n")
    bundle = world / "bundle" / name
    bundle.mkdir(parents=True)
    node.capture(bundle)
    config = bundle / "fs" / "sys" / "kernel" / "config"
    shutil.rmtree(config)
    outside = world / "outside"
    outside.mkdir(exist_ok=True)
    os.symlink(str(outside), config)  # absolute: on disk, out of the copy
    back = bundle / "fs" / str(outside).lstrip("/")
    back.parent.mkdir(parents=True)
    os.symlink("/sys/kernel/config", back)  # ... and in the tree, back again: a loop
    (world / "outside-file").write_text("keep\n")
    os.symlink(str(world / "outside-file"), bundle / "fs" / "etc" / "strixwizard")
    return bundle


@pytest.mark.parametrize("packed", [False, True], ids=["directory", "tar.gz"])
def test_hostile_bundle_changes_nothing_outside_its_copy(tmp_path: Path, packed: bool) -> None:
    world = tmp_path / "world"
    bundle = hostile_bundle(world, "node-b")
    source = bundle
    if packed:
        source = world / "bundle" / "node-b.tar.gz"
        with tarfile.open(source, "w:gz") as archive:
            archive.add(bundle, arcname="node-b")
    site = world / "site.yaml"
    site.write_text(f"site: lab\nnodes:\n  - name: node-b\n    snapshot: {source}\n")
    before = tree_hash(world)
    # the rdma_cm directory the bundle hides is created only when the fix is asked for by name
    done = run_cli("fix", "--site", str(site), "--only", "rdma.roce_v2_default", "--apply",
                   "--yes", "--json", env={"XDG_STATE_HOME": str(tmp_path / "state")})
    assert done.rc in (0, 1), done.stdout + done.stderr
    assert done.json()["apply"]["dry_run"] is True
    assert tree_hash(world) == before, "the dry run wrote outside its copy"
    assert list((world / "outside").iterdir()) == []


def test_runner_paths_never_leave_the_copy(tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    (copy / "fs" / "a").mkdir(parents=True)
    os.symlink("/", copy / "fs" / "root-link")
    os.symlink("../../../../../..", copy / "fs" / "a" / "up")
    os.symlink("loop2", copy / "fs" / "loop1")
    os.symlink("loop1", copy / "fs" / "loop2")
    runner = SnapshotRunner("n", copy)
    fs = copy / "fs"
    assert runner._disk("/root-link/etc/x") == fs / "etc" / "x"
    assert runner._disk("/a/up/etc/x") == fs / "etc" / "x"
    assert runner._disk("/../../etc/x") == fs / "etc" / "x"
    with pytest.raises(StepFailed, match="too many levels"):
        runner._disk("/loop1/x")


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


def test_a_fix_whose_checks_all_skip_is_not_verified(tmp_path: Path) -> None:
    from tests.support.scenarios import facts_of

    node = strix_halo_node("strix-b")  # no fabric NIC: the MTU checks skip
    facts = facts_of(tmp_path, {"node-b": node})
    plan = SitePlan("t", [Plan("net.mtu", "node-b", "node-b:fab0", (mtu_step("fab0", 1500, 9000),))])
    verdicts = verify(Site("t"), plan, facts, facts, checks=ALL, fixes=BY_ID)
    assert [(v.fix, v.status) for v in verdicts] == [("net.mtu", "not-verified")]
    assert "skip" in verdicts[0].detail
    assert json.dumps([v.to_json() for v in verdicts])

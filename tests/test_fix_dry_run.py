"""Dry runs on snapshot copies behave like a node: a RoCE netdev's MTU change moves the RDMA
port's active MTU as the kernel would, so the demo's `net.mtu` fix verifies as cured. A dry run
changes its copy of the snapshots and nothing else, even for a bundle whose links point out of
it, and a copy keeps what doctor judges (the GPU link of node.gtt)."""

from __future__ import annotations

import hashlib
import os
import shutil
import tarfile
from pathlib import Path

import pytest

from strixwizard.demo.hardware import RoceSetup, e810
from strixwizard.demo.scenarios import strix_halo_node
from strixwizard.facts.rdma import roce_active_mtu
from strixwizard.fixing.runner import SnapshotRunner, StepFailed, with_active_mtu
from strixwizard.probe.snapshot import SnapshotProbe
from tests.support.cli import invoke

DEVINFO = """hca_id:\trocep194s0
\ttransport:\t\t\tInfiniBand (0)
\tphys_port_cnt:\t\t\t1
\t\tport:\t1
\t\t\tstate:\t\t\tPORT_ACTIVE (4)
\t\t\tmax_mtu:\t\t4096 (5)
\t\t\tactive_mtu:\t\t1024 (3)
\t\t\tlink_layer:\t\tEthernet

hca_id:\tmlx5_0
\t\tport:\t1
\t\t\tactive_mtu:\t\t1024 (3)
"""


@pytest.mark.parametrize(("netdev_mtu", "max_mtu", "expected"), [
    (9000, 4096, (4096, 5)), (4200, 4096, (4096, 5)), (4191, 4096, (2048, 4)),
    (1500, 4096, (1024, 3)), (9000, 2048, (2048, 4)), (576, None, (256, 1)),
])
def test_roce_active_mtu_follows_the_kernel_rule(netdev_mtu: int, max_mtu: int | None,
                                                 expected: tuple[int, int]) -> None:
    assert roce_active_mtu(netdev_mtu, max_mtu) == expected


def test_only_the_named_port_changes_and_the_layout_stays() -> None:
    changed = with_active_mtu(DEVINFO, "rocep194s0", 1, (4096, 5))
    assert "\t\t\tactive_mtu:\t\t4096 (5)\n" in changed
    assert changed.count("1024 (3)") == 1  # mlx5_0 untouched
    assert changed.replace("4096 (5)\n\t\t\tlink", "1024 (3)\n\t\t\tlink") == DEVINFO


def _active_mtu(snapshot: Path) -> str:
    out = SnapshotProbe.load(snapshot).run(["ibv_devinfo"]).stdout
    return next(line.split(":", 1)[1].strip() for line in out.splitlines() if "active_mtu" in line)


def test_demo_mtu_fix_is_cured_in_the_dry_run_and_rolled_back(cli, tmp_path: Path) -> None:
    env = {"XDG_STATE_HOME": str(tmp_path / "state")}
    applied = cli("fix", "--demo", "--only", "net.mtu", "--apply", "--yes", "--json", env=env)
    report = applied.json()["apply"]
    assert report["dry_run"] is True
    assert {(v["fix"], v["node"], v["status"]) for v in report["verification"]} == {
        ("net.mtu", "node-b", "cured")}
    copy = tmp_path / "state" / "strixwizard" / "dry-runs" / report["run_id"] / "node-b"
    assert _active_mtu(copy) == "4096 (5)"
    rolled = cli("fix", "--demo", "--rollback", report["run_id"], "--yes", env=env)
    assert rolled.rc == 0, rolled.stdout + rolled.stderr
    assert _active_mtu(copy) == "1024 (3)"


def test_a_dry_run_copy_keeps_the_gpu_link_so_node_gtt_is_judged_the_same(tmp_path: Path) -> None:
    import json

    env = {"XDG_STATE_HOME": str(tmp_path)}
    assert invoke("fix", "--demo", "--apply", "--yes", env=env).rc == 0
    [copy] = (tmp_path / "strixwizard" / "dry-runs").glob("*/node-b")
    replayed = json.loads(invoke("doctor", "--json", "--only", "node.gtt", "--snapshot", str(copy),
                                  env=env).stdout)
    demo = json.loads(invoke("doctor", "--demo", "--json", "--only", "node.gtt", env=env).stdout)
    wanted = {c["status"] for c in demo["checks"] if c["host"] == "node-b"}
    assert {c["status"] for c in replayed["checks"]} == wanted == {"warn"}


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
    done = invoke("fix", "--site", str(site), "--only", "rdma.roce_v2_default", "--apply",
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


def test_a_dry_run_ends_with_a_real_command_that_replays_the_site_as_it_left_it(tmp_path: Path) -> None:
    """Not a placeholder path (`…/RUN/NODE`), and not one copy on its own (which took the
    snapshot's host name, strix-b, and had no link): the site file beside the copies keeps the
    demo's node names and both ends of each link, the changed node from its copy."""
    import json
    import re
    import shlex

    env = {"XDG_STATE_HOME": str(tmp_path)}
    done = invoke("fix", "--demo", "--apply", "--yes", env=env)
    assert done.rc == 0, done.stdout + done.stderr
    assert "/NODE" not in done.stdout and "/RUN" not in done.stdout
    found = re.search(r"doctor reads the site as the run left it with: (strixwizard doctor .+)$",
                      done.stdout, re.MULTILINE)
    assert found, done.stdout
    argv = shlex.split(found.group(1))
    assert argv[:3] == ["strixwizard", "doctor", "--site"] and Path(argv[3]).is_file()
    replayed = json.loads(invoke(*argv[1:], "--json", env=env).stdout)
    by_check = {(c["id"], c["host"] or c["entity"]): c["status"] for c in replayed["checks"]}
    assert {h["name"] for h in replayed["hosts"]} == {"node-a", "node-b"}
    assert by_check[("link.mtu", "node-a:enp194s0np0 <-> node-b:enp194s0np0")] == "pass"
    assert by_check[("dcb.pause_and_pfc", "node-b")] == "pass"
    assert by_check[("node.rdma_core_version", "node-b")] == "fail"  # no fix touched it

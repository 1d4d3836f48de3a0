"""Dry runs on snapshot copies behave like a node: a RoCE netdev's MTU change moves the RDMA
port's active MTU as the kernel would, so the demo's `net.mtu` fix verifies as cured."""

from __future__ import annotations

from pathlib import Path

import pytest

from strixwizard.facts.rdma import roce_active_mtu
from strixwizard.fixing.runner import with_active_mtu
from strixwizard.probe.snapshot import SnapshotProbe
from tests.support.cli import run_cli

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
    assert run_cli("fix", "--demo", "--apply", "--yes", env=env).rc == 0
    [copy] = (tmp_path / "strixwizard" / "dry-runs").glob("*/node-b")
    replayed = json.loads(run_cli("doctor", "--json", "--only", "node.gtt", "--snapshot", str(copy),
                                  env=env).stdout)
    demo = json.loads(run_cli("doctor", "--demo", "--json", "--only", "node.gtt", env=env).stdout)
    wanted = {c["status"] for c in demo["checks"] if c["host"] == "node-b"}
    assert {c["status"] for c in replayed["checks"]} == wanted == {"warn"}

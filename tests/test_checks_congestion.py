"""ECN / DCQCN: the mlx5 per-priority switches, irdma's configfs flag, and honest unknowns."""

from __future__ import annotations

from pathlib import Path

from strixwizard.demo.hardware import RoceSetup, connectx, e810
from strixwizard.demo.scenarios import strix_halo_node
from strixwizard.model import Status
from tests.support.scenarios import Nodes, results, run_site


def _cx_pair(ecn: tuple[int, ...]) -> Nodes:
    a = strix_halo_node("cx-a")
    connectx(a, "10.10.0.1/24", "0c:42:a1:11:22:01", setup=RoceSetup(trust=("dscp",), ecn=ecn))
    b = strix_halo_node("cx-b")
    connectx(b, "10.10.0.2/24", "0c:42:a1:11:22:02", setup=RoceSetup(trust=("dscp",), ecn=ecn))
    return {"cx-a": a, "cx-b": b}


def _e810_pair(dcqcn: bool | None) -> Nodes:
    a = strix_halo_node("strix-a")
    e810(a, "192.168.100.1/30", "b4:96:91:9c:3a:10", setup=RoceSetup(dcqcn=dcqcn))
    b = strix_halo_node("strix-b")
    e810(b, "192.168.100.2/30", "b4:96:91:9c:41:d8", setup=RoceSetup(dcqcn=dcqcn))
    return {"node-a": a, "node-b": b}


def test_connectx_with_ecn_on_the_roce_priority_passes(tmp_path: Path) -> None:
    found = results(run_site(tmp_path, _cx_pair(ecn=tuple(range(8)))), "dcb.congestion")
    assert [r.status for r in found] == [Status.PASS, Status.PASS]
    assert "on (mlx5 sysfs)" in found[0].observed and "CNPs sent 0" in found[0].observed


def test_connectx_with_ecn_off_on_the_roce_priority_warns(tmp_path: Path) -> None:
    found = results(run_site(tmp_path, _cx_pair(ecn=(0, 1, 2))), "dcb.congestion")
    assert [r.status for r in found] == [Status.WARN, Status.WARN]
    assert "off on priority 3 (mlx5 sysfs)" in found[0].observed
    assert "PFC alone" in found[0].detail


def test_e810_dcqcn_flag_is_read_when_configfs_exists(tmp_path: Path) -> None:
    on = results(run_site(tmp_path / "on", _e810_pair(dcqcn=True)), "dcb.congestion")
    off = results(run_site(tmp_path / "off", _e810_pair(dcqcn=False)), "dcb.congestion")
    assert {r.status for r in on} == {Status.PASS} and "irdma configfs" in on[0].observed
    assert {r.status for r in off} == {Status.WARN}


def test_e810_without_configfs_is_unknown_never_a_pass(tmp_path: Path) -> None:
    found = results(run_site(tmp_path, _e810_pair(dcqcn=None)), "dcb.congestion")
    assert {r.status for r in found} == {Status.SKIP}
    assert "does not create it" in found[0].detail and "off by default on irdma" in found[0].detail

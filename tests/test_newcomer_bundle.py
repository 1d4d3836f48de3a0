"""A support bundle's snapshots say which site and node they are; plain snapshots stay plain."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from strixwizard.demo.scenarios import strix_halo_node
from strixwizard.errors import UsageError
from strixwizard.probe.snapshot import SnapshotProbe
from strixwizard.services.capture import replayed_site, with_site_meta
from tests.support.cli import run_cli


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
    report = run_cli("doctor", "--json", "--snapshot", *map(str, paths)).json()
    assert report["site"] == "lab" and [h["name"] for h in report["hosts"]] == ["node0", "node1"]


def test_snapshots_of_different_sites_replay_by_host_name(snapshot_of, tmp_path: Path) -> None:
    a = _bundle_node(snapshot_of, tmp_path, "vm", "node0", site="one")
    b = _bundle_node(snapshot_of, tmp_path, "vm", "node1", site="two")
    assert replayed_site([(p, SnapshotProbe.load(p)) for p in (a, b)]) is None
    plain = snapshot_of(strix_halo_node("strix-a"))
    assert replayed_site([(plain, SnapshotProbe.load(plain))]) is None
    report = run_cli("doctor", "--json", "--snapshot", str(a), str(b)).json()
    assert [h["name"] for h in report["hosts"]] == ["vm", "vm-2"]


def test_a_bundle_naming_a_bad_node_is_refused(snapshot_of, tmp_path: Path) -> None:
    archive = snapshot_of(strix_halo_node("vm"), as_tar=True)
    bad = tmp_path / "bad.tar.gz"
    bad.write_bytes(with_site_meta(archive.read_bytes(), {"name": "lab", "node": "../x"}))
    with pytest.raises(UsageError, match="not a node name"):
        replayed_site([(bad, SnapshotProbe.load(bad))])
    assert json.loads(json.dumps(SnapshotProbe.load(bad).meta))["site"]["node"] == "../x"

"""The dead ends of a plain-Ethernet site, met as a new user would on the namespace lab (three
nodes: node0 and node1 share a veth fabric link, node2 has only the management network):
the RDMA refusal says what the nodes share and what to do, `--nodes` picks the pair with a
fabric link, and `--transport tcp` for all three goes over the management network and says
so; the stand-in `ray` (tests/data/deploy/standins, not Ray) then starts on the management
addresses and the rollback removes it all."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli import CliResult, run_cli
from tests.support.lab import Lab, lab_fixture

nodeslab3 = lab_fixture(3, name="nodeslab3")
DATA = Path(__file__).parent / "data"


@pytest.fixture
def lab(nodeslab3: Lab) -> Iterator[Lab]:
    for host in nodeslab3.hosts:
        for path in host.bin_dir.glob("*"):
            path.unlink()
        host.stand_in("ray", (DATA / "deploy" / "standins" / "ray").read_text())
    yield nodeslab3
    for host in nodeslab3.hosts:
        for path in (host.home / "strixwizard-etc", host.home / "strixwizard-ray",
                     host.home / ".ray-stand-in"):
            shutil.rmtree(path, ignore_errors=True)


def deploy(site: Path, tmp: Path, *args: str) -> CliResult:
    return run_cli("deploy", "--site", str(site), "--target-dir", "/root/strixwizard-etc",
                   "--node-journal-dir", "/root/strixwizard-journal",
                   "--ray-temp-dir", "/root/strixwizard-ray", *args,  # inside the node's home
                   env={"XDG_STATE_HOME": str(tmp / "state")}, timeout=120)


def test_refusal_subset_and_tcp_over_the_management_network(lab: Lab, tmp_path: Path) -> None:
    node0, node1, node2 = lab.hosts
    site = lab.write_site_yaml(tmp_path / "lab.yaml")
    refused = deploy(site, tmp_path, "--nodes", "node0,node1", "--json")
    assert refused.rc == 2
    assert refused.json()["reason"].startswith(
        "no RDMA profile: node0 and node1 share only an Ethernet link (node0:fab0 ↔ node1:fab0), "
        "no RDMA: deploy over TCP with --transport tcp, or fix the RDMA NIC first")

    pair = deploy(site, tmp_path, "--nodes", "node0,node1", "--transport", "tcp", "--json")
    assert pair.rc == 0, pair.stderr
    env = pair.json()["plan"]["env"]
    assert env["links"] == ["node0:fab0 <-> node1:fab0"]
    assert [n["ip"] for n in env["nodes"]] == [node0.fabric_addr, node1.fabric_addr]

    text = deploy(site, tmp_path, "--transport", "tcp")
    assert text.rc == 0, text.stderr
    assert "! TCP over the management network: no RDMA, expect 50-130 µs per hop" in text.stdout
    applied = deploy(site, tmp_path, "--transport", "tcp", "--apply", "--yes", "--no-smoke",
                     "--json")
    assert applied.rc == 0, applied.stdout + applied.stderr
    doc = applied.json()
    assert [n["ip"] for n in doc["plan"]["env"]["nodes"]] == [h.mgmt_addr for h in lab.hosts]
    env_text = (node2.home / "strixwizard-etc" / "rccl.env").read_text()
    assert "\nNCCL_SOCKET_IFNAME==mgmt0\n" in env_text
    assert f"\nVLLM_HOST_IP={node2.mgmt_addr}\n" in env_text
    rolled = deploy(site, tmp_path, "--rollback", doc["apply"]["run_id"], "--yes")
    assert rolled.rc == 0, rolled.stdout + rolled.stderr
    assert not any((h.home / "strixwizard-etc").exists() for h in lab.hosts)

"""The doctor over whole scenarios: what an RDMA engineer would report, and no false alarms."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from checks import ALL
from strixwizard.model import Status
from tests.support.scenarios import bad, report_of

SCHEMA = json.loads((Path(__file__).parent.parent / "strixwizard" / "schema" /
                     "doctor.schema.json").read_text())


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("doctor")


def findings(root: Path, name: str) -> set[tuple[str, str, str]]:
    return {(r.status.value, r.id, r.entity) for r in bad(report_of(root, name))}


@pytest.mark.parametrize("name", ["healthy", "connectx"])
def test_healthy_pairs_raise_no_alarm(root: Path, name: str) -> None:
    report = report_of(root, name)
    assert findings(root, name) == set()
    assert report.exit_code() == 0
    assert not [r for r in report.checks if r.status == Status.ERROR]


def test_misconfigured_pair_reports_exactly_the_faults(root: Path) -> None:
    assert findings(root, "misconfigured") == {
        ("warn", "rdma.active_mtu", "node-b:rocep194s0/1 (enp194s0np0)"),
        ("warn", "dcb.pfc_priority", "node-b:enp194s0np0"),
        ("warn", "dcb.fw_lldp", "node-b:enp194s0np0"),
        ("fail", "link.mtu", "node-a:enp194s0np0 <-> node-b:enp194s0np0"),
        ("fail", "link.pfc", "node-a:enp194s0np0 <-> node-b:enp194s0np0"),
    }


def test_x4_pair_only_warns_about_pcie(root: Path) -> None:
    assert findings(root, "x4") == {("warn", "nic.pcie_link", "node-a/0000:c2:00.0"),
                                    ("warn", "nic.pcie_link", "node-b/0000:c2:00.0")}
    assert report_of(root, "x4").exit_code() == 0


def test_thunderbolt_pair(root: Path) -> None:
    assert findings(root, "thunderbolt") == {
        ("fail", "nic.rdma_capable", "tb-a"), ("fail", "nic.rdma_capable", "tb-b"),
        ("warn", "usb4.soft_rdma", "tb-a/rxe0"),
        ("warn", "link.transport", "tb-a:thunderbolt0 <-> tb-b:thunderbolt0"),
        ("fail", "site.rdma_path", "tb-a <-> tb-b"),
    }
    assert report_of(root, "thunderbolt").exit_code() == 1


def test_infiniband_pair_flags_only_the_oculink_x4(root: Path) -> None:
    assert findings(root, "infiniband") == {("warn", "nic.pcie_link", "ib-a/0000:c3:00.0"),
                                            ("warn", "nic.pcie_link", "ib-b/0000:c3:00.0")}


def test_non_strix_machine(root: Path) -> None:
    assert findings(root, "non_strix") == {("fail", "node.strix_halo", "xeon-1")}


@pytest.mark.parametrize("name", ["healthy", "misconfigured", "thunderbolt", "infiniband",
                                  "non_strix", "platform"])
def test_json_report_validates_against_the_schema(root: Path, name: str) -> None:
    document = report_of(root, name).to_json()
    jsonschema.validate(document, SCHEMA)
    for link in document["links"]:
        assert len(link["ends"]) == 2 and link["transport"]


def test_every_check_has_a_docstring_why_and_known_fix() -> None:
    from fixes import BY_ID

    for check in ALL:
        assert check.doc and check.why and check.title, check.id
        assert check.fix is None or check.fix in BY_ID, check.id


def test_demo_doctor_text_shows_node_nic_link_and_usb4_findings() -> None:
    done = subprocess.run([sys.executable, "-m", "strixwizard", "doctor", "--demo", "-v"],
                          capture_output=True, text=True, env={"NO_COLOR": "1", "PATH": ""},
                          cwd=Path(__file__).parent.parent, check=False)
    assert done.returncode == 1, done.stderr
    out = done.stdout  # the full text: every link and every check
    assert "links: 2" in out
    assert "FAIL  node-a ⇄ node-b (enp194s0np0)  roce-v2 (RDMA)" in out
    assert "WARN  node-a ⇄ node-b (thunderbolt0)  thunderbolt-net (no RDMA)" in out
    for check_id in ("node.gtt", "nic.pcie_link", "link.mtu", "dcb.pause_and_pfc", "dcb.fw_lldp",
                     "rdma.active_mtu", "link.transport", "node.rdma_core_version", "fabric.counters"):
        assert check_id in out
    assert "3 failed · 7 warnings" in out

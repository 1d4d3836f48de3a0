"""The fix engine reads what the facts read: reader keys are views of the declared outputs.

Regressions: `{"prio_pfc": {"3": true}}` and devlink output with only driverinit/permanent
values once read differently in the fact and in the fix read-back; the latter made the
`roce.enable` step abort with a false drift.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fixes import FIXES
from strixwizard.demo.builder import FakeNode
from strixwizard.discovery import Discovery
from strixwizard.facts import NodeFacts
from strixwizard.facts.dcb import PFC
from strixwizard.facts.devlink import PARAMS
from strixwizard.fixing.engine import apply_plan
from strixwizard.fixing.journal import JournalStore
from strixwizard.fixing.planning import plan_site
from strixwizard.fixing.readers import VIEWS, ReadError, parse, pfc_value, render
from strixwizard.fixing.runner import SnapshotRunner
from strixwizard.probe.snapshot import SnapshotProbe
from strixwizard.site import NodeSpec, Site
from tests.support import scenarios
from tests.support.fact_cases import CASES_DIR
from tests.support.fixplans import SITE_FABRIC

E810 = "0000:c2:00.0"
#: enable_roce listed as permanent true and driverinit false: driverinit is what irdma uses.
DRIVERINIT_ONLY = [
    {"name": "enable_roce", "type": "generic",
     "values": [{"cmode": "permanent", "value": True}, {"cmode": "driverinit", "value": False}]},
    {"name": "enable_iwarp", "type": "generic", "values": [{"cmode": "driverinit", "value": True}]},
]


def test_pfc_object_form_reads_as_priority_3_in_the_fact_and_the_fix() -> None:
    text = '{"prio_pfc": {"3": true}}'
    assert PFC.parse(text) == (3,)
    assert parse("dcb.pfc", text) == pfc_value((3,)) == "all:off 3:on"


def test_devlink_driverinit_and_permanent_read_the_same_in_the_fact_and_the_fix() -> None:
    text = json.dumps({"param": {f"pci/{E810}": DRIVERINIT_ONLY}})
    params = PARAMS.parse(text)[E810]
    assert params == {"enable_roce": False, "enable_iwarp": True}
    assert parse(f"devlink:pci/{E810}/enable_roce", text) == "false"
    assert parse(f"devlink:pci/{E810}/enable_iwarp", text) == "true"
    assert parse(f"devlink:pci/{E810}/no_such_param", text) is None


def _readers_over(output_name: str) -> list[str]:
    return [key for key, view in VIEWS.items() if view.output and view.output.name == output_name]


def test_every_reader_of_a_recorded_output_reads_it_or_refuses_it_cleanly() -> None:
    """Over the whole case table: a reader never fails where its fact parses (bar a missing
    field the reader needs), and refuses with ReadError, never another exception."""
    params = {"dcb.app": "24", "ethtool.flag": "fw-lldp-agent", "grubby.arg": "amd_iommu",
              "cmdline": "amd_iommu", "devlink": f"pci/{E810}/enable_roce"}
    seen = 0
    for path in sorted(CASES_DIR.glob("*.json")):
        for key in _readers_over(path.stem):
            reader = f"{key}:{params[key]}" if key in params else key
            for case in json.loads(path.read_text()):
                seen += 1
                if case.get("error"):
                    with pytest.raises(ReadError):
                        parse(reader, case["input"])
                    continue
                try:
                    parse(reader, case["input"])
                except ReadError as error:
                    assert "no " in str(error), (reader, case["source"], error)
    assert seen > 20


@pytest.mark.parametrize(("key", "old", "value"), [
    ("dcb.pfc", '{"pfc_cap":8,"delay":0,"prio_pfc":[false,false,false,false,false,false,false,false]}',
     "all:off 3:on"),
    ("dcb.pfc", '{"prio_pfc": {"3": true}}', "all:off"),
    ("dcb.prio_tc", '{"willing":false,"prio_tc":[0,0,0,0,0,0,0,0]}', "0:0 1:0 2:0 3:1 4:0 5:0 6:0 7:0"),
    ("dcb.app:26", '{"dscp_prio":[[24,3]]}', "3"),
    ("dcb.app:24", '{"dscp_prio":[[24,3]]}', None),
    ("dcb.apptrust", '{"order":["pcp"]}', "dscp"),
    ("ethtool.pause", "Pause parameters for eth0:\nAutonegotiate:\toff\nRX:\t\ton\nTX:\t\ton\n",
     "rx off tx off"),
    ("ethtool.flag:fw-lldp-agent", "Private flags for eth0:\nlink-down-on-close     : off\n"
     "fw-lldp-agent          : on\n", "off"),
    (f"devlink:pci/{E810}/enable_roce", json.dumps({"param": {f"pci/{E810}": DRIVERINIT_ONLY}}),
     "true"),
])
def test_a_dry_run_writes_a_value_the_reader_then_reads(key: str, old: str, value: str | None) -> None:
    new = render(key, old, value)
    assert new is not None
    assert parse(key, new) == value


def test_render_keeps_the_rest_of_the_output() -> None:
    old = "Private flags for eth0:\nlink-down-on-close     : off\nfw-lldp-agent          : on\n"
    new = render("ethtool.flag:fw-lldp-agent", old, "off")
    assert new == old.replace(": on", ": off")
    assert render("ethtool.flag:fw-lldp-agent", new or "", "on") == old
    devlink = json.loads(render(f"devlink:pci/{E810}/enable_roce",
                                json.dumps({"param": {f"pci/{E810}": DRIVERINIT_ONLY}}), "true") or "")
    roce = devlink["param"][f"pci/{E810}"][0]["values"]
    assert {"cmode": "runtime", "value": True} in roce and {"cmode": "driverinit", "value": False} in roce


def test_text_readers_and_unknown_keys() -> None:
    assert parse("text", " RoCE v2\n") == "RoCE v2"
    assert parse("raw", "a\n") == "a\n"
    assert render("text", "x", "y") is None
    assert parse("nm.mtu", "9000\n") == "9000" and parse("nm.mtu", "\n") == "auto"
    grubby = 'index=0\nargs="ro quiet amd_iommu=off"\n'
    assert parse("grubby.arg:amd_iommu", grubby) == "off"
    assert parse("grubby.arg:iommu", grubby) is None
    assert parse("cmdline:quiet", "ro quiet\n") == ""
    with pytest.raises(ReadError, match="unknown reader"):
        parse("no.such.reader", "")
    with pytest.raises(ReadError):
        parse("grubby.arg:x", "grubby: not found\n")


def _driverinit_e810(tmp_path: Path) -> tuple[Site, Path]:
    (node,) = scenarios.platform_faults_node().values()
    assert isinstance(node, FakeNode)
    node.devlink_params[f"pci/{E810}"] = DRIVERINIT_ONLY
    out = tmp_path / "strix-c"
    out.mkdir()
    node.capture(out)
    site = Site(name="t", nodes=(NodeSpec(name="strix-c", snapshot=str(out)),), fabric=SITE_FABRIC)
    return site, out


def test_enable_roce_on_driverinit_only_output_applies_without_a_false_drift(tmp_path: Path) -> None:
    site, root = _driverinit_e810(tmp_path)
    facts = NodeFacts("strix-c", SnapshotProbe.load(root))
    plan = plan_site(Discovery.of_facts(site, [facts]), ("roce.enable",), fixes=FIXES)
    (roce,) = [p for p in plan.plans if p.fix == "roce.enable"]
    devlink_steps = [s for s in roce.steps if s.read.parse.startswith("devlink:")]
    assert [(s.read.parse.rsplit("/", 1)[1], s.before, s.after) for s in devlink_steps] == [
        ("enable_iwarp", "true", "false"), ("enable_roce", "false", "true")]
    runner = SnapshotRunner("strix-c", root)
    assert [runner.read(s.read) for s in devlink_steps] == [s.before for s in devlink_steps]
    report = apply_plan(plan, {"strix-c": runner}, JournalStore(tmp_path / "journal"), site, {},
                        dry_run=True, holder=None)
    assert report.status == "applied", report.message
    assert [runner.read(s.read) for s in devlink_steps] == [s.after for s in devlink_steps]
    after = NodeFacts("strix-c", SnapshotProbe.load(root)).devlink or {}
    assert after[E810] == {"enable_roce": True, "enable_iwarp": False}

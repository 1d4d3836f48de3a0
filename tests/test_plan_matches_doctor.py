"""A plan is exactly the cure for what `doctor` reports: on every scenario the tests build, on
the demo (as shipped and with its faults cured) and on the node snapshots the project ships
(the demo's tarballs, the VM lab's real-kernel capture), `fix` plans only fixes that a failing
or warning check names, and nothing at all when no such check exists. On the demo, `fix`'s
counts add up to doctor's problems and an apply calls cured only what doctor found broken."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from fixes import FIXES
from strixwizard.checking.engine import run_doctor
from strixwizard.demo.builder import FakeNode
from strixwizard.demo.hardware import RoceSetup, e810
from strixwizard.demo.scenarios import demo_nodes, strix_halo_node
from strixwizard.discovery import Discovery, reached_node
from strixwizard.facts import NodeFacts
from strixwizard.fixing.planning import plan_site
from strixwizard.model import Status
from strixwizard.probe.snapshot import SnapshotProbe
from strixwizard.site import NodeSpec, Site
from tests.support import scenarios
from tests.support.cli import invoke

#: fixes planned as part of another fix's cure: link-level pause goes off when PFC comes on
#: (`dcb.pause_and_pfc` passes while pause is the only flow control; `dcb.pfc` turns PFC on)
COMPANIONS = {"dcb.pfc": {"ethtool.pause_off"}}

BUILDERS = {**scenarios.SCENARIOS, "demo": demo_nodes}


def doctor_and_plan(tmp_path: Path, nodes: dict[str, FakeNode]) -> tuple[set[str], set[str]]:
    """(fix ids of failing/warning checks, fix ids with steps in the full plan)."""
    report = scenarios.run_site(tmp_path / "doctor", nodes)
    facts = scenarios.facts_of(tmp_path / "plan", nodes)
    site = Site(name="test", nodes=tuple(NodeSpec(name=n, snapshot=n) for n in facts))
    plan = plan_site(Discovery.of_facts(site, list(facts.values())), fixes=FIXES)
    reported = {r.fix.id for r in report.checks
                if r.status in (Status.FAIL, Status.WARN) and r.fix is not None}
    planned = {p.fix for p in plan.plans if p.steps}
    return reported, planned


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_fix_plans_only_the_cures_of_what_doctor_reports(tmp_path: Path, name: str) -> None:
    reported, planned = doctor_and_plan(tmp_path, BUILDERS[name]())
    if not reported:
        assert planned == set(), f"{name}: no check with a fix fails or warns, yet {planned} planned"
    allowed = reported | {c for fix in reported for c in COMPANIONS.get(fix, ())}
    assert planned <= allowed, f"{name}: {planned - allowed} planned with no check reporting them"


ROOT = Path(__file__).parent.parent
#: the node snapshots the project ships, by pair
SHIPPED = {"demo_tarballs": ("strixwizard/demo/snapshots/node-a.tar.gz",
                             "strixwizard/demo/snapshots/node-b.tar.gz"),
           "vm_lab_rxe": ("tests/data/vm/vm0.tar.gz", "tests/data/vm/vm1.tar.gz")}


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_shipped_snapshots_plan_only_the_cures_of_what_doctor_reports(tmp_path: Path, name: str) -> None:
    from checks import ALL as ALL_CHECKS
    from fixes import BY_ID

    probes = {Path(path).name.split(".")[0]: SnapshotProbe.load(ROOT / path) for path in SHIPPED[name]}
    site = Site(name="test", nodes=tuple(NodeSpec(name=n, snapshot=n) for n in probes))
    report = run_doctor(Discovery.of(site, [reached_node(n, p, str(tmp_path / n), "snapshot")
                                            for n, p in probes.items()]), ALL_CHECKS, BY_ID)
    plan = plan_site(Discovery.of_facts(site, [NodeFacts(n, p) for n, p in probes.items()]), fixes=FIXES)
    reported = {r.fix.id for r in report.checks
                if r.status in (Status.FAIL, Status.WARN) and r.fix is not None}
    planned = {p.fix for p in plan.plans if p.steps}
    if not reported:
        assert planned == set(), f"{name}: no check with a fix fails or warns, yet {planned} planned"
    allowed = reported | {c for fix in reported for c in COMPANIONS.get(fix, ())}
    assert planned <= allowed, f"{name}: {planned - allowed} planned with no check reporting them"


def test_every_registered_fix_is_covered_by_the_rule() -> None:
    assert {f.id for f in FIXES} >= set(COMPANIONS) | {c for cs in COMPANIONS.values() for c in cs}


def _pair_with_tos(tos: int, mtu: int = 9000) -> dict[str, FakeNode]:
    nodes = {}
    for name, host, ip, mac in (("node-a", "strix-a", "192.168.100.1/30", "b4:96:91:9c:3a:10"),
                                ("node-b", "strix-b", "192.168.100.2/30", "b4:96:91:9c:41:d8")):
        node = strix_halo_node(host)
        e810(node, ip, mac, setup=RoceSetup(roce_mode="RoCE v2", mtu=mtu))
        node.file("/sys/kernel/config/rdma_cm/rocep194s0/ports/1/default_roce_tos", f"{tos}\n")
        nodes[name] = node
    return nodes


def test_tos_106_is_dscp_26_with_ect0_and_plans_nothing(tmp_path: Path) -> None:
    """106 = DSCP 26 << 2 | ECT(0): the PFC priority 3's DSCP, with an ECN codepoint."""
    nodes = _pair_with_tos(106)
    report = scenarios.run_site(tmp_path / "doctor", nodes)
    checks = scenarios.results(report, "rdma.roce_v2_default")
    assert {r.status for r in checks} == {Status.PASS}
    assert checks[0].observed == "RoCE v2, ToS 106 (DSCP 26)"
    assert doctor_and_plan(tmp_path, nodes) == (set(), set())


def test_a_tos_of_another_dscp_warns_and_plans_the_tos(tmp_path: Path) -> None:
    nodes = _pair_with_tos(32)  # DSCP 8: priority 1, outside PFC
    report = scenarios.run_site(tmp_path / "doctor", nodes)
    (a, _) = scenarios.results(report, "rdma.roce_v2_default")
    assert a.status == Status.WARN and "DSCP 8" in a.observed
    assert "echo 104 > /sys/kernel/config/rdma_cm/rocep194s0/ports/1/default_roce_tos" in a.detail
    assert a.fix is not None and a.fix.id == "rdma.roce_v2_default"
    facts = scenarios.facts_of(tmp_path / "plan", nodes)
    site = Site(name="test", nodes=tuple(NodeSpec(name=n, snapshot=n) for n in facts))
    plan = plan_site(Discovery.of_facts(site, list(facts.values())), persist=False, fixes=FIXES)
    steps = [s for p in plan.plans if p.fix == "rdma.roce_v2_default" for s in p.steps]
    assert [(s.before, s.after) for s in steps] == [("32", "104"), ("32", "104")]


def test_an_uncreated_rdma_cm_directory_is_created_only_when_asked_for(tmp_path: Path) -> None:
    nodes = scenarios.connectx6dx_pair()
    facts = scenarios.facts_of(tmp_path, nodes)
    site = Site(name="test", nodes=tuple(NodeSpec(name=n, snapshot=n) for n in facts))
    assert plan_site(Discovery.of_facts(site, list(facts.values())), fixes=FIXES).changes == 0
    asked = plan_site(Discovery.of_facts(site, list(facts.values())), ("rdma.roce_v2_default",), fixes=FIXES)
    assert {p.node for p in asked.plans if p.steps} == {"cx-a", "cx-b"}


def test_no_mtu_beyond_ipoib_datagram_mode_is_planned(tmp_path: Path) -> None:
    """A lone IPoIB port in use: MTU 9000 cannot apply in datagram mode (at most 4092)."""
    nodes = scenarios.ib_vs_ethernet_pair()
    facts = scenarios.facts_of(tmp_path, nodes)
    site = Site(name="test", nodes=tuple(NodeSpec(name=n, snapshot=n) for n in facts))
    plan = plan_site(Discovery.of_facts(site, list(facts.values())), ("net.mtu",), fixes=FIXES)
    assert [p for p in plan.plans if p.steps] == []  # the mismatched link: nothing to set
    # and an IPoIB end reached any other way is refused by its mode's maximum, with the reason
    from fixes.net import _plan_port
    from strixwizard.fixing.context import PlanContext
    from strixwizard.topology import build_topology

    topology = build_topology(list(facts.values()), site)
    (ib0,) = [p for p in topology.fabric["node-a"] if p.netdev.name == "ib0"]
    ctx = PlanContext(site=site, nodes=tuple(facts.values()), topology=topology)
    refused = _plan_port(ctx, ib0, None)
    assert refused is not None and refused.steps == ()
    assert "datagram mode, which carries at most MTU 4092" in refused.notes[0]


def test_equal_ends_below_the_sites_mtu_warn_and_plan_the_mtu(tmp_path: Path) -> None:
    """Both ends at 1500 agree, but the site asks for 9000: `net.mtu` plans it, so `link.mtu`
    must say so (WARN), or fix would plan a change for a check that passed."""
    nodes = _pair_with_tos(106, mtu=1500)
    report = scenarios.run_site(tmp_path / "doctor", nodes)
    (mtu,) = scenarios.results(report, "link.mtu")
    assert mtu.status == Status.WARN and "9000 (site.yaml fabric.mtu)" in mtu.expected
    assert doctor_and_plan(tmp_path, nodes) == ({"net.mtu"}, {"net.mtu"})


def _doctor_problems(tmp_path: Path) -> tuple[int, list[dict[str, object]]]:
    doctor = json.loads(invoke("doctor", "--demo", "--json",
                                env={"XDG_STATE_HOME": str(tmp_path)}).stdout)
    bad = [c for c in doctor["checks"] if c["status"] in ("fail", "warn", "error")]
    return len(bad), bad


def test_the_demo_fix_counts_add_up_to_doctors_problems(tmp_path: Path) -> None:
    problems, bad = _doctor_problems(tmp_path)
    plan = json.loads(invoke("fix", "--demo", "--json", env={"XDG_STATE_HOME": str(tmp_path)}).stdout)
    summary = plan["summary"]
    assert summary["problems"] == problems
    assert summary["failed"] == sum(1 for c in bad if c["status"] == "fail")
    assert summary["cured_by_plan"] + summary["by_hand"] + summary["not_planned"] == problems
    assert summary["cured_by_plan"] > 0 and summary["changes"] > 0
    text = invoke("fix", "--demo", env={"XDG_STATE_HOME": str(tmp_path)}).stdout
    line = next(line for line in text.splitlines() if line.startswith("doctor finds "))
    assert line.startswith(f"doctor finds {problems} problems ")
    cured, by_hand, none = (int(n) for n in re.findall(
        r"the \d+ changes above would cure (\d+) of them.*; (\d+) to do by hand.*; (\d+) with no plan",
        line)[0])
    assert cured + by_hand + none == problems
    assert f"the {summary['changes']} changes above would cure" in line
    assert text.rstrip().endswith("Apply with: strixwizard fix --demo --apply")


def test_the_demo_apply_calls_cured_only_what_doctor_found_broken(tmp_path: Path) -> None:
    problems, bad = _doctor_problems(tmp_path)
    broken_ids = {str(c["id"]) for c in bad}
    result = invoke("fix", "--demo", "--apply", "--yes", env={"XDG_STATE_HOME": str(tmp_path)})
    assert result.rc == 0, result.stderr
    cured = [line for line in result.stdout.splitlines() if "✓ cured" in line]
    assert cured
    named = {name for line in cured for name in line.split("now passing: ", 1)[1].split(", ")}
    assert named <= broken_ids, named - broken_ids
    assert f"doctor finds {problems} problems" in result.stdout

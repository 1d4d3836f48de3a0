"""Verification after an apply, as `fix` says it: "cured" names only the checks that failed
before and now pass, a fix whose checks passed before is "passing", one not cured says what
still fails and what to do, and one that a new login must pick up says so."""

from __future__ import annotations

import json
from pathlib import Path

from checks import ALL
from fixes import BY_ID
from fixes.steps import mtu_step
from strixwizard.demo.hardware import RoceSetup
from strixwizard.demo.scenarios import strix_halo_node
from strixwizard.fixing.engine import verify
from strixwizard.fixing.model import Plan, SitePlan
from strixwizard.site import NodeSpec, Site
from tests.support import scenarios
from tests.support.fixplans import SITE_FABRIC, checked, pair, plan_of, steps_of


def test_memlock_left_limited_in_the_checking_session_says_log_in_again(tmp_path: Path) -> None:
    nodes = scenarios.platform_faults_node()
    plan = plan_of(tmp_path, nodes, ("limits.memlock",))
    facts = scenarios.facts_of(tmp_path / "f", nodes)
    site = Site(name="t", nodes=tuple(NodeSpec(name=n, snapshot=n) for n in facts), fabric=SITE_FABRIC)
    (verdict,) = verify(*checked(site, facts), plan, facts, checks=ALL, fixes=BY_ID)
    assert verdict.status == "not-verified"
    assert verdict.detail.startswith("new sessions pick it up: log in again")


def test_a_fix_not_cured_says_what_still_fails_and_what_to_do(tmp_path: Path) -> None:
    nodes = pair(RoceSetup(roce_mode="RoCE v2", mtu=1500))
    plan = plan_of(tmp_path, nodes, ("net.mtu",))
    assert steps_of(plan, "net.mtu")
    facts = scenarios.facts_of(tmp_path / "f", nodes)
    site = Site(name="t", nodes=tuple(NodeSpec(name=n, snapshot=n) for n in facts), fabric=SITE_FABRIC)
    # nothing changed: not cured
    verdicts = verify(*checked(site, facts), plan, facts, checks=ALL, fixes=BY_ID)
    (bad,) = [v for v in verdicts if v.status == "not-cured"]
    assert bad.detail.startswith("still ") and "(want " in bad.detail and "what to do: " in bad.detail
    fixed = scenarios.facts_of(tmp_path / "g", pair(RoceSetup(roce_mode="RoCE v2")))
    cured = verify(*checked(site, facts), plan, fixed, checks=ALL, fixes=BY_ID)
    assert any(v.status == "cured" for v in cured)
    for verdict in cured:
        if verdict.status == "cured":
            names = verdict.detail.removeprefix("now passing: ").split(", ")
            assert len(names) == len(set(names)) and "pass" not in names


def test_cured_names_only_checks_that_failed_before(tmp_path: Path) -> None:
    """node-a has no rdma_cm mode to judge (skip) and the link's RoCE version already passes;
    fixing node-b's default mode cures node-b's check alone, and only that is "now passing"."""
    broken = pair(RoceSetup(roce_mode="RoCE v1"), RoceSetup(roce_mode=None))
    plan = plan_of(tmp_path / "plan", broken)
    before = scenarios.facts_of(tmp_path / "before", broken)
    fixed = scenarios.facts_of(tmp_path / "after", pair(RoceSetup(roce_mode="RoCE v2"),
                                                        RoceSetup(roce_mode=None)))
    site = Site(name="t", nodes=tuple(NodeSpec(name=n, snapshot=n) for n in before),
                fabric=SITE_FABRIC)
    (verdict,) = verify(*checked(site, before), plan, {"node-b": fixed["node-b"]},
                        checks=ALL, fixes=BY_ID)
    assert verdict.status == "cured"
    assert verdict.detail == "now passing: rdma.roce_v2_default"  # not link.roce_version


def test_a_fix_whose_checks_passed_before_is_passing_not_cured(tmp_path: Path) -> None:
    healthy = pair(RoceSetup(roce_mode="RoCE v2"))
    plan = plan_of(tmp_path / "plan", pair(RoceSetup(roce_mode="RoCE v1")))  # from older facts
    facts = scenarios.facts_of(tmp_path / "facts", healthy)
    site = Site(name="t", nodes=tuple(NodeSpec(name=n, snapshot=n) for n in facts),
                fabric=SITE_FABRIC)
    (verdict,) = verify(*checked(site, facts), plan, {"node-b": facts["node-b"]},
                        checks=ALL, fixes=BY_ID)
    assert verdict.status == "passing"
    assert verdict.detail == ("link.roce_version, rdma.roce_v2_default passing (none of them "
                              "failed or warned before the run)")


def test_a_fix_whose_checks_all_skip_is_not_verified(tmp_path: Path) -> None:
    from tests.support.scenarios import facts_of

    node = strix_halo_node("strix-b")  # no fabric NIC: the MTU checks skip
    facts = facts_of(tmp_path, {"node-b": node})
    plan = SitePlan("t", [Plan("net.mtu", "node-b", "node-b:fab0", (mtu_step("fab0", 1500, 9000),))])
    verdicts = verify(*checked(Site("t"), facts), plan, facts, checks=ALL, fixes=BY_ID)
    assert [(v.fix, v.status) for v in verdicts] == [("net.mtu", "not-verified")]
    assert "skip" in verdicts[0].detail
    assert json.dumps([v.to_json() for v in verdicts])

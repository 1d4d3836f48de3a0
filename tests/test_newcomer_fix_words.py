"""What `fix` says after an apply: why a fix is not cured and what to do, each check once, and
no Python `None` in what a person reads."""

from __future__ import annotations

from pathlib import Path

from checks import ALL
from fixes import BY_ID
from strixwizard.demo.hardware import RoceSetup
from strixwizard.fixing.engine import restoring, shown, verify
from strixwizard.fixing.model import Kind
from strixwizard.site import NodeSpec, Site
from tests.support import scenarios
from tests.support.fixplans import SITE_FABRIC, pair, plan_of, steps_of


def test_memlock_left_limited_in_the_checking_session_says_log_in_again(tmp_path: Path) -> None:
    nodes = scenarios.platform_faults_node()
    plan = plan_of(tmp_path, nodes, ("limits.memlock",))
    facts = scenarios.facts_of(tmp_path / "f", nodes)
    site = Site(name="t", nodes=tuple(NodeSpec(name=n, snapshot=n) for n in facts), fabric=SITE_FABRIC)
    (verdict,) = verify(site, plan, facts, facts, checks=ALL, fixes=BY_ID)
    assert verdict.status == "not-verified"
    assert verdict.detail.startswith("new sessions pick it up: log in again")


def test_a_fix_not_cured_says_what_still_fails_and_what_to_do(tmp_path: Path) -> None:
    nodes = pair(RoceSetup(roce_mode="RoCE v2", mtu=1500))
    plan = plan_of(tmp_path, nodes, ("net.mtu",))
    assert steps_of(plan, "net.mtu")
    facts = scenarios.facts_of(tmp_path / "f", nodes)
    site = Site(name="t", nodes=tuple(NodeSpec(name=n, snapshot=n) for n in facts), fabric=SITE_FABRIC)
    verdicts = verify(site, plan, facts, facts, checks=ALL, fixes=BY_ID)  # nothing changed: not cured
    (bad,) = [v for v in verdicts if v.status == "not-cured"]
    assert bad.detail.startswith("still ") and "(want " in bad.detail and "what to do: " in bad.detail
    fixed = scenarios.facts_of(tmp_path / "g", pair(RoceSetup(roce_mode="RoCE v2")))
    cured = verify(site, plan, facts, fixed, checks=ALL, fixes=BY_ID)
    assert any(v.status == "cured" for v in cured)
    for verdict in cured:
        if verdict.status == "cured":
            names = verdict.detail.removeprefix("now passing: ").split(", ")
            assert len(names) == len(set(names)) and "pass" not in names


def test_no_python_none_in_restore_words() -> None:
    assert restoring("/etc/x.conf", Kind.FILE, None) == "removing /etc/x.conf, the file strixwizard created"
    assert "None" not in restoring("/sys/x", Kind.MTU, None)
    assert restoring("eth0", Kind.MTU, "1500") == "restoring eth0 to '1500'"
    assert shown(None) == "(absent)" and shown("") == "''"

"""Bonded USB4 links (usb4.bond_reordering, fix usb4.tcp_reordering) on snapshot scenarios built
as the bonding driver lays out sysfs (bond_sysfs.c), and the fix applied to a lab node's own
network namespace (net.ipv4.tcp_reordering is per namespace)."""

from __future__ import annotations

from pathlib import Path

from fixes import FIXES
from fixes.usb4 import SYSCTL_CONTENT, SYSCTL_FILE
from strixwizard.demo.hardware import usb4_bond
from strixwizard.demo.scenarios import strix_halo_node
from strixwizard.discovery import Discovery
from strixwizard.fixing.model import Kind
from strixwizard.fixing.planning import plan_site
from strixwizard.model import CheckResult, Status
from strixwizard.site import NodeSpec, Site
from tests.support import scenarios


def check(tmp_path: Path, mode: str = "balance-rr 0", tcp_reordering: int | None = 3
          ) -> dict[str, CheckResult]:
    report = scenarios.run_site(tmp_path, scenarios.thunderbolt_bond_pair(mode, tcp_reordering))
    return {r.entity: r for r in scenarios.results(report, "usb4.bond_reordering")}


def test_facts_read_the_bond_its_mode_its_thunderbolt_slaves_and_tcp_reordering(tmp_path: Path
                                                                               ) -> None:
    facts = scenarios.facts_of(tmp_path, scenarios.thunderbolt_bond_pair())
    (bond,) = facts["bond-a"].bonds
    assert (bond.name, bond.mode, bond.slaves, bond.thunderbolt_slaves) == (
        "bond0", "balance-rr", ("thunderbolt0", "thunderbolt1"), ("thunderbolt0", "thunderbolt1"))
    assert facts["bond-a"].tcp_reordering == 3 and facts["bond-b"].tcp_reordering == 127


def test_round_robin_bond_at_the_default_reordering_warns_with_the_source(tmp_path: Path) -> None:
    results = check(tmp_path)
    low = results["bond-a:bond0"]
    assert low.status is Status.WARN, low
    assert low.observed == ("balance-rr over thunderbolt0 thunderbolt1, "
                            "net.ipv4.tcp_reordering = 3")
    assert low.expected == "net.ipv4.tcp_reordering >= 127 (published)"
    assert "wkljohn/llama.cpp-strix-halo-RCCL-RDMA" in low.detail
    assert low.fix is not None and low.fix.id == "usb4.tcp_reordering"
    assert results["bond-b:bond0"].status is Status.PASS


def test_other_modes_pass_and_an_uncaptured_sysctl_skips(tmp_path: Path) -> None:
    backup = check(tmp_path / "ab", mode="active-backup 1")
    assert backup["bond-a:bond0"].status is Status.PASS
    assert "keeps each flow on one link" in backup["bond-a:bond0"].detail
    unknown = check(tmp_path / "unk", tcp_reordering=None)
    assert unknown["bond-a:bond0"].status is Status.SKIP


def test_no_bond_skips(tmp_path: Path) -> None:
    report = scenarios.run_site(tmp_path, scenarios.thunderbolt_only_pair())
    assert {r.status for r in scenarios.results(report, "usb4.bond_reordering")} == {Status.SKIP}


def _site(nodes: scenarios.Nodes) -> Site:
    return Site(name="bond", nodes=tuple(NodeSpec(name=n, snapshot=n) for n in nodes))


def test_fix_plans_the_sysctl_now_and_in_sysctl_d_on_the_node_that_needs_it(tmp_path: Path) -> None:
    nodes = scenarios.thunderbolt_bond_pair()
    facts = scenarios.facts_of(tmp_path, nodes)
    found = Discovery.of_facts(_site(nodes), list(facts.values()))
    plan = plan_site(found, only=["usb4.tcp_reordering"], fixes=FIXES)
    (only,) = plan.plans
    assert (only.node, only.entity) == ("bond-a", "bond-a:bond0")
    now, boot = only.steps
    assert (now.kind, now.target, now.before, now.after) == (
        Kind.WRITE, "/proc/sys/net/ipv4/tcp_reordering", "3", "127")
    assert (boot.kind, boot.target, boot.before, boot.after) == (Kind.FILE, SYSCTL_FILE, None,
                                                                 SYSCTL_CONTENT)
    assert "net.ipv4.tcp_reordering = 127\n" in SYSCTL_CONTENT
    runtime = plan_site(found, only=["usb4.tcp_reordering"], fixes=FIXES, persist=False)
    assert [s.kind for p in runtime.plans for s in p.steps] == [Kind.WRITE]
    assert "runtime only" in runtime.plans[0].persistence


def test_bonded_thunderbolt_scenario_reports_the_reordering_on_the_node_that_lacks_it(
        tmp_path: Path) -> None:
    report = scenarios.report_of(tmp_path, "bond")
    found = {(r.status.value, r.id, r.entity) for r in scenarios.bad(report)}
    assert ("warn", "usb4.bond_reordering", "bond-a:bond0") in found
    assert not [f for f in found if f[1] == "usb4.bond_reordering" and f[2].startswith("bond-b")]
    assert scenarios.statuses(report, "usb4.bond_reordering") == {
        "bond-a:bond0": Status.WARN, "bond-b:bond0": Status.PASS}


def test_crc_errors_of_a_bonded_thunderbolt_slave_are_counted_though_it_has_no_address(
        tmp_path: Path) -> None:
    nodes = scenarios.thunderbolt_bond_pair()
    a = strix_halo_node("bond-a")
    usb4_bond(a, "bond-b", "10.0.0.1/30", statistics={"rx_crc_errors": 41, "rx_errors": 41,
                                                       "rx_bytes": 10**12})
    nodes["bond-a"] = a
    report = scenarios.run_site(tmp_path, nodes)
    found = {r.entity: r for r in scenarios.results(report, "fabric.counters")}
    slave = found["bond-a:thunderbolt1"]
    assert slave.status is Status.WARN
    assert "corrupt: rx_crc_errors 41 (statistics)" in slave.observed
    assert found["bond-a:thunderbolt0"].status is Status.SKIP  # no statistics captured there

"""The CLI as a newcomer meets it (round two, continued): "cured" names only what was broken,
the fix plan's counts add up to doctor's, and the demo shows how fixes persist."""

from __future__ import annotations

import json
import re
from pathlib import Path

from checks import ALL
from fixes import BY_ID
from strixwizard.demo.hardware import RoceSetup
from strixwizard.fixing.engine import verify
from strixwizard.site import NodeSpec, Site
from tests.support import scenarios
from tests.support.cli import run_cli
from tests.support.fixplans import SITE_FABRIC, pair, plan_of


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
    (verdict,) = verify(site, plan, before, {"node-b": fixed["node-b"]}, checks=ALL, fixes=BY_ID)
    assert verdict.status == "cured"
    assert verdict.detail == "now passing: rdma.roce_v2_default"  # not link.roce_version


def test_a_fix_whose_checks_passed_before_is_passing_not_cured(tmp_path: Path) -> None:
    healthy = pair(RoceSetup(roce_mode="RoCE v2"))
    plan = plan_of(tmp_path / "plan", pair(RoceSetup(roce_mode="RoCE v1")))  # from older facts
    facts = scenarios.facts_of(tmp_path / "facts", healthy)
    site = Site(name="t", nodes=tuple(NodeSpec(name=n, snapshot=n) for n in facts),
                fabric=SITE_FABRIC)
    (verdict,) = verify(site, plan, facts, {"node-b": facts["node-b"]}, checks=ALL, fixes=BY_ID)
    assert verdict.status == "passing"
    assert verdict.detail == ("link.roce_version, rdma.roce_v2_default passing (none of them "
                              "failed or warned before the run)")


def _doctor_problems(tmp_path: Path) -> tuple[int, list[dict[str, object]]]:
    doctor = json.loads(run_cli("doctor", "--demo", "--json",
                                env={"XDG_STATE_HOME": str(tmp_path)}).stdout)
    bad = [c for c in doctor["checks"] if c["status"] in ("fail", "warn", "error")]
    return len(bad), bad


def test_the_demo_fix_counts_add_up_to_doctors_problems(tmp_path: Path) -> None:
    problems, bad = _doctor_problems(tmp_path)
    plan = json.loads(run_cli("fix", "--demo", "--json", env={"XDG_STATE_HOME": str(tmp_path)}).stdout)
    summary = plan["summary"]
    assert summary["problems"] == problems
    assert summary["failed"] == sum(1 for c in bad if c["status"] == "fail")
    assert summary["cured_by_plan"] + summary["by_hand"] + summary["not_planned"] == problems
    assert summary["cured_by_plan"] > 0 and summary["changes"] > 0
    text = run_cli("fix", "--demo", env={"XDG_STATE_HOME": str(tmp_path)}).stdout
    line = next(line for line in text.splitlines() if line.startswith("doctor finds "))
    assert line.startswith(f"doctor finds {problems} problems ")
    cured, by_hand, none = (int(n) for n in re.findall(
        r"(\d+) cured by the \d+ change\(s\) above.*; (\d+) to do by hand.*; (\d+) with no plan", line)[0])
    assert cured + by_hand + none == problems
    assert f"by the {summary['changes']} change(s) above" in line
    assert text.rstrip().endswith("Apply with: strixwizard fix --demo --apply")


def test_the_demo_apply_calls_cured_only_what_doctor_found_broken(tmp_path: Path) -> None:
    problems, bad = _doctor_problems(tmp_path)
    broken_ids = {str(c["id"]) for c in bad}
    result = run_cli("fix", "--demo", "--apply", "--yes", env={"XDG_STATE_HOME": str(tmp_path)})
    assert result.rc == 0, result.stderr
    cured = [line for line in result.stdout.splitlines() if "✓ cured" in line]
    assert cured
    named = {name for line in cured for name in line.split("now passing: ", 1)[1].split(", ")}
    assert named <= broken_ids, named - broken_ids
    assert f"doctor finds {problems} problems" in result.stdout


def test_the_demo_nodes_run_systemd_and_their_network_managers() -> None:
    from strixwizard.facts import NodeFacts
    from strixwizard.probe.snapshot import SnapshotProbe
    from strixwizard.services.nodes import demo_site

    site = demo_site()
    facts = {spec.name: NodeFacts(spec.name, SnapshotProbe.load(site.resolve(str(spec.snapshot))))
             for spec in site.nodes}
    a, b = facts["node-a"].persistence, facts["node-b"].persistence
    assert a.systemd and b.systemd
    assert (a.nm_connections or {}).get("enp194s0np0") == "fabric"  # Fedora 43: NetworkManager
    assert b.networkd_files["enp194s0np0"] == "/run/systemd/network/10-netplan-enp194s0np0.network"


def test_the_demo_plans_show_how_each_fix_survives_a_reboot(tmp_path: Path) -> None:
    text = run_cli("fix", "--demo", env={"XDG_STATE_HOME": str(tmp_path)}).stdout
    assert "does not run systemd" not in text and "runtime only" not in text
    assert ("systemd-networkd drop-in for 10-netplan-enp194s0np0.network: MTUBytes=9000  "
            "[persistence: networkd]") in text
    assert "+++ /etc/systemd/network/10-netplan-enp194s0np0.network.d/90-strixwizard-mtu.conf" in text
    assert "write systemd unit strixwizard-ethtool-pause-off-enp194s0np0.service" in text
    applied = run_cli("fix", "--demo", "--apply", "--yes", env={"XDG_STATE_HOME": str(tmp_path)})
    assert applied.rc == 0, applied.stdout + applied.stderr
    assert "✓ applied     enable strixwizard-ethtool-pause-off-enp194s0np0.service at boot" in applied.stdout


README = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")


def _section(start: str, end: str) -> str:
    return README[README.index(start):README.index(end, README.index(start))]


def test_readme_checks_table_is_one_table_with_every_area() -> None:
    lines = _section("## Checks\n", "### USB4 links as people cable them").splitlines()
    first = lines.index("| area | checks |")
    table = []
    for line in lines[first:]:
        if not line.startswith("|"):
            break
        table.append(line)
    areas = [row.split("|")[1].strip() for row in table[2:]]
    assert areas[-1] == "site" and "links" in areas and "USB4" in areas
    assert not any(line.startswith("| site ") for line in lines[first + len(table):])


def test_readme_first_screen_shows_the_real_cluster_path() -> None:
    first = README[:README.index("## Install on the head node")]
    commands = [line.split()[1] for line in first.splitlines() if line.startswith("strixwizard ")]
    assert commands == ["init", "doctor", "fix", "deploy", "test"]
    assert "init → doctor → fix → deploy → test" in first


def test_readme_lab_internals_come_after_the_site_file_reference() -> None:
    before = README[:README.index("## Site file\n")]
    assert README.index("## Site file\n") < README.index("## The test lab\n")
    assert "with warm caches ran" not in before and "The VM tests added" not in before


def test_readme_demo_decode_table_says_what_does_not_fit() -> None:
    table = _section("**Demo** (RCCL over E810 RoCE recorded", "**Namespace lab**")
    qwen = next(line for line in table.splitlines() if line.startswith("| Qwen3-235B-A22B"))
    assert "8.8 tok/s (10 %), does not fit" in qwen


def test_history_on_a_fresh_install_says_how_to_fill_it_and_the_demo_stores_its_runs(
        tmp_path: Path) -> None:
    env = {"XDG_STATE_HOME": str(tmp_path)}
    fresh = run_cli("history", env=env)
    assert fresh.rc == 2
    assert "`strixwizard test latency --demo` twice, then `strixwizard history --demo`" in fresh.stderr
    empty = run_cli("history", "--demo", env=env)
    assert empty.rc == 2 and "`strixwizard test latency --demo` stores one" in empty.stderr
    for _ in range(2):
        ran = run_cli("test", "latency", "--demo", "--level", "quick", env=env)
        assert ran.rc == 0, ran.stdout + ran.stderr
    shown = run_cli("history", "--demo", env=env)
    assert shown.rc in (0, 1), shown.stderr  # 1: loopback 10 % slower than the run before
    assert "strixwizard history: demo: 2 run(s) shown" in shown.stdout
    assert "node-a-node-b TCP latency" in shown.stdout
    state = tmp_path / "strixwizard"
    assert (state / "demo-history.sqlite").is_file()
    assert not (state / "history.sqlite").exists()  # the demo never joins a real site's history
    assert (state.stat().st_mode & 0o777) == 0o700

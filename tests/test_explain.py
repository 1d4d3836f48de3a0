"""`strixwizard explain ID`: a page for every check and fix, and doctor pointing to it."""

from __future__ import annotations

import fnmatch
from pathlib import Path

import pytest

import checks
import fixes
from fixes.declare import DeclaredFix
from strixwizard.cli import explain
from strixwizard.demo.hardware import RoceSetup
from strixwizard.fixing.model import Kind
from tests.support import scenarios
from tests.support.fixplans import pair, plan_of, systemd

SECTIONS = ("What it checks", "What it reads", "Why it matters", "How to fix it by hand", "Sources")


@pytest.mark.parametrize("check", checks.ALL, ids=lambda c: c.id)
def test_every_check_has_a_page_with_every_section(check) -> None:
    [page] = explain.pages(check.id)
    text = explain.render(page)
    assert text.startswith(f"{check.id}: {check.title}\n")
    for section in SECTIONS:
        assert f"\n{section}\n" in text, section
    assert check.sources[0] in text
    if check.fix is not None:
        assert f"What `strixwizard fix` does ({check.fix})" in text
        assert page["fix_page"]["id"] == check.fix and check.id in page["fix_page"]["cures"]


@pytest.mark.parametrize("fix", fixes.FIXES, ids=lambda f: f.id)
def test_every_fix_has_a_page_saying_what_it_changes_and_how_to_undo_it(fix) -> None:
    page = explain.fix_page(fix, [c.id for c in checks.ALL if c.fix == fix.id])
    text = explain.render(page)
    assert page["changes"], f"{fix.id}: the plan function needs a docstring"
    assert "\n  Undo: " in text and page["summary"] == fix.ref.summary
    if fix.automated:
        assert isinstance(fix, DeclaredFix) and fix.persists, f"{fix.id}: declare persists="
        assert ("--rollback" in page["undo"]) == fix.ref.reversible
    else:
        assert page["changes"].startswith("Not automated: ") and "nothing to undo" in page["undo"]


def test_an_id_that_is_a_check_and_its_own_fix_shows_one_page() -> None:
    [page] = explain.pages("rdma.roce_v2_default")
    assert page["kind"] == "check" and page["fix_page"]["id"] == "rdma.roce_v2_default"


def _file_steps(tmp_path: Path) -> list[tuple[str, str]]:
    broken = pair(RoceSetup(mtu=1500, pfc=(), pause=(True, True), dscp_prio=(), roce_mode=None))
    platform = {name: systemd(node) for name, node in scenarios.platform_faults_node().items()}
    found = []
    for index, nodes in enumerate((broken, platform, scenarios.misconfigured_e810_pair())):
        plan = plan_of(tmp_path / str(index), nodes)
        found += [(p.fix, s.target) for p in plan.plans for s in p.steps if s.kind == Kind.FILE]
    return found


def test_the_files_a_fix_writes_are_the_files_its_declaration_names(tmp_path: Path) -> None:
    written = _file_steps(tmp_path)
    assert len({fix for fix, _ in written}) >= 4, written  # the scenarios reach most fixes
    for fix_id, path in written:
        declared = fixes.PLANS[fix_id]
        assert isinstance(declared, DeclaredFix)
        assert any(fnmatch.fnmatchcase(path, pattern) for pattern in declared.writes), (
            f"{fix_id} writes {path}, not among its declared writes= {declared.writes}")


def test_unknown_id_is_exit_2_naming_close_matches(cli) -> None:
    result = cli("explain", "node.memlok")
    assert result.rc == 2
    assert "no check or fix has the id 'node.memlok'" in result.stderr
    assert "did you mean node.memlock" in result.stderr


def test_explain_text_json_and_list(cli) -> None:
    text = cli("explain", "dcb.fw_lldp")
    assert text.rc == 0 and text.stdout.startswith("dcb.fw_lldp: The NIC's firmware LLDP agent is off")
    assert "ethtool --set-priv-flags IF fw-lldp-agent off" in text.stdout
    document = cli("explain", "dcb.fw_lldp", "--json").json()
    [page] = document["pages"]
    assert document["tool"]["name"] == "strixwizard"
    assert page == explain.pages("dcb.fw_lldp")[0]
    listed = cli("explain", "--list", "--json").json()
    assert [row["id"] for row in listed["checks"]] == [c.id for c in checks.ALL]
    assert [row["id"] for row in listed["fixes"]] == [f.id for f in fixes.FIXES]
    assert "strixwizard explain ID" in cli("explain", "--list").stdout


def test_list_checks_json_carries_the_page_text_and_keeps_its_old_fields(cli) -> None:
    rows = cli("doctor", "--list-checks", "--json").json()
    assert [row["id"] for row in rows] == [c.id for c in checks.ALL]
    for row in rows:
        page = explain.pages(row["id"])[0]
        assert {"id", "title", "why", "severity", "scope", "fix"} <= set(row)
        for key in ("reads", "matters", "manual", "sources", "checks", "skips"):
            assert row[key] == page[key], (row["id"], key)
        assert row["explain"] == f"strixwizard explain {row['id']}"


def test_doctor_names_the_explain_command_under_every_finding(cli) -> None:
    out = cli("doctor", "--demo", "-v").stdout  # the full text: every finding in its block
    findings = [line.split()[1] for line in out.splitlines()
                if line.startswith("  ") and line.split()[0] in ("WARN", "FAIL", "ERROR")
                and "<->" not in line and "." in line.split()[1]]
    assert findings
    for check_id in findings:
        assert f"more: strixwizard explain {check_id}" in out

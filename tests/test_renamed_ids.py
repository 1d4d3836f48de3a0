"""Check and fix ids renamed to vendor-neutral names keep their old ids as aliases for one
release: accepted as input, listed in JSON (the contract in DESIGN.md and the README)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

import checks
import fixes
from strixwizard.model import RENAMED_IDS, aliases_of, current_id
from tests.support.cli import invoke

SCHEMA = json.loads((Path(__file__).resolve().parent.parent / "strixwizard" / "schema"
                     / "doctor.schema.json").read_text())


def test_every_new_id_exists_and_no_old_id_is_still_declared() -> None:
    known = set(checks.BY_ID) | {fix.id for fix in fixes.ALL}
    assert set(RENAMED_IDS.values()) <= known
    assert not set(RENAMED_IDS) & known
    assert current_id("e810.fw_lldp") == "dcb.fw_lldp" and current_id("link.mtu") == "link.mtu"
    assert aliases_of("roce.enabled") == ["e810.roce_enabled"] and aliases_of("link.mtu") == []


def test_doctor_json_lists_the_old_id_beside_the_new_one() -> None:
    result = invoke("doctor", "--demo", "--json")
    document = json.loads(result.stdout)
    jsonschema.validate(document, SCHEMA)
    rows = {row["id"]: row for row in document["checks"]}
    assert rows["dcb.fw_lldp"]["aliases"] == ["e810.fw_lldp"]
    assert rows["roce.enabled"]["aliases"] == ["e810.roce_enabled"]
    assert "aliases" not in rows["link.mtu"]  # only renamed ids carry the field
    fixed = [row["fix"] for row in document["checks"]
             if row["fix"] and row["fix"]["id"] == "dcb.fw_lldp_off"]
    assert fixed and all(fix["aliases"] == ["e810.fw_lldp_off"] for fix in fixed)


def test_an_old_id_still_selects_and_explains_its_check() -> None:
    only = json.loads(invoke("doctor", "--demo", "--json", "--only", "e810.fw_lldp").stdout)
    assert {row["id"] for row in only["checks"]} == {"dcb.fw_lldp"}
    page = invoke("explain", "e810.one_pfc_tc")
    assert page.rc == 0 and page.stdout.startswith("dcb.pfc_tc_limit: ")
    assert "formerly e810.one_pfc_tc" in page.stdout
    fix_page = json.loads(invoke("explain", "e810.enable_roce", "--json").stdout)
    assert fix_page["pages"][0]["id"] == "roce.enable"
    assert fix_page["pages"][0]["aliases"] == ["e810.enable_roce"]


def test_an_old_area_still_selects_its_fixes(tmp_path: Path) -> None:
    from strixwizard.fixing.planning import select

    assert [f.id for f in select(fixes.FIXES, ["e810"])] == ["roce.enable", "dcb.fw_lldp_off"]
    assert [f.id for f in select(fixes.FIXES, ["e810.fw_lldp_off"])] == ["dcb.fw_lldp_off"]

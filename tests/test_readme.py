"""README.md in the order a newcomer reads it: the real cluster path on the first screen, one
checks table with every area, the lab's internals after the site file reference, and the demo's
decode table saying what does not fit."""

from __future__ import annotations

from pathlib import Path

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

"""`strixwizard doctor` as text, as a person reads it: the areas at a glance and everything with
`-v`, one block per finding, lines wrapped at words within the terminal's width, no counts
before no verdict, and the next step (`fix` for the same site) last."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.cli import invoke
from tests.support.demo import demo_site_copy, printed_lines, state_env
from tests.support.hostile.bundles import hostile_bundle
from tests.support.hostile.strings import FIRMWARE, KERNEL, assert_no_control


@pytest.fixture
def site_copy(tmp_path: Path) -> Path:
    """The demo site as a user's own site file in another directory (snapshot nodes)."""
    return demo_site_copy(tmp_path)


def test_doctor_ends_with_the_fix_command_for_the_same_site(site_copy: Path, tmp_path: Path) -> None:
    result = invoke("doctor", "--site", str(site_copy), env=state_env(tmp_path))
    assert result.rc == 1
    assert printed_lines(result)[-1] == f"next: strixwizard fix --site '{site_copy}'"
    demo = invoke("doctor", "--demo", env=state_env(tmp_path))
    assert printed_lines(demo)[-1] == "next: strixwizard fix --demo"


def test_doctor_groups_the_same_finding_on_several_nodes(tmp_path: Path) -> None:
    out = invoke("doctor", "--demo", env=state_env(tmp_path)).stdout
    assert sum(line.split()[1:2] == ["nic.pcie_link"] for line in out.splitlines()) == 1
    assert re.search(r"nic\.pcie_link +0000:c2:00\.0 on nodes node-a, node-b\n", out)


def test_doctor_lines_wrap_at_words_within_the_width_keeping_the_indent(tmp_path: Path) -> None:
    out = invoke("doctor", "--demo", "-v", env={**state_env(tmp_path), "COLUMNS": "60"}).stdout
    lines = out.splitlines()
    # a word longer than the width (a URL) stands alone on its line, never cut
    too_long = [line for line in lines if len(line) > 60 and " " in line.strip()]
    assert not too_long, too_long
    at = lines.index(next(line for line in lines if line.startswith("        RDMA bandwidth is capped")))
    assert lines[at + 1].startswith("        ") and not lines[at + 1].startswith("         ")
    words = set(invoke("doctor", "--demo", "-v", env=state_env(tmp_path)).stdout.split())
    assert set(out.split()) == words  # nothing cut, only wrapped


def test_no_counts_before_no_verdict(tmp_path: Path) -> None:
    from checks import ALL

    skipped = [arg for area in sorted({c.id.split(".")[0] for c in ALL}) for arg in ("--skip", area)]
    result = invoke("doctor", "--demo", *skipped, env=state_env(tmp_path))
    assert result.rc == 2 and "no verdict" in result.stdout
    assert "0 failed" not in result.stdout and "0 passed" not in result.stdout
    assert "next:" not in result.stdout


def test_doctor_reads_at_a_glance_and_in_full_with_v(tmp_path: Path) -> None:
    import json

    env = {"XDG_STATE_HOME": str(tmp_path), "COLUMNS": "100", "NO_COLOR": "1"}
    out = invoke("doctor", "--demo", env=env).stdout
    lines = out.splitlines()
    areas = [line.split()[:2] for line in lines if line[:4] in ("  ✓ ", "  ! ", "  ✗ ", "  - ")]
    assert [area for _, area in areas] == ["platform", "NICs", "links", "lossless", "versions", "counters",
                                        "llama"]
    marks = dict((area, mark) for mark, area in areas)
    assert marks["links"] == "✗" and marks["platform"] == "!"
    assert "  ✗ versions  1 failed, 5 passed, 2 skipped" in lines
    # failures in full, warnings in one line each, and how to see everything
    assert "more: strixwizard explain link.mtu" in out
    assert "more: strixwizard explain nic.pcie_link" not in out
    assert any(line.startswith("  WARN  nic.pcie_link") for line in lines)
    assert "`strixwizard doctor --demo -v` says what to do about each" in out
    # each warning with its reason under it, in one line within the width
    gtt = lines.index(next(line for line in lines if line.startswith("  WARN  node.gtt")))
    assert lines[gtt + 1].strip().startswith("GTT 62.7 GiB = 50% of 125.4 GiB RAM (want >= 75%")
    narrow = invoke("doctor", "--demo", env={**env, "COLUMNS": "60"}).stdout.splitlines()
    at = narrow.index(next(line for line in narrow if line.startswith("  WARN  fabric.counters")))
    assert narrow[at + 1].startswith("        discard") and narrow[at + 2].startswith("  WARN")
    assert all(len(line) <= 60 for line in narrow[at:at + 2]), narrow[at:at + 2]
    assert "links: 2" not in out and len(lines) < 52  # a reason under each warning
    full = invoke("doctor", "--demo", "-v", env=env).stdout
    assert "links: 2" in full and "more: strixwizard explain nic.pcie_link" in full
    assert "  ✗ versions" not in full
    # the JSON is the same document either way
    document = json.loads(invoke("doctor", "--demo", "--json", env=env).stdout)
    assert document["summary"]["fail"] == 3 and "areas" not in document


def test_doctor_text_spells_out_what_a_hostile_bundle_says(tmp_path: Path) -> None:
    paths = hostile_bundle(tmp_path, KERNEL, FIRMWARE)
    for verbose in ((), ("--verbose",)):
        result = invoke("doctor", *verbose, "--snapshot", *map(str, paths))
        assert result.rc == 1, result.stderr
        assert_no_control(result.stdout + result.stderr)
        assert "kernel 6.1.0[/]\\x1b[2J" in result.stdout.splitlines()[1]
    assert "\\x1b]52;c;cHduZWQ=\\x07" in result.stdout  # --verbose shows the firmware
    exact = invoke("doctor", "--json", "--snapshot", *map(str, paths)).json()
    assert [h["facts"]["kernel"] for h in exact["hosts"]] == [KERNEL, KERNEL]  # JSON: exact


@pytest.mark.parametrize("chosen", [
    ("--demo",),
    ("--snapshot", "strixwizard/demo/snapshots/node-b.tar.gz"),
    ("--demo", "--strict", "--only", "rdma.active_mtu"),
])
def test_the_explain_them_hint_repeats_the_options_that_chose_the_nodes(chosen: tuple[str, ...]) -> None:
    """`doctor --snapshot X` once ended with "`strixwizard doctor -v` explains them", which
    checks this machine instead."""
    root = Path(__file__).resolve().parent.parent
    words = tuple(str(root / w) if w.endswith(".tar.gz") else w for w in chosen)
    result = invoke("doctor", *words)
    text = " ".join(result.stdout.split())
    hint = re.search(r"warnings in short: `([^`]+)` says what to do", text)
    assert hint is not None, text
    assert hint.group(1).split() == ["strixwizard", "doctor", *words, "-v"]

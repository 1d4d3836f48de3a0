"""The CLI's text as a newcomer reads it: next steps that work where they are run, one block
per finding, lines within the terminal's width, the refusal first."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.support.cli import CliResult, run_cli

DEMO = Path(__file__).resolve().parent.parent / "strixwizard" / "demo"


@pytest.fixture
def site_copy(tmp_path: Path) -> Path:
    """The demo site as a user's own site file in another directory (snapshot nodes)."""
    for name in ("node-a.tar.gz", "node-b.tar.gz"):
        (tmp_path / "snapshots").mkdir(exist_ok=True)
        shutil.copy(DEMO / "snapshots" / name, tmp_path / "snapshots" / name)
    site = tmp_path / "my site.yaml"
    site.write_text((DEMO / "site.yaml").read_text().replace("site: demo", "site: mine"))
    return site


def _state(tmp_path: Path) -> dict[str, str]:
    return {"XDG_STATE_HOME": str(tmp_path / "state"), "COLUMNS": "80"}


def _lines(result: CliResult) -> list[str]:
    return [line for line in result.stdout.splitlines() if line.strip()]


def test_doctor_ends_with_the_fix_command_for_the_same_site(site_copy: Path, tmp_path: Path) -> None:
    result = run_cli("doctor", "--site", str(site_copy), env=_state(tmp_path))
    assert result.rc == 1
    assert _lines(result)[-1] == f"next: strixwizard fix --site '{site_copy}'"
    demo = run_cli("doctor", "--demo", env=_state(tmp_path))
    assert _lines(demo)[-1] == "next: strixwizard fix --demo"


def test_doctor_groups_the_same_finding_on_several_nodes(tmp_path: Path) -> None:
    out = run_cli("doctor", "--demo", env=_state(tmp_path)).stdout
    assert sum(line.split()[1:2] == ["nic.pcie_link"] for line in out.splitlines()) == 1
    assert re.search(r"nic\.pcie_link +0000:c2:00\.0 on nodes node-a, node-b\n", out)


def test_doctor_lines_wrap_at_words_within_the_width_keeping_the_indent(tmp_path: Path) -> None:
    out = run_cli("doctor", "--demo", "-v", env={**_state(tmp_path), "COLUMNS": "60"}).stdout
    lines = out.splitlines()
    # a word longer than the width (a URL) stands alone on its line, never cut
    too_long = [line for line in lines if len(line) > 60 and " " in line.strip()]
    assert not too_long, too_long
    at = lines.index(next(line for line in lines if line.startswith("        RDMA bandwidth is capped")))
    assert lines[at + 1].startswith("        ") and not lines[at + 1].startswith("         ")
    words = set(run_cli("doctor", "--demo", "-v", env=_state(tmp_path)).stdout.split())
    assert set(out.split()) == words  # nothing cut, only wrapped


def test_no_counts_before_no_verdict(tmp_path: Path) -> None:
    from checks import ALL

    skipped = [arg for area in sorted({c.id.split(".")[0] for c in ALL}) for arg in ("--skip", area)]
    result = run_cli("doctor", "--demo", *skipped, env=_state(tmp_path))
    assert result.rc == 2 and "no verdict" in result.stdout
    assert "0 failed" not in result.stdout and "0 passed" not in result.stdout
    assert "next:" not in result.stdout


def test_fix_plan_names_the_apply_for_the_same_site_and_selection(site_copy: Path, tmp_path: Path) -> None:
    result = run_cli("fix", "--site", str(site_copy), "--only", "net.mtu", env=_state(tmp_path))
    assert result.rc == 0, result.stderr
    assert _lines(result)[-1] == (f"2 change(s) planned. Apply with: strixwizard fix --site '{site_copy}' "
                                  "--only net.mtu --apply")


def test_fix_apply_without_terminal_prints_the_refusal_alone(site_copy: Path, tmp_path: Path) -> None:
    result = run_cli("fix", "--site", str(site_copy), "--apply", env=_state(tmp_path))
    assert result.rc == 2 and result.stdout == ""
    assert result.stderr.startswith("strixwizard: error: refusing to change nodes without confirmation")
    assert f"strixwizard fix --site '{site_copy}' --apply --yes" in result.stderr


def test_fix_apply_does_not_suggest_itself_and_its_undo_names_the_journal(site_copy: Path,
                                                                         tmp_path: Path) -> None:
    journals = tmp_path / "journals"
    result = run_cli("fix", "--site", str(site_copy), "--apply", "--yes", "--journal-dir", str(journals),
                     "--dry-run-dir", str(tmp_path / "dry"), env=_state(tmp_path))
    assert result.rc in (0, 1), result.stderr
    assert "Apply with" not in result.stdout
    assert f"Undo this run with: strixwizard fix --journal-dir {journals} --rollback " in result.stdout


def test_user_facing_text_has_no_jargon_a_user_cannot_look_up() -> None:
    root = Path(__file__).resolve().parent.parent
    sources = [p for d in ("checks", "fixes", "strixwizard") for p in (root / d).rglob("*.py")]
    for path in sources:
        text = path.read_text(encoding="utf-8")
        for jargon in ("kyuz0 measured", "init is {", "'s init is", "kyuz0's gfx1151-rccl"):
            assert jargon not in text, f"{path}: {jargon}"


def test_runtime_only_persistence_says_what_is_true_in_plain_words() -> None:
    from fixes.steps import no_systemd

    assert no_systemd("process_api") == "the node does not run systemd (its first process is process_api)"
    assert "could not be read" in no_systemd(None)


def test_deploy_plan_names_the_apply_of_the_same_command(site_copy: Path, tmp_path: Path) -> None:
    from strixwizard.cli.nextstep import same_command

    assert same_command(["deploy", "--site", "a b.yaml", "--plan", "--stack", "llama-rpc"], drop=("--plan",),
                        add=("--apply",)) == "strixwizard deploy --site 'a b.yaml' --stack llama-rpc --apply"
    demo = run_cli("deploy", "--demo", env=_state(tmp_path))
    assert "Apply with" not in demo.stdout  # snapshots: an apply would be refused
    assert _lines(demo)[-1] == "The nodes are snapshots: this plan is shown, it cannot be applied."


def test_a_suggested_rerun_replaces_the_option_it_changes() -> None:
    from strixwizard.cli.nextstep import same_command

    argv = ["test", "latency", "--transport", "all", "--site", "x y"]
    rerun = same_command(argv, add=("--transport", "tcp"))
    assert rerun == "strixwizard test latency --site 'x y' --transport tcp"
    assert same_command(["test", "matrix", "--transport=all"], add=("--transport", "tcp")) \
        == "strixwizard test matrix --transport tcp"
    assert same_command(["deploy", "--apply", "--site", "s"], add=("--yes",)) \
        == "strixwizard deploy --apply --site s --yes"

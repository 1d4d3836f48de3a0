"""The command line as a whole: a wizard option before a command is refused with the right
order, a typo of a command gets the close ones, the help says where a command's site goes, a
command run on this machine alone says so, and a suggested rerun replaces the option it changes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli import invoke

#: what a newer Python changes (argparse's texts and errors): run on 3.12 and up too
pytestmark = pytest.mark.interpreter


@pytest.mark.parametrize(("argv", "fixed"), [
    (["--demo", "doctor"], "strixwizard doctor --demo"),
    (["--site", "f.yaml", "fix"], "strixwizard fix --site f.yaml"),
    (["--site=f.yaml", "deploy", "--json"], "strixwizard deploy --site=f.yaml --json"),
    (["--demo", "test", "latency"], "strixwizard test --demo latency"),
])
def test_a_wizard_option_before_a_command_is_refused_with_the_right_order(
        argv: list[str], fixed: str, tmp_path: Path) -> None:
    result = invoke(*argv, env={"XDG_STATE_HOME": str(tmp_path)})
    assert result.rc == 2
    assert result.stdout == ""  # nothing ran: not on this machine, not anywhere
    assert f"put it after the command: {fixed}" in result.stderr
    assert "site local" not in result.stderr


def test_the_corrected_order_runs_on_the_demo(tmp_path: Path) -> None:
    result = invoke("doctor", "--demo", "--json", env={"XDG_STATE_HOME": str(tmp_path)})
    assert '"site": "demo"' in result.stdout


def test_the_help_says_where_a_commands_site_goes() -> None:
    out = invoke("--help").stdout
    assert "`strixwizard doctor --demo`" in " ".join(out.split())
    assert out.startswith("usage: strixwizard [-h] [--version] [--demo | --site FILE]   (the wizard)\n"
                          "       strixwizard COMMAND [options]")


def test_a_typo_of_a_command_gets_the_close_ones() -> None:
    result = invoke("doctr", "--demo")
    assert result.rc == 2
    assert "'doctr' is not a command; did you mean doctor?" in result.stderr
    assert "invalid choice" not in result.stderr
    far = invoke("zzzz")
    assert far.rc == 2 and "did you mean" not in far.stderr and "is not a command" in far.stderr


def test_a_command_on_this_machine_says_so(tmp_path: Path) -> None:
    env = {"XDG_STATE_HOME": str(tmp_path)}
    local = invoke("doctor", "--json", "--only", "node.strix_halo", env=env)
    assert "no --site, --inventory or --demo given: this machine only" in local.stderr
    demo = invoke("doctor", "--demo", "--json", "--only", "node.strix_halo", env=env)
    assert "this machine only" not in demo.stderr


def test_a_suggested_rerun_replaces_the_option_it_changes() -> None:
    from strixwizard.cli.nextstep import same_command

    argv = ["test", "latency", "--transport", "all", "--site", "x y"]
    rerun = same_command(argv, add=("--transport", "tcp"))
    assert rerun == "strixwizard test latency --site 'x y' --transport tcp"
    assert same_command(["test", "matrix", "--transport=all"], add=("--transport", "tcp")) \
        == "strixwizard test matrix --transport tcp"
    assert same_command(["deploy", "--apply", "--site", "s"], add=("--yes",)) \
        == "strixwizard deploy --apply --site s --yes"


@pytest.mark.parametrize(("words", "meant"), [
    (("fix", "--demo", "--app"), "--apply"),  # prefix matching would have applied the fixes
    (("doctor", "--dmeo"), "--demo"),
    (("doctor", "--de"), "--demo"),
    (("deploy", "--demo", "--rollbak", "x"), "--rollback"),
])
def test_an_option_is_never_taken_by_its_prefix_and_a_typo_gets_the_close_ones(
        words: tuple[str, ...], meant: str) -> None:
    result = invoke(*words)
    assert result.rc == 2, result.stdout
    assert result.stdout == ""
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith(f"strixwizard {words[0]}: error: unrecognized arguments: "), last
    assert f"did you mean {meant}" in last, last


def test_deploys_reboot_note_repeats_the_options_that_chose_the_site(tmp_path: Path) -> None:
    """A stack's plan says "run `strixwizard deploy --apply` again after a reboot" without
    knowing the command line; the command printed keeps --demo (or --site FILE) and the stack."""
    env = {"XDG_STATE_HOME": str(tmp_path)}
    ray = invoke("deploy", "--demo", env=env).stdout
    assert "run `strixwizard deploy --demo --apply` again after a reboot" in ray
    llama = invoke("deploy", "--demo", "--stack", "llama-rpc", env=env).stdout
    assert "run `strixwizard deploy --demo --stack llama-rpc --apply` again after a reboot" in llama
    assert "`strixwizard deploy --apply`" not in ray + llama

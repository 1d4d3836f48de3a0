"""The CLI as a newcomer meets it (round two): no option silently ignored, a typo answered
with the close commands, every option of `--help` explained, words in the right number."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from tests.support.cli import run_cli


@pytest.mark.parametrize(("argv", "fixed"), [
    (["--demo", "doctor"], "strixwizard doctor --demo"),
    (["--site", "f.yaml", "fix"], "strixwizard fix --site f.yaml"),
    (["--site=f.yaml", "deploy", "--json"], "strixwizard deploy --site=f.yaml --json"),
    (["--demo", "test", "latency"], "strixwizard test --demo latency"),
])
def test_a_wizard_option_before_a_command_is_refused_with_the_right_order(
        argv: list[str], fixed: str, tmp_path: Path) -> None:
    result = run_cli(*argv, env={"XDG_STATE_HOME": str(tmp_path)})
    assert result.rc == 2
    assert result.stdout == ""  # nothing ran: not on this machine, not anywhere
    assert f"put it after the command: {fixed}" in result.stderr
    assert "site local" not in result.stderr


def test_the_corrected_order_runs_on_the_demo(tmp_path: Path) -> None:
    result = run_cli("doctor", "--demo", "--json", env={"XDG_STATE_HOME": str(tmp_path)})
    assert '"site": "demo"' in result.stdout


def test_the_help_says_where_a_commands_site_goes() -> None:
    out = run_cli("--help").stdout
    assert "`strixwizard doctor --demo`" in " ".join(out.split())
    assert out.startswith("usage: strixwizard [-h] [--version] [--demo | --site FILE]   (the wizard)\n"
                          "       strixwizard COMMAND [options]")


def test_a_typo_of_a_command_gets_the_close_ones() -> None:
    result = run_cli("doctr", "--demo")
    assert result.rc == 2
    assert "'doctr' is not a command; did you mean doctor?" in result.stderr
    assert "invalid choice" not in result.stderr
    far = run_cli("zzzz")
    assert far.rc == 2 and "did you mean" not in far.stderr and "is not a command" in far.stderr


def test_every_option_of_init_is_explained() -> None:
    out = run_cli("init", "--help").stdout
    line = next(line for line in out.splitlines() if line.strip().startswith("--out FILE"))
    assert len(line.split()) > 2, line  # a help text beside it, not the bare option


def test_one_round_of_the_matrix_is_one_round() -> None:
    from strixwizard.live.render import print_summary
    from strixwizard.live.report import TestReport
    from strixwizard.site import Thresholds

    report = TestReport(command="matrix", site="demo", thresholds=Thresholds())
    report.matrix = {"nodes": ["a", "b"], "rounds": [[["a", "b"]]], "elapsed_s": 1.0,
                     "tcp_latency_us": {"a": {"b": 9.0}, "b": {"a": 9.0}},
                     "rdma_latency_us": {"a": {}, "b": {}}}
    out = io.StringIO()
    print_summary(report, out)
    assert "Matrix (1 round, 1.0 s)" in out.getvalue()


def test_deploy_warns_with_the_checks_doctor_fails_on_the_same_nodes(tmp_path: Path) -> None:
    import json

    env = {"XDG_STATE_HOME": str(tmp_path)}
    doctor = json.loads(run_cli("doctor", "--demo", "--json", env=env).stdout)
    failing = {(c["id"], c["host"] or c["entity"]) for c in doctor["checks"] if c["status"] == "fail"}
    assert ("node.rdma_core_version", "node-b") in failing
    out = run_cli("deploy", "--demo", env=env).stdout
    warnings = out.split("Warnings:", 1)[1].split("\n\n", 1)[0]
    for check, where in failing:
        assert f"doctor FAILs {check} on {where}" in warnings, (check, where)
    assert "RCCL ready" not in out  # built for gfx1151 is not ready on a node doctor fails
    assert "cure what fix can first: strixwizard fix --demo;" in out
    assert "`strixwizard fix` first" not in out  # no hint that drops the site
    plan = json.loads(run_cli("deploy", "--demo", "--json", env=env).stdout)["plan"]
    assert any(note.startswith("doctor FAILs node.rdma_core_version on node-b") for note in plan["notes"])


def test_test_latency_on_the_demo_shows_the_path_doctor_judges(tmp_path: Path) -> None:
    import json

    env = {"XDG_STATE_HOME": str(tmp_path)}
    doctor = json.loads(run_cli("doctor", "--demo", "--json", env=env).stdout)
    mtu = next(c for c in doctor["checks"] if c["id"] == "link.mtu" and c["status"] == "fail")
    assert "1024" in mtu["observed"]  # node-b's port, as the snapshot has it
    done = run_cli("test", "latency", "--demo", "--json", "--seconds", "0.5", "--no-history", env=env)
    rdma = next(r for r in json.loads(done.stdout)["results"] if r["transport"] == "rdma")
    assert rdma["path"].endswith("node-b:rocep194s0:1 gid 1 mtu 1024"), rdma["path"]
    assert "this site's path differs (node-b active_mtu 1024)" in rdma["detail"]["note"]


def test_the_state_folders_a_fix_run_makes_are_private(tmp_path: Path) -> None:
    import os
    import stat

    state = tmp_path / "state"
    state.mkdir()
    os.chmod(state, 0o755)  # as ~/.local/state usually is: left as its owner set it
    done = run_cli("fix", "--demo", "--apply", "--yes", env={"XDG_STATE_HOME": str(state)})
    assert done.rc == 0, done.stderr
    own = state / "strixwizard"
    folders = [own, *own.glob("*"), *own.glob("journal/*"), *own.glob("dry-runs/*"),
               *own.glob("dry-runs/*/*")]  # what strixwizard makes, not the copies' insides
    assert any(p.name == "dry-runs" for p in folders)
    loose = [f"{oct(stat.S_IMODE(p.stat().st_mode))} {p}" for p in folders
             if p.is_dir() and stat.S_IMODE(p.stat().st_mode) & 0o077]
    assert not loose, loose
    assert stat.S_IMODE(state.stat().st_mode) == 0o755


def test_the_history_database_folder_is_private(tmp_path: Path) -> None:
    import stat

    from strixwizard.live.history import History

    History(tmp_path / "new" / "strixwizard" / "history.sqlite").close()
    for folder in (tmp_path / "new", tmp_path / "new" / "strixwizard"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder


def test_doctor_reads_at_a_glance_and_in_full_with_v(tmp_path: Path) -> None:
    import json

    env = {"XDG_STATE_HOME": str(tmp_path), "COLUMNS": "100", "NO_COLOR": "1"}
    out = run_cli("doctor", "--demo", env=env).stdout
    lines = out.splitlines()
    areas = [line.split()[:2] for line in lines if line[:4] in ("  ✓ ", "  ! ", "  ✗ ", "  - ")]
    assert [area for _, area in areas] == ["platform", "NICs", "links", "lossless", "versions", "counters"]
    marks = dict((area, mark) for mark, area in areas)
    assert marks["links"] == "✗" and marks["platform"] == "!"
    assert "  ✗ versions  1 failed, 5 passed, 2 skipped" in lines
    # failures in full, warnings in one line each, and how to see everything
    assert "more: strixwizard explain link.mtu" in out
    assert "more: strixwizard explain nic.pcie_link" not in out
    assert any(line.startswith("  WARN  nic.pcie_link") for line in lines)
    assert "`strixwizard doctor --demo -v` explains them" in out
    assert "links: 2" not in out and len(lines) < 45
    full = run_cli("doctor", "--demo", "-v", env=env).stdout
    assert "links: 2" in full and "more: strixwizard explain nic.pcie_link" in full
    assert "  ✗ versions" not in full
    # the JSON is the same document either way
    document = json.loads(run_cli("doctor", "--demo", "--json", env=env).stdout)
    assert document["summary"]["fail"] == 3 and "areas" not in document


def test_a_command_on_this_machine_says_so(tmp_path: Path) -> None:
    env = {"XDG_STATE_HOME": str(tmp_path)}
    local = run_cli("doctor", "--json", "--only", "node.strix_halo", env=env)
    assert "no --site, --inventory or --demo given: this machine only" in local.stderr
    demo = run_cli("doctor", "--demo", "--json", "--only", "node.strix_halo", env=env)
    assert "this machine only" not in demo.stderr


def test_a_dry_run_copy_keeps_the_gpu_link_so_node_gtt_is_judged_the_same(tmp_path: Path) -> None:
    import json

    env = {"XDG_STATE_HOME": str(tmp_path)}
    assert run_cli("fix", "--demo", "--apply", "--yes", env=env).rc == 0
    [copy] = (tmp_path / "strixwizard" / "dry-runs").glob("*/node-b")
    replayed = json.loads(run_cli("doctor", "--json", "--only", "node.gtt", "--snapshot", str(copy),
                                  env=env).stdout)
    demo = json.loads(run_cli("doctor", "--demo", "--json", "--only", "node.gtt", env=env).stdout)
    wanted = {c["status"] for c in demo["checks"] if c["host"] == "node-b"}
    assert {c["status"] for c in replayed["checks"]} == wanted == {"warn"}

"""`strixwizard doctor` as a user runs it: output, JSON contract and exit codes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from strixwizard.demo.scenarios import strix_halo_node
from tests.support.cli import invoke, validate_report
from tests.support.terminal import run_on_pty

#: what a newer Python changes (the CLI's exit codes, texts and JSON schema): run on 3.12 and up too
pytestmark = pytest.mark.interpreter


def test_demo_json_validates_and_finds_the_demo_faults(cli, report_schema) -> None:
    result = cli("doctor", "--demo", "--json")
    report = result.json()
    validate_report(report, report_schema)
    assert report["site"] == "demo"
    assert [h["name"] for h in report["hosts"]] == ["node-a", "node-b"]
    assert all(h["reachable"] and h["source"] == "snapshot" for h in report["hosts"])
    assert report["hosts"][0]["facts"]["sku"] == "Ryzen AI Max+ 395"
    assert report["hosts"][0]["facts"]["gfx_target"] == "gfx1151"
    gtt = {c["host"]: c for c in report["checks"] if c["id"] == "node.gtt"}
    assert gtt["node-a"]["status"] == "pass"
    assert gtt["node-b"]["status"] == "warn"
    assert gtt["node-b"]["fix"]["id"] == "kernel.gtt_size"
    assert gtt["node-b"]["fix"]["reboot"] is True
    assert sum(report["summary"].values()) == len(report["checks"])
    assert result.rc == (1 if report["summary"]["fail"] else 0)


def test_strict_turns_warnings_into_exit_1(cli) -> None:
    relaxed = cli("doctor", "--demo", "--only", "node.gtt")
    strict = cli("doctor", "--demo", "--only", "node.gtt", "--strict")
    assert relaxed.rc == 0
    assert strict.rc == 1
    assert "WARN" in strict.stdout and "node-b" in strict.stdout


def test_only_and_skip_select_checks(cli) -> None:
    only = cli("doctor", "--demo", "--json", "--only", "node.cpu_is_gone,node.gtt")
    assert only.rc == 2
    assert "unknown check id 'node.cpu_is_gone'" in only.stderr
    only = cli("doctor", "--demo", "--json", "--only", "node.gtt").json()
    assert {c["id"] for c in only["checks"]} == {"node.gtt"}
    skip = cli("doctor", "--demo", "--json", "--skip", "node.gtt").json()
    assert "node.gtt" not in {c["id"] for c in skip["checks"]}
    area = cli("doctor", "--demo", "--json", "--only", "node").json()
    assert {c["id"] for c in area["checks"]} >= {"node.gtt", "node.strix_halo", "node.igpu"}


def test_unknown_check_id_suggests_the_right_one(cli, report_schema) -> None:
    result = cli("doctor", "--demo", "--only", "node.gt", "--json")
    assert result.rc == 2
    assert "did you mean node.gtt" in result.stderr
    validate_report(result.json(), report_schema)


def test_list_checks_names_every_check(cli) -> None:
    from checks import ALL

    text = cli("doctor", "--list-checks")
    assert text.rc == 0
    for check in ALL:
        assert check.id in text.stdout
    rows = cli("doctor", "--list-checks", "--json").json()
    assert [r["id"] for r in rows] == [c.id for c in ALL]


def test_healthy_nodes_get_one_quiet_line(cli, snapshot_of) -> None:
    a = snapshot_of(strix_halo_node("strix-a"))
    b = snapshot_of(strix_halo_node("strix-b"))
    result = cli("doctor", "--snapshot", str(a), "--snapshot", str(b), "--only", "node")
    assert result.rc == 0, result.stdout
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1
    assert "checks passed on 2 nodes" in lines[0]
    assert "\x1b[" not in result.stdout  # not a terminal: no colour


def test_snapshot_names_come_from_their_hosts_and_never_clash(cli, snapshot_of) -> None:
    a = snapshot_of(strix_halo_node("strix-a"))
    again = snapshot_of(strix_halo_node("strix-a"))
    report = cli("doctor", "--snapshot", str(a), "--snapshot", str(again), "--json").json()
    assert [h["name"] for h in report["hosts"]] == ["strix-a", "strix-a-2"]


def test_colour_only_on_a_terminal_and_never_with_no_color() -> None:
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    env["TERM"] = "xterm-256color"
    assert "\x1b[33mWARN" in run_on_pty(["doctor", "--demo"], env)
    assert "\x1b[" not in run_on_pty(["doctor", "--demo"], {**env, "NO_COLOR": "1"})


def test_bad_snapshot_is_exit_2_with_a_clear_message(cli, tmp_path: Path, report_schema) -> None:
    broken = tmp_path / "broken.tar.gz"
    broken.write_bytes(b"\x1f\x8b\x08\x00garbage")
    result = cli("doctor", "--snapshot", str(broken), "--json")
    assert result.rc == 2
    assert "not a readable snapshot archive" in result.stderr
    assert "Traceback" not in result.stderr
    validate_report(result.json(), report_schema)
    not_one = tmp_path / "plain"
    not_one.mkdir()
    result = cli("doctor", "--snapshot", str(not_one))
    assert result.rc == 2
    assert f"{not_one}: not a snapshot (no meta.json" in result.stderr


def test_demo_and_site_are_exclusive(cli, tmp_path: Path) -> None:
    result = cli("doctor", "--demo", "--site", str(tmp_path / "x.yaml"))
    assert result.rc == 2
    assert "not allowed with argument" in result.stderr


def test_doctor_does_not_import_textual_or_paramiko() -> None:
    code = (
        "import sys, io, contextlib\n"
        "from strixwizard.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['doctor', '--demo', '--json'])\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('textual', 'paramiko', 'pyroute2', 'pyverbs', 'jsonschema'))\n"
        "print(heavy)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=60)
    assert done.stdout.strip() == "[]"


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _site(tmp_path: Path, snapshot: Path | None) -> Path:
    """A site with one node on a closed loopback port, and `snapshot` as a second node."""
    text = (f"site: t\nnodes:\n  - name: down\n    host: 127.0.0.1\n    port: {_closed_port()}\n"
            + (f"  - name: up\n    snapshot: {snapshot}\n" if snapshot else "")
            + f"ssh:\n  known_hosts: {tmp_path / 'known_hosts'}\n  connect_timeout: 5\n")
    path = tmp_path / "site.yaml"
    path.write_text(text)
    return path


def test_nothing_reachable_is_no_verdict_with_the_reason(cli, tmp_path: Path, report_schema) -> None:
    site = _site(tmp_path, None)
    result = cli("doctor", "--site", str(site), "--json")
    assert result.rc == 2
    report = result.json()
    validate_report(report, report_schema)
    assert report["status"] == "error" and report["unreachable"] == ["down"]
    assert report["error"].startswith("no node could be reached (down: cannot connect to 127.0.0.1")
    assert report["hosts"][0]["reachable"] is False and report["hosts"][0]["error"]
    text = cli("doctor", "--site", str(site))
    assert text.rc == 2 and "no node could be reached" in text.stdout
    assert "1 of 1 node unreachable" in text.stdout and "Traceback" not in text.stderr


def test_an_unreachable_node_makes_the_run_an_error_unless_allowed(cli, tmp_path: Path, snapshot_of,
                                                                   report_schema) -> None:
    site = _site(tmp_path, snapshot_of(strix_halo_node("strix-a")))
    gate = cli("doctor", "--site", str(site), "--only", "node.strix_halo", "--json")
    assert gate.rc == 1
    report = gate.json()
    validate_report(report, report_schema)
    assert report["status"] == "error" and "error" not in report
    assert report["unreachable"] == ["down"] and report["allow_unreachable"] is False
    assert [c["status"] for c in report["checks"]] == ["pass"]
    down = next(h for h in report["hosts"] if h["name"] == "down")
    assert down["reachable"] is False and "cannot connect" in down["error"]
    allowed = cli("doctor", "--site", str(site), "--only", "node.strix_halo", "--json",
                  "--allow-unreachable")
    assert allowed.rc == 0
    assert allowed.json()["status"] == "pass" and allowed.json()["allow_unreachable"] is True
    validate_report(allowed.json(), report_schema)
    text = cli("doctor", "--site", str(site), "--only", "node.strix_halo")
    summary = [line for line in text.stdout.splitlines() if "passed" in line]
    assert text.rc == 1 and summary and "1 of 2 nodes unreachable" in summary[-1]
    assert "not judged: down" in text.stdout and "--allow-unreachable" in text.stdout
    relaxed = cli("doctor", "--site", str(site), "--only", "node.strix_halo", "--allow-unreachable")
    assert relaxed.rc == 0 and "1 of 2 nodes unreachable, allowed" in relaxed.stdout


def test_a_run_that_judges_no_check_is_no_verdict(cli, report_schema) -> None:
    from checks import ALL

    areas = sorted({c.id.split(".")[0] for c in ALL})
    skipped = [arg for area in areas for arg in ("--skip", area)]
    result = cli("doctor", "--demo", "--json", *skipped)
    assert result.rc == 2
    report = result.json()
    validate_report(report, report_schema)
    assert report["status"] == "error" and report["checks"] == []
    assert "no check was judged" in report["error"]
    text = cli("doctor", "--demo", *skipped)
    assert text.rc == 2 and "no check was judged" in text.stdout and "no verdict" in text.stdout


def test_only_or_skip_naming_nothing_is_a_usage_error(cli, report_schema) -> None:
    for flag, value in (("--only", ""), ("--only", ",,,"), ("--skip", ""), ("--skip", " , ")):
        result = cli("doctor", "--demo", flag, value)
        assert result.rc == 2, (flag, value)
        assert result.stderr.strip() == (f"strixwizard: error: {flag} {value!r} names no check "
                                         "(`strixwizard doctor --list-checks` lists them)")
        as_json = cli("doctor", "--demo", "--json", flag, value)
        assert as_json.rc == 2 and as_json.json()["status"] == "error"
        validate_report(as_json.json(), report_schema)


def test_an_unusable_journal_dir_is_one_line(cli, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    for command in (["fix", "--demo", "--apply", "--yes"], ["deploy", "--demo", "--apply", "--yes"]):
        result = cli(*command, "--journal-dir", str(blocker / "journal"))
        assert result.rc == 2, result.stderr
        assert result.stderr.strip() == (f"strixwizard: error: --journal-dir {blocker / 'journal'}: "
                                         f"cannot write there: {blocker} is not a folder")
    result = cli("fix", "--demo", "--apply", "--yes", "--journal-dir", str(tmp_path / "j"),
                 "--dry-run-dir", str(blocker / "dry"))
    assert result.rc == 2 and "--dry-run-dir" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "j").exists()  # refused before anything was written


@pytest.mark.parametrize("host", ["x\n\x1b]0;PWNED\x07[/]", "../../etc", "a b"])
def test_a_plain_snapshots_host_is_a_node_name_only_when_it_is_one(tmp_path: Path, host: str) -> None:
    from tests.support.hostile.bundles import hostile_snapshot

    path = hostile_snapshot("node-a", tmp_path, "6.18.5", "4.91", host=host)
    document = invoke("doctor", "--json", "--snapshot", str(path)).json()
    assert [h["name"] for h in document["hosts"]] == ["node-a"]  # the snapshot's file name

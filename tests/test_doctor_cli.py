"""`strixwizard doctor` as a user runs it: output, JSON contract and exit codes."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

from strixwizard.demo.scenarios import strix_halo_node
from tests.conftest import validate_report


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


def run_on_pty(args: list[str], env: dict[str, str] | None = None) -> str:
    """Run the CLI with stdout and stderr on a pseudo-terminal; return what it showed."""
    if env is None:
        env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
        env["TERM"] = "xterm-256color"
    controller, terminal = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "strixwizard", *args],
        stdout=terminal, stderr=terminal, stdin=subprocess.DEVNULL, env=env,
    )
    os.close(terminal)
    chunks = []
    while True:
        try:
            chunk = os.read(controller, 4096)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    process.wait(timeout=60)
    os.close(controller)
    return b"".join(chunks).decode()


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
        "from strixwizard.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['doctor', '--demo', '--json'])\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('textual', 'paramiko', 'pyroute2', 'pyverbs', 'jsonschema'))\n"
        "print(heavy)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=60)
    assert done.stdout.strip() == "[]"

"""`deploy --stack llama-rpc --persist` on the namespace lab: the units are written through the
real SSH executor and journal into each lab node's own directory (/root/systemd-system, which
is the node's private home for its SSH sessions; the lab has no private /etc), enabled, seen
as converged on the next plan, and disabled and removed by the rollback, head first.

systemd itself does not run inside the lab namespaces (they share this machine's init), so
`systemctl` here is a STAND-IN (first on the lab sessions' PATH) that records its argv and
keeps enabled/active state per unit under $HOME, and whose `enable` refuses a unit file that
is not in the unit directory. What is proved: the files, the journal, the commands and the
rollback. Not proved here: systemd starting the programs (the unit text is checked by
`systemd-analyze verify` in tests/test_deploy_llama_persist.py)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli import CliResult, run_cli
from tests.support.lab import Lab, LabHost, lab_fixture

persistlab2 = lab_fixture(2, name="persistlab2")
UNIT_DIR = "/root/systemd-system"  # per lab host: HOST.home/systemd-system
UNITS = ("strixwizard-llama-rpc.service", "strixwizard-llama-server.service")


def systemctl_stand_in(host: LabHost) -> str:
    units = host.home / "systemd-system"
    return f"""#!/bin/sh
# STAND-IN for systemctl (systemd does not run in the lab namespaces): records its argv, keeps
# enabled/active state per unit, refuses to enable a unit whose file is not in {units}.
state="$HOME/.systemctl-stand-in"; mkdir -p "$state"
python3 -c 'import json, sys; print(json.dumps(sys.argv[1:]))' "$@" >> "$state/calls.log"
case "$1" in
  daemon-reload) exit 0 ;;
  is-active) [ -e "$state/${{3:-$2}}.active" ]; exit $? ;;
  enable)
    [ -f "{units}/$3" ] || {{ echo "Failed to enable unit: Unit file $3 does not exist." >&2; exit 1; }}
    mkdir -p "{units}/multi-user.target.wants"
    ln -sf "../$3" "{units}/multi-user.target.wants/$3"; touch "$state/$3.active"; exit 0 ;;
  disable) rm -f "{units}/multi-user.target.wants/$3" "$state/$3.active"; exit 0 ;;
esac
echo "stand-in systemctl: $1 not supported" >&2; exit 1
"""


def calls(host: LabHost) -> list[list[str]]:
    path = host.home / ".systemctl-stand-in" / "calls.log"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.fixture
def lab(persistlab2: Lab) -> Iterator[Lab]:
    for host in persistlab2.hosts:
        for path in host.bin_dir.glob("*"):
            path.unlink()
        host.stand_in("systemctl", systemctl_stand_in(host))
        (host.home / "systemd-system").mkdir(exist_ok=True)
        # never the machine's own systemctl: the lab sessions must find the stand-in first
        found = subprocess.run(persistlab2.ssh_argv(host, "command -v systemctl"),
                               capture_output=True, text=True, timeout=30, check=True)
        assert found.stdout.strip() == str(host.bin_dir / "systemctl")
    yield persistlab2
    for host in persistlab2.hosts:
        for path in sorted((host.home / "systemd-system").rglob("*"), reverse=True):
            path.rmdir() if path.is_dir() and not path.is_symlink() else path.unlink()
        for path in (host.home / ".systemctl-stand-in").glob("*"):
            path.unlink()


def deploy(site: Path, tmp: Path, *args: str) -> CliResult:
    return run_cli("deploy", "--site", str(site), "--stack", "llama-rpc", "--transport", "tcp",
                   "--persist", "--unit-dir", UNIT_DIR, "--llama-run-dir", "/root/llama-run",
                   "--node-journal-dir", "/root/strixwizard-journal", *args,
                   env={"XDG_STATE_HOME": str(tmp / "state")}, timeout=120)


def test_units_written_enabled_converged_then_disabled_and_removed(lab: Lab, tmp_path: Path) -> None:
    head, worker = lab.hosts
    site = lab.write_site_yaml(tmp_path / "lab.yaml")
    applied = deploy(site, tmp_path, "--gguf", "/root/tiny.gguf", "--rpc-on-head", "--apply",
                     "--yes", "--no-smoke", "--json")
    assert applied.rc == 0, applied.stdout + applied.stderr
    doc = applied.json()
    assert doc["apply"]["status"] == "applied"
    units = {h.name: sorted(p.name for p in (h.home / "systemd-system").glob("*.service"))
             for h in lab.hosts}
    assert units == {"node0": sorted(UNITS), "node1": ["strixwizard-llama-rpc.service"]}
    text = (worker.home / "systemd-system" / UNITS[0]).read_text()
    assert f"ExecStart=ggml-rpc-server -H {worker.fabric_addr} -p 50052 -c\n" in text
    assert "Environment=GGML_RPC_NO_RDMA=1\n" in text
    assert "StandardOutput=truncate:/root/llama-run/ggml-rpc-server.log\n" in text
    assert (worker.home / "systemd-system" / "multi-user.target.wants" / UNITS[0]).is_symlink()
    changes = [c for c in calls(worker) if c[0] != "is-active"]  # reads: observe, drift check
    assert changes == [["daemon-reload"], ["enable", "--now", UNITS[0]]]
    # the journal holds exactly these steps, on this machine and on the node
    steps = {n["node"]: [s["target"] for s in n["steps"]] for n in doc["apply"]["nodes"]}
    stamps = [f"/root/llama-run/.{unit}.reload" for unit in UNITS]
    assert steps["node1"] == [stamps[0], f"{UNIT_DIR}/{UNITS[0]}", UNITS[0]]
    assert steps["node0"] == [stamps[0], f"{UNIT_DIR}/{UNITS[0]}", UNITS[0],
                              stamps[1], f"{UNIT_DIR}/{UNITS[1]}", UNITS[1]]
    on_node = worker.home / "strixwizard-journal"
    assert any(UNITS[0] in p.read_text() for p in on_node.rglob("*") if p.is_file())

    again = deploy(site, tmp_path, "--gguf", "/root/tiny.gguf", "--rpc-on-head", "--json")
    assert again.rc == 0 and again.json()["plan"]["summary"]["changes"] == 0

    rolled = deploy(site, tmp_path, "--rollback", doc["apply"]["run_id"], "--yes", "--json")
    assert rolled.rc == 0, rolled.stdout + rolled.stderr
    assert [n["node"] for n in rolled.json()["rollback"]["nodes"]] == ["node0", "node1"]
    disabled = [c for c in calls(head) if c[0] == "disable"]
    assert disabled == [["disable", "--now", UNITS[1]], ["disable", "--now", UNITS[0]]]
    # each unit's rollback ends with a daemon-reload, after its file is gone
    assert [c for c in calls(worker) if c[0] != "is-active"][-2:] == [
        ["disable", "--now", UNITS[0]], ["daemon-reload"]]
    for host in lab.hosts:
        assert not list((host.home / "systemd-system").glob("*.service"))
        assert not list((host.home / "systemd-system").glob("*.wants/*"))

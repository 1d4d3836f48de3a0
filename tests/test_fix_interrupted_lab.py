"""kill -9 of `fix --apply` at step boundaries and in the middle of a step, on the namespace
lab with real sshd: `fix --rollback` afterwards restores every node's MTU and says what it
found. A stand-in `ip` on one node blocks the MTU change at a known point (before or after
the change lands) and touches a marker; the test kills the head process there."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.cli import run_cli
from tests.support.lab import Lab, LabHost, lab_fixture

crashlab = lab_fixture(2, name="crashlab")
NODE_JOURNAL = "/root/strixwizard-journal"
PAUSE_S = 2  # how long the stand-in blocks; the node's step runner ends after it
REAL_IP = "/usr/sbin/ip"


def _reset(lab: Lab) -> None:
    for host in lab.hosts:
        for stand_in in host.bin_dir.glob("*"):
            stand_in.unlink()
        for marker in host.home.glob("blocked-*"):  # marker and call count
            marker.unlink()
        host.run_in_ns(["ip", "link", "set", "dev", "fab0", "mtu", "1500"], check=True)


@pytest.fixture
def lab(crashlab: Lab):
    _reset(crashlab)
    yield crashlab
    _reset(crashlab)


def _block(host: LabHost, match: str, landed: bool, nth: int) -> Path:
    """`ip` that blocks on its `nth` call with `match` arguments, after (landed) or instead of
    the real change."""
    marker = host.home / "blocked-ip"
    run = f"{REAL_IP} \"$@\"; " if landed else ""
    host.stand_in("ip", f'#!/bin/sh\ncase "$*" in\n*{match}*)\n'
                  '  n=$(($(cat /root/blocked-count 2>/dev/null || echo 0) + 1))\n'
                  '  echo $n > /root/blocked-count\n'
                  f'  if [ $n -ge {nth} ]; then {run}touch /root/blocked-ip; sleep {PAUSE_S}; '
                  f'exit 1; fi;;\nesac\nexec {REAL_IP} "$@"\n')
    return marker


def _killed_apply(lab: Lab, site: Path, state: Path, marker: Path) -> None:
    argv = [sys.executable, "-m", "strixwizard", "fix", "--site", str(site), "--only", "net.mtu",
            "--runtime-only", "--node-journal-dir", NODE_JOURNAL, "--apply", "--yes", "--json"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "XDG_STATE_HOME": str(state)})
    try:
        deadline = time.monotonic() + 90
        while not marker.exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"the apply never reached the kill point: {proc.stderr}")
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
        assert proc.stderr is not None
        proc.stderr.close()
    for host in lab.hosts:
        (host.bin_dir / "ip").unlink(missing_ok=True)
    time.sleep(PAUSE_S + 1)  # the nodes' step runners finish the blocked command and end


# (host index of the stand-in, arguments it blocks on, on which call, change landed first,
# MTUs at the kill); the probe before the plan runs `ip -j addr` once, verification again
KILL_POINTS = {
    "node0-before-change": (0, '" mtu "', 1, False, [1500, 1500]),
    "node0-after-change": (0, '" mtu "', 1, True, [9000, 1500]),
    "node1-before-change": (1, '" mtu "', 1, False, [9000, 1500]),
    "node1-after-change": (1, '" mtu "', 1, True, [9000, 9000]),
    "after-the-last-step": (1, '"-j addr"', 2, False, [9000, 9000]),
}


@pytest.mark.parametrize("point", list(KILL_POINTS))
def test_kill_minus_9_then_rollback_restores_every_node(lab: Lab, tmp_path: Path,
                                                        point: str) -> None:
    index, match, nth, landed, at_kill = KILL_POINTS[point]
    site = lab.write_site_yaml(tmp_path / "lab.yaml")
    state = tmp_path / "state"
    marker = _block(lab.hosts[index], match, landed, nth)
    _killed_apply(lab, site, state, marker)
    assert [h.mtu() for h in lab.hosts] == at_kill  # the kill left the cluster half changed
    (run,) = list((state / "strixwizard" / "journal").iterdir())
    head = {p.stem: json.loads(p.read_text()) for p in run.glob("*.json")}
    statuses = [r["status"] for n in ("node0", "node1") for r in head[n]["steps"]]
    assert set(statuses) <= {"pending", "applying", "applied"}
    rolled = run_cli("fix", "--rollback", "--yes", "--node-journal-dir", NODE_JOURNAL,
                     env={"XDG_STATE_HOME": str(state)}, timeout=120)
    assert rolled.rc == 0, rolled.stdout + rolled.stderr
    assert [h.mtu() for h in lab.hosts] == [1500, 1500], rolled.stdout
    assert "done" in rolled.stdout.splitlines()[0]
    if "applying" in statuses:
        assert "was in progress when the run stopped: found" in rolled.stdout, rolled.stdout
        assert ("it had landed" if landed else "it had not landed") in rolled.stdout
    after = {p.stem: json.loads(p.read_text()) for p in run.glob("*.json")}
    for name, journal in after.items():
        changed = [r["status"] for r in journal["steps"] if r["status"] != "pending"]
        assert set(changed) <= {"rolled-back"}, (name, journal["steps"])

"""`fix --apply` and `--rollback` interrupted as operators really meet it, on the namespace lab
with real sshd, during a two-node MTU fix: the head's disk filling (its state directory is a
1 MiB tmpfs mounted under the test's temp dir, filled with a real file while the run waits at a
chosen step boundary), SIGINT, SIGTERM, SIGHUP delivered at each step boundary or during a
rollback, and kill -9 at step boundaries and in the middle of a step. Each run must end with
both ends of the link equal, each node's state printed and the exact next command; after a kill
-9, `fix --rollback` restores every node's MTU and says what it found.

The step boundaries are reached with a stand-in `ip` on one node (in the node's own bin
directory, first on its PATH): on its nth call with the matching arguments it touches a
marker and waits until the test says go (or, for a kill, blocks before or after the change
lands), then runs the real `ip`."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli import CliResult, run_cli
from tests.support.disk import fill
from tests.support.lab import Lab, LabHost, lab_fixture, reset_hosts

interruptlab = lab_fixture(2, name="interruptlab")
NODE_JOURNAL = "/root/strixwizard-journal"
REAL_IP = "/usr/sbin/ip"
WAIT_S = 30  # how long a stand-in waits for the test (bounded)




@pytest.fixture
def lab(interruptlab: Lab) -> Iterator[Lab]:
    reset_hosts(interruptlab)
    yield interruptlab
    reset_hosts(interruptlab)






def hold_at(host: LabHost, match: str, nth: int) -> tuple[Path, Path]:
    """A stand-in `ip` that waits on its `nth` call whose arguments contain `match`."""
    marker, go = host.home / "fault-reached", host.home / "fault-go"
    host.stand_in("ip", f'#!/bin/sh\ncase "$*" in\n*{match}*)\n'
                  '  n=$(($(cat /root/fault-count 2>/dev/null || echo 0) + 1))\n'
                  '  echo $n > /root/fault-count\n'
                  f'  if [ $n -eq {nth} ]; then touch /root/fault-reached; i=0; '
                  f'while [ ! -e /root/fault-go ] && [ $i -lt {WAIT_S * 10} ]; do sleep 0.1; '
                  'i=$((i+1)); done; fi;;\n'
                  f'esac\nexec {REAL_IP} "$@"\n')
    return marker, go


def fix_argv(site: Path) -> list[str]:
    return [sys.executable, "-m", "strixwizard", "fix", "--site", str(site), "--only", "net.mtu",
            "--runtime-only", "--node-journal-dir", NODE_JOURNAL, "--apply", "--yes"]


@pytest.fixture
def started() -> Iterator[list[subprocess.Popen[str]]]:
    """The runs a test started: killed (by their own pid) if the test fails midway."""
    procs: list[subprocess.Popen[str]] = []
    yield procs
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=30)


def start(site: Path, state: Path, procs: list[subprocess.Popen[str]]) -> subprocess.Popen[str]:
    proc = subprocess.Popen(fix_argv(site), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True,
                            env={**os.environ, "XDG_STATE_HOME": str(state)})
    procs.append(proc)
    return proc


def wait_for(marker: Path, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 90
    while not marker.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            out, err = proc.communicate(timeout=30)
            raise AssertionError(f"the run never reached the fault point:\n{out}\n{err}")
        time.sleep(0.02)


# (host index, arguments, nth call): the probe before the plan runs `ip -j addr` once on each
# node (verification a second time); the MTU change is the one `mtu` call of each node
BOUNDARIES = {
    "before-the-first-step": (1, '"-j addr"', 1),
    "node0-step-in-flight": (0, '" mtu "', 1),
    "node1-step-in-flight": (1, '" mtu "', 1),
    "after-the-last-step": (1, '"-j addr"', 2),
}


@pytest.mark.parametrize("point", list(BOUNDARIES))
def test_head_disk_full_stops_the_run_and_leaves_the_link_whole(
        lab: Lab, tmp_path: Path, small_state: Path, started: list[subprocess.Popen[str]],
        point: str) -> None:
    index, match, nth = BOUNDARIES[point]
    site = lab.write_site_yaml(tmp_path / "lab.yaml")
    marker, go = hold_at(lab.hosts[index], match, nth)
    proc = start(site, small_state, started)
    wait_for(marker, proc)
    fill(small_state)
    go.touch()
    out, err = proc.communicate(timeout=120)
    mtus = [h.mtu() for h in lab.hosts]
    assert mtus[0] == mtus[1], (mtus, out, err)
    assert "Traceback" not in err and "internal error" not in err, err
    if point == "after-the-last-step":  # every journal save was done: the run is whole
        assert mtus == [9000, 9000] and proc.returncode == 0, out + err
        return
    assert mtus == [1500, 1500], out + err
    assert proc.returncode == 1, (proc.returncode, out, err)
    if point == "before-the-first-step":
        assert "nothing was changed on any node" in out, out
        assert "No space left on device (errno 28 ENOSPC)" in out, out
        return
    assert "Run " in out and "stopped" in out, out
    assert "The head's journal could not be written" in out, out
    assert "No space left on device (errno 28 ENOSPC)" in out, out
    state_at = out.index("State of each node:")
    assert "node0: " in out[state_at:] and "node1: " in out[state_at:], out
    rolled = run_printed_rollback(out, small_state, free=small_state / "filler")
    assert rolled.rc == 0, rolled.stdout + rolled.stderr
    assert [h.mtu() for h in lab.hosts] == [1500, 1500]
    assert_link_whole(site)


def run_printed_rollback(out: str, state: Path, free: Path | None = None) -> CliResult:
    """The output's last line is the exact rollback command: run it as printed (after freeing
    the head's space)."""
    last = out.strip().splitlines()[-1]
    prefix = "Undo this run with: strixwizard "
    assert last.startswith(prefix) and " --rollback " in last, last
    if free is not None:
        free.unlink()
    return run_cli(*shlex.split(last[len(prefix):]), "--yes",
                   env={"XDG_STATE_HOME": str(state)}, timeout=120)


def assert_link_whole(site: Path) -> None:
    """`doctor` on the lab says both ends of the link have the same MTU (it warns, not fails,
    when that MTU is not the site's: a run rolled back leaves both at 1500)."""
    doctor = run_cli("doctor", "--site", str(site), "--only", "link.mtu", "--json", timeout=120)
    (link_mtu,) = [c for c in json.loads(doctor.stdout)["checks"] if c["id"] == "link.mtu"]
    assert link_mtu["status"] in ("pass", "warn"), link_mtu
    assert link_mtu["status"] == "pass" or link_mtu["expected"].startswith("equal on both ends, 9000")


SIGNALS = {"SIGINT": (signal.SIGINT, 130), "SIGTERM": (signal.SIGTERM, 143),
           "SIGHUP": (signal.SIGHUP, 129)}


@pytest.mark.parametrize("point", list(BOUNDARIES))
@pytest.mark.parametrize("name", list(SIGNALS))
def test_a_signal_at_a_step_boundary_ends_a_cancelled_run_with_the_link_whole(
        lab: Lab, tmp_path: Path, started: list[subprocess.Popen[str]], point: str,
        name: str) -> None:
    signum, status = SIGNALS[name]
    index, match, nth = BOUNDARIES[point]
    site = lab.write_site_yaml(tmp_path / "lab.yaml")
    state = tmp_path / "state"
    marker, go = hold_at(lab.hosts[index], match, nth)
    proc = start(site, state, started)
    wait_for(marker, proc)
    os.kill(proc.pid, signum)
    time.sleep(0.3)  # the signal is recorded while the step is in flight
    go.touch()
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == status, (proc.returncode, out, err)
    assert "Traceback" not in err, err
    assert_link_whole(site)  # doctor on the lab: both ends of the link equal
    if point == "after-the-last-step":  # every step was done: the run is whole, and says so
        assert [h.mtu() for h in lab.hosts] == [9000, 9000], out + err
        assert out.strip().splitlines()[-1].startswith("Undo this run with: strixwizard fix ")
        return
    assert [h.mtu() for h in lab.hosts] == [1500, 1500], out + err
    if point == "before-the-first-step":  # still reading the nodes: nothing to finish
        assert f"strixwizard: interrupted ({name} received)" in err, err
    else:
        assert f"cancelled by {name}" in out, out
        assert "State of each node:" in out, out
        assert out.strip().splitlines()[-1].startswith("Undo this run with: strixwizard fix ")
        (run,) = [p for p in (state / "strixwizard" / "journal").iterdir() if p.name != "locks"]
        assert f"cancelled by {name}" in (run / "output.txt").read_text()
        for journal in run.glob("*.json"):
            steps = json.loads(journal.read_text())["steps"]
            assert {s["status"] for s in steps} <= {"pending", "rolled-back"}, steps


def test_a_second_signal_stops_at_once_and_still_prints_the_state(
        lab: Lab, tmp_path: Path, started: list[subprocess.Popen[str]]) -> None:
    site = lab.write_site_yaml(tmp_path / "lab.yaml")
    state = tmp_path / "state"
    marker, go = hold_at(lab.hosts[1], '" mtu "', 1)
    proc = start(site, state, started)
    wait_for(marker, proc)
    os.kill(proc.pid, signal.SIGTERM)
    time.sleep(0.3)
    os.kill(proc.pid, signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    go.touch()
    assert proc.returncode == 143, (proc.returncode, out, err)
    assert "Traceback" not in err, err
    assert "interrupted" in out and "stopped at once" in out, out
    assert "node1: interrupted: stopped at once during" in out, out
    time.sleep(1)  # the node's blocked `ip` finishes
    retry = run_cli(*fix_argv(site)[3:], env={"XDG_STATE_HOME": str(state)}, timeout=120)
    assert retry.rc == 2 and "did not finish (node1: interrupted during" in retry.stderr, \
        retry.stdout + retry.stderr  # one unfinished run at a time
    assert "strixwizard fix --rollback " in retry.stderr
    rolled = run_printed_rollback(out, state)
    assert rolled.rc == 0, rolled.stdout + rolled.stderr
    assert [h.mtu() for h in lab.hosts] == [1500, 1500]


@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP"])
def test_a_signal_during_rollback_finishes_the_link_it_began(
        lab: Lab, tmp_path: Path, name: str) -> None:
    signum, status = SIGNALS[name]
    site = lab.write_site_yaml(tmp_path / "lab.yaml")
    state = tmp_path / "state"
    applied = run_cli(*fix_argv(site)[3:], env={"XDG_STATE_HOME": str(state)}, timeout=120)
    assert applied.rc == 0 and [h.mtu() for h in lab.hosts] == [9000, 9000], applied.stdout
    marker, go = hold_at(lab.hosts[0], '" mtu "', 1)
    proc = subprocess.Popen([sys.executable, "-m", "strixwizard", "fix", "--rollback", "--yes"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL,
                            env={**os.environ, "XDG_STATE_HOME": str(state)})
    try:
        wait_for(marker, proc)
        os.kill(proc.pid, signum)
        time.sleep(0.3)
        go.touch()
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=30)
    assert proc.returncode == status, (proc.returncode, out, err)
    assert [h.mtu() for h in lab.hosts] == [1500, 1500], out + err  # node1's end too
    assert f"cancelled at a step boundary (every link begun has both ends restored) by {name}" \
        in out, out
    assert out.strip().splitlines()[-1].startswith("Finish it with: strixwizard fix --rollback ")
    assert_link_whole(site)


def test_rollback_on_a_full_head_disk_is_refused_in_one_line_then_restores_once_freed(
        lab: Lab, tmp_path: Path, small_state: Path) -> None:
    """The head's site lock cannot record its holder on a full disk: `--rollback` says so in
    one line and changes nothing (as `--apply` does); with space freed it restores every value."""
    site = lab.write_site_yaml(tmp_path / "lab.yaml")
    applied = run_cli(*fix_argv(site)[3:], env={"XDG_STATE_HOME": str(small_state)}, timeout=120)
    assert applied.rc == 0 and [h.mtu() for h in lab.hosts] == [9000, 9000], applied.stdout
    fill(small_state)
    refused = run_cli("fix", "--rollback", "--yes", env={"XDG_STATE_HOME": str(small_state)},
                      timeout=120)
    assert refused.rc == 2 and "Traceback" not in refused.stderr, refused.stderr
    (line,) = refused.stderr.strip().splitlines()
    assert "lab.lock: No space left on device" in line, line
    assert [h.mtu() for h in lab.hosts] == [9000, 9000]
    (small_state / "filler").unlink()
    rolled = run_cli("fix", "--rollback", "--yes", env={"XDG_STATE_HOME": str(small_state)},
                     timeout=120)
    assert rolled.rc == 0, rolled.stdout + rolled.stderr
    assert [h.mtu() for h in lab.hosts] == [1500, 1500]


# -- kill -9 of the head, then a rollback ----------------------------------------------------

crashlab = lab_fixture(2, name="crashlab")
PAUSE_S = 2  # how long the stand-in blocks; the node's step runner ends after it




@pytest.fixture
def killed_lab(crashlab: Lab):
    reset_hosts(crashlab, "blocked-*")
    yield crashlab
    reset_hosts(crashlab, "blocked-*")


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
def test_kill_minus_9_then_rollback_restores_every_node(killed_lab: Lab, tmp_path: Path,
                                                        point: str) -> None:
    index, match, nth, landed, at_kill = KILL_POINTS[point]
    site = killed_lab.write_site_yaml(tmp_path / "lab.yaml")
    state = tmp_path / "state"
    marker = _block(killed_lab.hosts[index], match, landed, nth)
    _killed_apply(killed_lab, site, state, marker)
    assert [h.mtu() for h in killed_lab.hosts] == at_kill  # the kill left the cluster half changed
    (run,) = list((state / "strixwizard" / "journal").iterdir())
    head = {p.stem: json.loads(p.read_text()) for p in run.glob("*.json")}
    statuses = [r["status"] for n in ("node0", "node1") for r in head[n]["steps"]]
    assert set(statuses) <= {"pending", "applying", "applied"}
    rolled = run_cli("fix", "--rollback", "--yes", "--node-journal-dir", NODE_JOURNAL,
                     env={"XDG_STATE_HOME": str(state)}, timeout=120)
    assert rolled.rc == 0, rolled.stdout + rolled.stderr
    assert [h.mtu() for h in killed_lab.hosts] == [1500, 1500], rolled.stdout
    assert "done" in rolled.stdout.splitlines()[0]
    if "applying" in statuses:
        assert "was in progress when the run stopped: found" in rolled.stdout, rolled.stdout
        assert ("it had landed" if landed else "it had not landed") in rolled.stdout
    after = {p.stem: json.loads(p.read_text()) for p in run.glob("*.json")}
    for name, journal in after.items():
        changed = [r["status"] for r in journal["steps"] if r["status"] != "pending"]
        assert set(changed) <= {"rolled-back"}, (name, journal["steps"])

"""One apply at a time, on the namespace lab with real sshd: while one `fix --apply` holds
the site (or a node), a second is refused at once with exit 2 naming the holder; a lock whose
run is gone is reported as stale and broken only with --break-lock."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from strixwizard.fixing.lock import LockHeld, site_lock
from strixwizard.onnode import ops
from tests.support.cli import run_cli
from tests.support.lab import Lab, lab_fixture, reset_hosts

locklab = lab_fixture(2, name="locklab")
NODE_JOURNAL = "/root/strixwizard-journal"
REAL_IP = "/usr/sbin/ip"




@pytest.fixture
def lab(locklab: Lab):
    reset_hosts(locklab, "slow-*")
    yield locklab
    reset_hosts(locklab, "slow-*")


def _fix(site: Path, state: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "strixwizard", "fix", "--site", str(site), "--only", "net.mtu",
            "--runtime-only", "--node-journal-dir", NODE_JOURNAL, *args]


def _start_slow_apply(lab: Lab, site: Path, state: Path, seconds: int = 4
                      ) -> subprocess.Popen[str]:
    """An apply that holds its locks while node0's MTU change takes a few seconds."""
    node0 = lab.hosts[0]
    node0.stand_in("ip", f'#!/bin/sh\ncase "$*" in\n*" mtu "*) touch /root/slow-started; '
                   f'sleep {seconds};;\nesac\nexec {REAL_IP} "$@"\n')
    proc = subprocess.Popen(_fix(site, state, "--apply", "--yes", "--json"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "XDG_STATE_HOME": str(state)})
    deadline = time.monotonic() + 90
    while not (node0.home / "slow-started").exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.02)
    return proc


@pytest.mark.parametrize("same_head_state", [True, False], ids=["site-lock", "node-lock"])
def test_second_apply_is_refused_naming_the_holder(lab: Lab, tmp_path: Path,
                                                   same_head_state: bool) -> None:
    site = lab.write_site_yaml(tmp_path / "lab.yaml")
    first_state = tmp_path / "state"
    first = _start_slow_apply(lab, site, first_state)
    # the same head (its site lock), or another head reaching the same nodes (their locks)
    second_state = first_state if same_head_state else tmp_path / "other-head"
    started = time.monotonic()
    second = run_cli("fix", "--site", str(site), "--only", "net.mtu", "--runtime-only",
                     "--node-journal-dir", NODE_JOURNAL, "--apply", "--yes",
                     env={"XDG_STATE_HOME": str(second_state)}, timeout=120)
    out, err = first.communicate(timeout=120)
    assert first.returncode == 0, out + err
    assert json.loads(out)["apply"]["status"] == "applied"
    assert second.rc == 2, second.stdout + second.stderr
    assert "is locked by `strixwizard fix --apply`" in second.stderr
    assert f"(pid {first.pid} on " in second.stderr and "started 20" in second.stderr
    assert ("site 'lab'" if same_head_state else "node node0") in second.stderr, second.stderr
    assert time.monotonic() - started < 30  # refused, not queued behind the first
    assert [h.mtu() for h in lab.hosts] == [9000, 9000]
    runs = list((second_state / "strixwizard" / "journal").glob("*/*.json"))
    assert len(runs) == (2 if same_head_state else 0)  # the refused run changed nothing


def test_second_run_is_refused_before_it_reads_a_node_or_asks(lab: Lab, tmp_path: Path) -> None:
    """The same head: the second `fix --apply` is refused before it collects anything (node1's
    ethtool, run only while collecting, is not called again), and `fix --rollback` of the
    running run is refused before its question."""
    site = lab.write_site_yaml(tmp_path / "lab.yaml")
    state = tmp_path / "state"
    node1 = lab.hosts[1]
    calls = node1.home / "slow-ethtool.calls"
    node1.stand_in("ethtool", f'#!/bin/sh\necho "$*" >> {calls}\nexec /usr/sbin/ethtool "$@"\n')
    first = _start_slow_apply(lab, site, state, seconds=10)
    collected = calls.read_text()
    assert collected  # the first run collected node1 through the stand-in
    env = {"XDG_STATE_HOME": str(state)}
    common = ("--site", str(site), "--only", "net.mtu", "--runtime-only", "--node-journal-dir",
              NODE_JOURNAL)
    started = time.monotonic()
    second = run_cli("fix", *common, "--apply", "--yes", env=env, timeout=120)
    rollback = run_cli("fix", "--site", str(site), "--node-journal-dir", NODE_JOURNAL,
                       "--rollback", "latest", env=env, timeout=120)
    took = time.monotonic() - started
    # still inside the first run's slow step: its verification (which reads node1) is to come
    read_since = calls.read_text()[len(collected):]
    assert first.poll() is None, "the first run ended too early for this test to tell"
    out, err = first.communicate(timeout=120)
    assert first.returncode == 0, out + err
    for refused in (second, rollback):
        assert refused.rc == 2, refused.stdout + refused.stderr
        assert "site 'lab'" in refused.stderr and f"(pid {first.pid} on " in refused.stderr
        assert "Roll back" not in refused.stdout + refused.stderr  # nothing was asked
    assert read_since == "", "the refused run read node1"
    assert took < 8, took
    assert [h.mtu() for h in lab.hosts] == [9000, 9000]


def test_stale_lock_is_reported_and_broken_only_with_the_flag(tmp_path: Path) -> None:
    store_root = tmp_path / "journal"
    lock = str(tmp_path / "locks" / "lab.lock")
    # a dead run's record in a lock still held (by a process that inherited it)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    holder = {"command": "fix --apply", "site": "lab", "pid": int(dead.stdout),
              "host": os.uname().nodename, "started": "2026-01-01T00:00:00+00:00"}
    keeper = subprocess.Popen(
        [sys.executable, "-c", f"import sys, json; sys.path.insert(0, {str(Path.cwd())!r})\n"
         "from strixwizard.onnode import ops\n"
         f"print(ops.handle({{'op': 'lock', 'path': {lock!r}, 'holder': json.loads("
         f"{json.dumps(json.dumps(holder))})}}), flush=True)\nsys.stdin.read()\n"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert keeper.stdout is not None and "'ok': True" in keeper.stdout.readline()
        with (pytest.raises(LockHeld, match=r"lock is stale; .*--break-lock") as refused,
              site_lock(store_root, "lab", "fix --apply")):
            pass
        assert refused.value.stale is True and f"pid {holder['pid']}" in str(refused.value)
        with site_lock(store_root, "lab", "fix --apply", break_stale=True) as mine:
            assert json.loads(Path(lock).read_text())["pid"] == mine["pid"] == os.getpid()
            # a live holder is never broken, flag or not (here from another thread)
            refused_again: list[BaseException] = []

            def other_run() -> None:
                try:
                    with site_lock(store_root, "lab", "fix --rollback", break_stale=True):
                        pass
                except LockHeld as error:
                    refused_again.append(error)

            thread = threading.Thread(target=other_run)
            thread.start()
            thread.join(30)
            assert len(refused_again) == 1 and "wait for it to finish" in str(refused_again[0])
        assert Path(lock).read_text() == ""  # released cleanly
    finally:
        keeper.communicate(input="", timeout=30)
    assert ops._LOCKS == {}

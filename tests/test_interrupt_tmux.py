"""Ctrl-C in a real terminal during `strixwizard test soak --demo` leaves nothing of the run.

(The demo's soak is what runs programs on this machine, on loopback: its latency, bandwidth and
RCCL are replayed from recordings and start none.)

The terminal sends SIGINT to its whole foreground process group: strixwizard and the
supervisors it started, not to the programs (each in a session of its own). Every process
of the run is recorded by PID (and start time, against PID reuse) and session while it runs;
after Ctrl-C none of them, and nothing in their sessions, may be left. Programs are found
under the pane's own process, never by name across the machine; nothing is signalled by the
test except through the terminal (tmux send-keys).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")


def _stat(pid: int) -> tuple[int, int, int, str] | None:
    """(parent, session, start time, state) of a process, or None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    return int(fields[1]), int(fields[3]), int(fields[19]), fields[0]


def _descendants(root: int) -> dict[int, tuple[int, int, str]]:
    """Every live process under `root`: pid -> (session, start time, command name)."""
    parents: dict[int, list[int]] = {}
    info: dict[int, tuple[int, int, str]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        stat = _stat(int(entry.name))
        if stat is None:
            continue
        try:
            name = (entry / "comm").read_text().strip()
        except OSError:
            continue
        parents.setdefault(stat[0], []).append(int(entry.name))
        info[int(entry.name)] = (stat[1], stat[2], name)
    found: dict[int, tuple[int, int, str]] = {}
    todo = [root]
    while todo:
        for child in parents.get(todo.pop(), []):
            if child in info and child not in found:
                found[child] = info[child]
                todo.append(child)
    return found


def _alive(pid: int, started: int) -> bool:
    stat = _stat(pid)
    return stat is not None and stat[2] == started and stat[3] != "Z"


def _in_sessions(sessions: set[int]) -> list[int]:
    left = []
    for entry in Path("/proc").iterdir():
        stat = _stat(int(entry.name)) if entry.name.isdigit() else None
        if stat is not None and stat[1] in sessions and stat[3] != "Z":
            left.append(int(entry.name))
    return left


class Tmux:
    """A tmux server of its own: its socket in the test's directory."""

    def __init__(self, socket: Path) -> None:
        self.socket = socket

    def __call__(self, *args: str) -> str:
        return subprocess.run(["tmux", "-S", str(self.socket), *args], capture_output=True, text=True,
                              timeout=10, check=True).stdout


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[Tmux]:
    socket = tmp_path / "tmux.sock"
    assert len(str(socket)) < 100, socket  # a Unix socket's path is short
    server = Tmux(socket)
    try:
        yield server
    finally:
        subprocess.run(["tmux", "-S", str(socket), "kill-server"], capture_output=True, timeout=10,
                       check=False)


def test_ctrl_c_in_the_terminal_during_test_soak_leaves_no_process(tmux: Tmux, tmp_path: Path) -> None:
    tmux("new-session", "-d", "-s", "hold", "sleep", "300")  # keeps the server when the run ends
    tmux("set-option", "-g", "remain-on-exit", "on")
    status = tmp_path / "status"
    command = (f"cd {ROOT} && XDG_STATE_HOME={tmp_path / 'state'} {sys.executable} -m strixwizard "
               f"test soak --demo --no-history --seconds 20 --bytes 1099511627776; echo $? > {status}")
    tmux("new-session", "-d", "-s", "run", "-x", "120", "-y", "30", command)
    pane = int(tmux("display-message", "-p", "-t", "run", "#{pane_pid}").strip())

    seen: dict[int, tuple[int, int, str]] = {}
    deadline = time.monotonic() + 60
    pane_session = (_stat(pane) or (0, 0, 0, ""))[1]

    def programs() -> set[int]:
        """The sessions of the run's programs (each in a session of its own, not the pane's)."""
        return {session for session, _, _ in seen.values() if session != pane_session}

    while time.monotonic() < deadline:
        seen.update(_descendants(pane))
        if len(programs()) >= 2:  # the soak's server and client
            break
        assert not status.exists(), tmux("capture-pane", "-p", "-t", "run")
        time.sleep(0.05)
    else:
        raise AssertionError("the soak never ran:\n" + tmux("capture-pane", "-p", "-t", "run"))
    time.sleep(0.5)  # as a user waits a moment before giving up
    seen.update(_descendants(pane))

    tmux("send-keys", "-t", "run", "C-c")  # the terminal's SIGINT: the foreground process group

    deadline = time.monotonic() + 20
    left: list[str] = []
    while time.monotonic() < deadline:
        left = [f"{pid} {name}" for pid, (_, started, name) in seen.items() if _alive(pid, started)]
        if not left and status.exists():
            break
        time.sleep(0.1)
    screen = tmux("capture-pane", "-p", "-t", "run")
    for pid, (_, started, _) in seen.items():  # a failing run must not leave them behind either
        if _alive(pid, started):
            os.kill(pid, signal.SIGKILL)  # a process this test started, by its PID
    assert not left, f"left running after Ctrl-C: {left}\n{screen}"
    sessions = {session for session, _, _ in seen.values()}
    assert not _in_sessions(sessions), f"processes left in the run's sessions\n{screen}"
    assert status.read_text().strip() == "130", screen
    flat = screen.replace("\n", "")  # the pane wraps long lines
    assert "cancelled by SIGINT" in flat or "interrupted" in flat, screen

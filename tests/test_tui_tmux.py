"""End to end: the real `strixwizard --demo` in a tmux session, driven by keys, read off the screen."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


class Tmux:
    def __init__(self, name: str) -> None:
        self.name = name

    def run(self, *args: str) -> str:
        done = subprocess.run(["tmux", *args], capture_output=True, text=True, timeout=10, check=True)
        return done.stdout

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", self.name)

    def alive(self) -> bool:
        done = subprocess.run(["tmux", "has-session", "-t", self.name], capture_output=True, timeout=10,
                              check=False)
        return done.returncode == 0

    def keys(self, *keys: str) -> None:
        self.run("send-keys", "-t", self.name, *keys)

    def wait_for(self, text: str, timeout: float = 30.0) -> str:
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.screen()
            if text in screen:
                return screen
            time.sleep(0.1)
        raise AssertionError(f"{text!r} not on screen after {timeout} s:\n{screen}")


@pytest.fixture
def state(tmp_path: Path) -> Iterator[Path]:
    """A short state directory: the report path is shown on screen, and a long one would wrap
    across lines at a place that depends on pytest's temporary path."""
    import shutil
    import tempfile

    short = Path(tempfile.mkdtemp(prefix="sw", dir="/tmp"))
    try:
        yield short
    finally:
        shutil.rmtree(short, ignore_errors=True)


@pytest.fixture
def tmux(state: Path) -> Iterator[Tmux]:
    name = f"swtui-test-{os.getpid()}"
    env = {"XDG_STATE_HOME": str(state), "TERM": "xterm-256color"}
    exports = " ".join(f"{k}={v}" for k, v in env.items())
    command = f"cd {ROOT} && {exports} {sys.executable} -m strixwizard --demo"
    subprocess.run(["tmux", "new-session", "-d", "-s", name, "-x", "100", "-y", "30", command],
                   check=True, timeout=10)
    try:
        yield Tmux(name)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True, timeout=10, check=False)


def test_the_demo_walks_from_site_to_report_in_a_real_terminal(tmux: Tmux, state: Path) -> None:
    screen = tmux.wait_for("1 Site")
    assert "node-a" in screen and "node-b" in screen
    tmux.keys("n")
    screen = tmux.wait_for("Ryzen AI Max")
    assert "NICs and RDMA ports" in screen
    tmux.keys("n")
    screen = tmux.wait_for("thunderbolt-net")
    tmux.keys("n")
    tmux.wait_for("step 4/7 Fix")
    tmux.keys("n")
    tmux.wait_for("PLAN ONLY")
    tmux.keys("n")
    tmux.wait_for("step 6/7 Test")
    tmux.keys("r")
    tmux.wait_for("Tests: ", timeout=90)
    # the verdict's notice is drawn a moment before the result panels below it: wait for them
    screen = tmux.wait_for("replayed recording", timeout=30)
    assert "RDMA latency" in screen
    tmux.keys("n")
    screen = tmux.wait_for("strixwizard-report-demo.json")
    assert (state / "strixwizard" / "demo" / "strixwizard-report-demo.json").exists()
    tmux.keys("q")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and tmux.alive():
        time.sleep(0.1)
    assert not tmux.alive(), "the wizard did not quit on q"
    saved = (state / "strixwizard" / "demo-state.json").read_text()
    assert '"step": "report"' in saved

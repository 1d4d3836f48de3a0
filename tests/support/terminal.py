"""The CLI on a real terminal, for the tests: its output read off a pseudo-terminal, colours and
all, as a person at a terminal sees it."""

from __future__ import annotations

import os
import pty
import subprocess
import sys


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

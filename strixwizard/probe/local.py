"""A probe on this machine: the real filesystem and real commands."""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Sequence

from strixwizard.probe import RC_NOT_FOUND, RC_TIMEOUT, CmdResult
from strixwizard.probe.collector import COMMAND_TIMEOUT_S, read_bounded


class LocalProbe:
    def __init__(self, host: str | None = None, root: str = "/") -> None:
        self.host = host or socket.gethostname()
        self.root = root

    def _real(self, path: str) -> str:
        return os.path.join(self.root, path.lstrip("/"))

    def read(self, path: str) -> str | None:
        try:
            return read_bounded(self._real(path)).decode("utf-8", "replace")
        except OSError:
            return None

    def listdir(self, path: str) -> list[str]:
        try:
            return sorted(os.listdir(self._real(path)))
        except OSError:
            return []

    def readlink(self, path: str) -> str | None:
        try:
            return os.readlink(self._real(path))
        except OSError:
            return None

    def run(self, argv: Sequence[str]) -> CmdResult:
        args = tuple(argv)
        env = dict(os.environ, LC_ALL="C", LANG="C")
        try:
            done = subprocess.run(
                args,
                capture_output=True,
                timeout=COMMAND_TIMEOUT_S,
                env=env,
                stdin=subprocess.DEVNULL,
                check=False,
            )
        except FileNotFoundError:
            return CmdResult(args, RC_NOT_FOUND, "", f"{args[0]}: command not found")
        except subprocess.TimeoutExpired:
            return CmdResult(args, RC_TIMEOUT, "", f"timed out after {COMMAND_TIMEOUT_S:g} s")
        return CmdResult(
            args,
            done.returncode,
            done.stdout.decode("utf-8", "replace"),
            done.stderr.decode("utf-8", "replace"),
        )

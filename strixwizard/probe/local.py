"""A probe on this machine: the real filesystem and real commands."""

from __future__ import annotations

import os
import socket
from collections.abc import Sequence

from strixwizard.onnode.collector import read_bounded, run_command
from strixwizard.probe import CmdResult


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
        done = run_command(list(argv))
        return CmdResult(tuple(argv), done["rc"], done["stdout"], done["stderr"])

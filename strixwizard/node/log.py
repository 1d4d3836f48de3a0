"""paramiko's own log (and the tracebacks its transport thread logs) never reaches the terminal
unless asked for: strixwizard states every failure itself, in one line."""

from __future__ import annotations

import logging
import sys
from typing import TextIO

_QUIET = logging.NullHandler()


def quiet_paramiko() -> None:
    """Keep paramiko's records away from the terminal (and from Python's last-resort handler)."""
    logger = logging.getLogger("paramiko")
    if _QUIET not in logger.handlers:
        logger.addHandler(_QUIET)
    logger.propagate = False


def show_ssh_log(stream: TextIO | None = None, level: int = logging.WARNING) -> logging.Handler:
    """Send paramiko's log from `level` up to `stream` (stderr by default): what `-v` asks for."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(logging.Formatter("ssh: %(name)s: %(message)s"))
    logger = logging.getLogger("paramiko")
    logger.addHandler(handler)
    logger.setLevel(level)
    return handler

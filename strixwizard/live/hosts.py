"""Where the live tests run their programs: node sessions (`strixwizard.node`), under the
names the test modules use.

Every program runs under the supervisor (sent as `python3 -c`), which ends it when
its time limit passes or when its stdin closes. `Process.stop()` closes stdin, so
the program is stopped on every exit path of the controller: normal end, timeout,
exception, Ctrl-C, and even the controller being killed (the SSH channel, hence
stdin, goes away with it). The controller never signals remote processes by name.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from strixwizard.node.errors import NodeError
from strixwizard.node.local import LocalSession
from strixwizard.node.process import (
    MAX_CAPTURE,
    NOT_INSTALLED,
    STOP_GRACE_S,
    STOPPED,
    SUPERVISOR_SOURCE,
    TIMED_OUT,
    Process,
    supervised_argv,
)
from strixwizard.node.session import ProgramRunner

if TYPE_CHECKING:
    from strixwizard.node.session import Connector, NodeSession, OpsChannel, Spec
    from strixwizard.node.target import SshTarget
    from strixwizard.probe import Probe

#: A node the tests can start programs on (any node session is one).
Host = ProgramRunner
#: The node could not run the program (unreachable, refused, cancelled); shown as is.
HostError = NodeError


class LocalHost(LocalSession):
    """This machine (the demo's loopback test, and unit tests)."""

    def __init__(self, name: str = "localhost", python: str = sys.executable) -> None:
        super().__init__(name, python)


class SshHost:
    """A node reached over SSH: one connection, opened on first use, one channel per program."""

    python = "python3"

    def __init__(self, target: SshTarget, connector: Connector | None = None) -> None:
        from strixwizard.node.session import connect

        self.target = target
        self.name = target.name
        self.session: NodeSession = (connector or connect)(target)

    @property
    def where(self) -> str:
        return self.session.where

    def start(self, argv: Sequence[str], limit_s: float, label: str = "") -> Process:
        return self.session.start(argv, limit_s, label)

    def collect(self, spec: Spec | None = None) -> Probe:
        return self.session.collect(spec)

    def collect_archive(self, spec: Spec | None = None) -> bytes:
        return self.session.collect_archive(spec)

    def ops(self) -> OpsChannel:
        return self.session.ops()

    def close(self) -> None:
        self.session.close()


def output_of(text: str, line_start: str) -> list[dict[str, object]]:
    """The JSON-line events a program printed whose text starts with `line_start`."""
    events = []
    for line in text.splitlines():
        if line.startswith(line_start):
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, dict):
                events.append(value)
    return events


def stop_all(processes: Sequence[Process | None]) -> None:
    for process in processes:
        if process is not None:
            process.stop()


__all__ = ["MAX_CAPTURE", "NOT_INSTALLED", "STOPPED", "STOP_GRACE_S", "SUPERVISOR_SOURCE",
           "TIMED_OUT", "Host", "HostError", "LocalHost", "Process", "SshHost", "stop_all",
           "supervised_argv"]

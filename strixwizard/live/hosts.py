"""What the live tests need of a node, in their own words: a `Host` is any node session
(`strixwizard.node`; `connect(target_for(site, spec))` makes one), a `HostError` any node
error; and the helpers they share to read a program's events and stop its processes.

Every program runs under the supervisor (sent as `python3 -c`), which ends it when
its time limit passes or when its stdin closes. `Process.stop()` closes stdin, so
the program is stopped on every exit path of the controller: normal end, timeout,
exception, Ctrl-C, and even the controller being killed (the SSH channel, hence
stdin, goes away with it). The controller never signals remote processes by name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from strixwizard.node.errors import NodeError
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
from strixwizard.readback import ReadBackError, loads

#: A node the tests can start programs on (any node session is one).
Host = ProgramRunner
#: The node could not run the program (unreachable, refused, cancelled); shown as is.
HostError = NodeError


def output_of(text: str, line_start: str) -> list[dict[str, object]]:
    """The JSON-line events a program printed whose text starts with `line_start`, read by the
    read-back rule: a line nested too deep or holding NaN, Infinity or a number beyond a float
    is not an event (the measurement then misses it and says so), never a traceback."""
    events = []
    for line in text.splitlines():
        if line.startswith(line_start):
            try:
                value = loads(line, "a node program's output line")
            except ReadBackError:
                continue
            if isinstance(value, dict):
                events.append(value)
    return events


def stop_all(processes: Sequence[Process | None]) -> None:
    for process in processes:
        if process is not None:
            process.stop()


__all__ = ["MAX_CAPTURE", "NOT_INSTALLED", "STOPPED", "STOP_GRACE_S", "SUPERVISOR_SOURCE",
           "TIMED_OUT", "Host", "HostError", "Process", "output_of", "stop_all",
           "supervised_argv"]


def json_report_path(host: Host, tool: str, timeout: float, offers: Callable[[str], bool]) -> str | None:
    """A fresh path on `host` for `tool`'s JSON report when its `--help` offers one (`offers`
    reads the help text: feature-detected, never from a version number); None otherwise."""
    import secrets

    helper = host.start([tool, "--help"], timeout + 2, f"{tool} --help")
    try:
        helper.wait(timeout)
        offered = offers(helper.stdout + "\n" + helper.stderr)
    finally:
        helper.stop()
    return f"/tmp/strixwizard-{tool}-{secrets.token_hex(6)}.json" if offered else None

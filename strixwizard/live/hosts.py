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

import json
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
from strixwizard.readback import MAX_DEPTH, nesting_depth

#: A node the tests can start programs on (any node session is one).
Host = ProgramRunner
#: The node could not run the program (unreachable, refused, cancelled); shown as is.
HostError = NodeError


def output_of(text: str, line_start: str) -> list[dict[str, object]]:
    """The JSON-line events a program printed whose text starts with `line_start`. A line nested
    deeper than any event is not one (it was a RecursionError); a NaN or an infinity in an event
    stays, for the typed reader of that event to refuse with its reason (calibrate's, the
    measurements' `from_json`)."""
    events = []
    for line in text.splitlines():
        if line.startswith(line_start):
            if nesting_depth(line) > MAX_DEPTH:
                continue
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

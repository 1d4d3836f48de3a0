"""A lab node's fabric interface under another name, for the tests of what an interface name may
hold (shell metacharacters, terminal escapes): the link is taken down, renamed and brought up
again inside the node's own network namespace."""

from __future__ import annotations

from tests.support.lab import LabHost


def rename(host: LabHost, old: str, new: str) -> None:
    for argv in (["ip", "link", "set", "dev", old, "down"],
                 ["ip", "link", "set", "dev", old, "name", new],
                 ["ip", "link", "set", "dev", new, "up"]):
        host.run_in_ns(argv, check=True)

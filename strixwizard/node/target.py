"""Where a node is: the address a `Connector` turns into a `NodeSession`."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

DEFAULT_KNOWN_HOSTS = Path("~/.ssh/known_hosts").expanduser()


def default_parallel() -> int:
    """How many nodes are collected at once: 8 per CPU of the head, at least 8, at most 32.

    A collection costs the head about 6 ms of CPU (handshake ~2 ms, transfer ~1.5 ms, loading
    the snapshot ~1.5 ms, measured on the lab) while it waits hundreds of ms for the node's
    collector, so 8 per CPU keeps the head busy without hundreds of handshakes at once."""
    return max(8, min(32, 8 * (os.cpu_count() or 1)))


@dataclass(frozen=True)
class SshTarget:
    name: str
    host: str
    user: str = "root"
    port: int = 22
    key_file: str | None = None
    known_hosts: Path = DEFAULT_KNOWN_HOSTS
    trust_new_hosts: bool = False
    #: Trust an unknown key only if it has this fingerprint (the one the user confirmed).
    trust_fingerprint: str | None = None
    connect_timeout: float = 5.0
    deadline: float = 60.0  # for the whole collection, connect included

    @property
    def address(self) -> str:
        return f"{self.user}@{self.host}" + (f":{self.port}" if self.port != 22 else "")


@dataclass(frozen=True)
class LocalTarget:
    """This machine; with `netns`, network changes happen in that network namespace."""

    name: str
    netns: str | None = None


Target = SshTarget | LocalTarget

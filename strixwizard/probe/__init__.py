"""The read-only seam between strixwizard and a node.

Everything the facts know about a node comes through a `Probe`: files as read,
directory listings, symlink targets and command outputs. A probe never writes.
Three kinds exist: `LocalProbe` (this machine), `SnapshotProbe` (a captured tree)
and the SSH probe: a node session (`strixwizard.node`) collects the node in one
remote exec, and a `SnapshotProbe` then answers from what it sent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class CmdResult:
    """The outcome of one command, as `commands.json` stores it."""

    argv: tuple[str, ...]
    rc: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.rc == 0

    def to_json(self) -> dict[str, object]:
        return {"argv": list(self.argv), "rc": self.rc, "stdout": self.stdout, "stderr": self.stderr}


#: Exit status a shell gives for a command that does not exist; probes use it too.
RC_NOT_FOUND = 127
#: Exit status used when a command ran past its time limit.
RC_TIMEOUT = 124


class NotCaptured(LookupError):
    """The probe holds no answer for this question (a snapshot that did not record it)."""


class Probe(Protocol):
    """Read-only access to one node. Paths are absolute; argv is a sequence, never a shell string."""

    host: str

    def read(self, path: str) -> str | None:
        """Text of a file, or None if it is absent or unreadable."""
        ...

    def listdir(self, path: str) -> list[str]:
        """Sorted names in a directory; empty if it is absent."""
        ...

    def readlink(self, path: str) -> str | None:
        """Target of a symlink as stored (often relative), or None if `path` is not one."""
        ...

    def run(self, argv: Sequence[str]) -> CmdResult:
        """Run a command and return its result. A snapshot raises `NotCaptured` if it has none."""
        ...

"""Where a node is: the address a `Connector` turns into a `NodeSession`, and the one place
a site's node becomes one (`target_for`).

Three kinds: `SshTarget` (a remote node), `LocalTarget` (this machine) and `SnapshotTarget`
(a captured node replayed; with a private copy, what a dry run changes). A target writes
itself into a fix or deploy journal (`to_json`) and is read back from one (`target_from_json`,
which also reads the descriptors journals were written with before targets did this).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

if TYPE_CHECKING:
    from strixwizard.site import NodeSpec, Site

DEFAULT_KNOWN_HOSTS = Path("~/.ssh/known_hosts").expanduser()

TargetKind = Literal["ssh", "local", "snapshot"]


def default_parallel() -> int:
    """How many nodes are collected at once: 8 per CPU of the head, at least 8, at most 32.

    A collection costs the head about 6 ms of CPU (handshake ~2 ms, transfer ~1.5 ms, loading
    the snapshot ~1.5 ms, measured on the lab) while it waits hundreds of ms for the node's
    collector, so 8 per CPU keeps the head busy without hundreds of handshakes at once."""
    return max(8, min(32, 8 * (os.cpu_count() or 1)))


def ssh_parallel(site: Site | None = None) -> int:
    """How many nodes are collected at once: `ssh: {parallel: N}` when the site says, else a
    pool sized for the head's CPUs (`default_parallel`)."""
    wanted = site.ssh.parallel if site is not None else None
    return wanted if wanted is not None else default_parallel()


@dataclass(frozen=True)
class SshTarget:
    """A node reached over SSH, and how."""

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
    #: "sudo": `user` is not root; every command runs as `sudo -n -- ARGV`
    become: str | None = None

    kind: ClassVar[TargetKind] = "ssh"

    @property
    def address(self) -> str:
        return f"{self.user}@{self.host}" + (f":{self.port}" if self.port != 22 else "")

    @property
    def where(self) -> str:
        """How the node is reached, for messages and journals: "ssh alice@10.0.0.2 (sudo)"."""
        return f"ssh {self.address}" + (f" ({self.become})" if self.become else "")

    def to_json(self) -> dict[str, Any]:
        """How a journal reaches the node again (no trust: a rollback trusts known keys only)."""
        return {"kind": "ssh", "host": self.host, "user": self.user, "port": self.port,
                "key_file": self.key_file, "known_hosts": str(self.known_hosts),
                "connect_timeout": self.connect_timeout, "deadline": self.deadline,
                **({"become": self.become} if self.become else {})}


@dataclass(frozen=True)
class LocalTarget:
    """This machine; with `netns`, network changes happen in that network namespace."""

    name: str
    netns: str | None = None

    kind: ClassVar[TargetKind] = "local"

    @property
    def address(self) -> str:
        return "local"

    def to_json(self) -> dict[str, Any]:
        return {"kind": "local", **({"netns": self.netns} if self.netns else {})}


@dataclass(frozen=True)
class SnapshotTarget:
    """A captured node (a snapshot directory or `.tar.gz`), replayed.

    Without `copy` its session only reads. With `copy`, connecting makes that private copy
    of the snapshot (unless it is there already) and the session's changes go into it, never
    into the snapshot: the dry run of a fix.
    """

    name: str
    snapshot: Path
    copy: Path | None = None

    kind: ClassVar[TargetKind] = "snapshot"

    @property
    def address(self) -> str:
        return str(self.snapshot)

    def to_json(self) -> dict[str, Any]:
        return {"kind": "snapshot", "root": str(self.copy if self.copy is not None else self.snapshot)}


Target = SshTarget | LocalTarget | SnapshotTarget


def target_for(site: Site, spec: NodeSpec, *, trust_new_hosts: bool = False,
               trust_fingerprint: str | None = None, dry_run_root: Path | None = None) -> Target:
    """How to reach a node of the site: its snapshot, this machine, or SSH.

    `trust_fingerprint` accepts an unknown host key only if it is that one; `dry_run_root`
    gives a snapshot node a private copy under it (`<dry_run_root>/<node>`) to change."""
    if spec.snapshot is not None:
        return SnapshotTarget(spec.name, site.resolve(spec.snapshot),
                              dry_run_root / spec.name if dry_run_root is not None else None)
    if spec.is_local:
        return LocalTarget(spec.name)
    return SshTarget(
        name=spec.name,
        host=spec.host or spec.name,
        user=spec.user,
        port=spec.port,
        key_file=str(site.resolve(spec.key)) if spec.key else None,
        known_hosts=site.resolve(site.ssh.known_hosts),
        trust_new_hosts=trust_new_hosts,
        trust_fingerprint=trust_fingerprint,
        connect_timeout=site.ssh.connect_timeout,
        deadline=site.ssh.deadline,
        become=spec.become,
    )


def target_from_json(name: str, data: Mapping[str, Any]) -> Target:
    """The target a journal's descriptor names (`to_json`, or the same fields as journals held
    them before); ValueError when it names no kind of target this version knows."""
    kind = data.get("kind")
    if kind == "snapshot":
        root = Path(data["root"])  # the private copy the run changed
        return SnapshotTarget(name, root, root)
    if kind == "local":
        return LocalTarget(name, data.get("netns"))
    if kind == "ssh":
        return SshTarget(
            name=name, host=data["host"], user=data["user"], port=int(data["port"]),
            key_file=data.get("key_file"), known_hosts=Path(data["known_hosts"]),
            connect_timeout=float(data.get("connect_timeout", 5.0)),
            deadline=float(data.get("deadline", 60.0)),
            become=data.get("become"),
        )
    raise ValueError(f"the journal does not say how to reach {name} ({kind!r})")

"""One apply at a time: a lock per site on the head and one per node.

`fix --apply/--rollback` and `deploy --apply/--rollback` (the CLI and the wizard
alike) take an exclusive `flock` on
`STATE/strixwizard/locks/SITE.lock` beside the journals, once per run: the command takes it
before it reads the nodes or asks, and hands the holder down to the engine, which refuses
to change a real node without it. Then one lock on each node
(`NODE_JOURNAL_DIR/.lock`, held by the node's step runner for the whole
session). A second run is refused at once, naming the holder (pid, host, start
time): `LockHeld`, exit status 2. The kernel drops a `flock` when its holder
dies, so a lock outlives its run only when another process kept it open (a
node's step runner still finishing a command after its head was killed): that
lock is *stale*, reported as such, and `--break-lock` replaces it.
"""

from __future__ import annotations

import datetime
import json
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from strixwizard.errors import UsageError
from strixwizard.files import private_dir
from strixwizard.fixing.journal import file_name
from strixwizard.node.channel import Lock, Unlock, here
from strixwizard.node.errors import NodeLockHeld, OpRefused

NODE_LOCK = ".lock"


def holder_record(command: str, site: str) -> dict[str, Any]:
    """Who takes a lock: this process, on this host, now."""
    return {"command": command, "site": site, "pid": os.getpid(), "host": socket.gethostname(),
            "started": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")}


def parse_holder(text: str) -> dict[str, Any]:
    try:
        data = json.loads(text) if text.strip() else {}
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def is_stale(holder: dict[str, Any]) -> bool | None:
    """True: the run that took the lock is gone; False: it runs; None: cannot tell from here
    (it ran on another host)."""
    pid = holder.get("pid")
    if not isinstance(pid, int) or holder.get("host") != socket.gethostname():
        return None
    return not _alive(pid)


def describe(holder: dict[str, Any]) -> str:
    if not holder:
        return "a process that left no record"
    text = (f"`strixwizard {holder.get('command', '?')}` (pid {holder.get('pid', '?')} on "
            f"{holder.get('host', '?')}, started {holder.get('started', '?')}")
    runner = holder.get("runner_pid")
    if runner is not None and runner != holder.get("pid"):
        text += f"; the node's step runner is pid {runner}"
    return text + ")"


class LockHeld(UsageError):
    """Another run holds the lock (or its stale lock is still there)."""

    def __init__(self, what: str, holder: dict[str, Any]) -> None:
        self.what, self.holder, self.stale = what, holder, is_stale(holder)
        if self.stale:
            advice = ("that run is gone but its lock is still held (a node's step runner may "
                      "still be finishing a command): the lock is stale; wait a minute, or break "
                      "it with --break-lock")
        elif self.stale is None:
            advice = ("it runs on another host or left no record: wait for it, or if you know "
                      "it is gone, break the lock with --break-lock")
        else:
            advice = "wait for it to finish; one apply or rollback at a time"
        super().__init__(f"{what} is locked by {describe(holder)}: {advice}")


class UnfinishedRun(UsageError):
    """An earlier run on one of the nodes did not finish (its journal says so): a new run is
    refused until that one is rolled back (`fixing/engine.py` `refuse_unfinished`)."""


def may_break(holder: dict[str, Any]) -> bool:
    """--break-lock never takes a lock from a run that is still alive on this host."""
    return is_stale(holder) is not False


#: Who holds a lock, as its lock file records it (`holder_record`).
Holder = dict[str, Any]


@contextmanager
def site_lock(store_root: Path, site: str, command: str, break_stale: bool = False
              ) -> Iterator[Holder]:
    """Hold the head's lock of `site` for the duration; yields the holder record.

    Taken once per run, by the command before it reads the nodes or asks anything (so a second
    run is refused at once), and handed down to the engine, which checks it is held. Taking
    it again while it is held is refused like any other run (a `flock` of its own)."""
    path = str(store_root.parent / "locks" / f"{file_name(site)}.lock")
    holder = holder_record(command, site)
    # the folders made 0700 here (the lock op's makedirs leaves missing parents 0755); an
    # existing one that is not private is refused (FolderRefused), never changed
    private_dir(Path(path).parent, "or name another folder with --journal-dir")
    try:
        try:
            here(Lock(path, holder))
        except NodeLockHeld as held_here:
            held = parse_holder(held_here.holder)
            if not (break_stale and may_break(held)):
                raise LockHeld(f"site {site!r} ({path})", held) from None
            here(Lock(path, holder, take_over=True))
    except OpRefused as refused:
        raise UsageError(f"cannot lock site {site!r}: {refused}") from None
    try:
        yield holder
    finally:
        here(Unlock(path))

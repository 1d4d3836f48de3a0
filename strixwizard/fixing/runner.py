"""Runners: the only code that changes a node. One per node per run.

- `LocalRunner`: this machine (or one of its network namespaces), through a local
  node session: pyroute2 for the MTU, subprocess argv for commands, atomic file writes;
- `SshRunner` (fixing/ssh.py): a remote node, through an SSH node session that runs
  `ops.serve()` there;
- `SnapshotRunner`: a copy of a snapshot, for dry runs: files in its tree and
  recorded command outputs change as the real ones would, nothing else does.

Each runner reads a step's value (`read`), applies it, and undoes it to a given
`before`. Errors: `ReadError` (value unreadable), `StepFailed` (the change was
refused; the node is as it was before the step), `Unreachable` (the node went
away: the step's outcome is unknown; the node seam's own `Unreachable`).
"""

from __future__ import annotations

import json
import os
import posixpath
import shutil
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, TypeVar

from strixwizard.facts.rdma import IBV_DEVINFO, roce_active_mtu, with_active_mtu
from strixwizard.facts.spec import SPEC
from strixwizard.fixing.model import BEFORE, Kind, Read, Step
from strixwizard.fixing.readers import ReadError, parse, render
from strixwizard.node.channel import (
    Delete,
    Exists,
    GetMtu,
    Lock,
    MakeDir,
    OpsChannel,
    ReadFile,
    RemoveDir,
    ReplaceFile,
    Request,
    Run,
    SetMtu,
    Unlock,
    WriteAttribute,
)
from strixwizard.node.command import not_installed
from strixwizard.node.errors import NodeError, NodeLockHeld, OpRefused
from strixwizard.node.errors import Unreachable as Unreachable  # the name engines import
from strixwizard.node.session import NodeSession
from strixwizard.places import NODE_JOURNAL_DIR
from strixwizard.probe import NotCaptured, Probe
from strixwizard.probe.snapshot import SnapshotProbe

DEFAULT_NODE_JOURNAL_DIR = NODE_JOURNAL_DIR  # the name fixing/site_apply.py imports
MAX_LINK_HOPS = 40  # as the kernel (ELOOP)
A = TypeVar("A")


class StepFailed(Exception):
    """The node refused the change; the message is what it said."""


def first_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[0] if lines else ""


def command_error(argv: tuple[str, ...] | list[str], rc: int, stdout: str, stderr: str) -> str:
    if rc == 127:
        return not_installed(argv, stderr=stderr)
    reason = first_line(stderr) or first_line(stdout)
    return f"`{' '.join(argv)}` failed: {reason or 'exit status ' + str(rc)}"


def undo_argv(step: Step, before: str | None) -> tuple[str, ...]:
    return tuple((before or "") if arg == BEFORE else arg for arg in step.undo_argv)


class Runner(ABC):
    node: str
    where: str  # "ssh root@host", "local", "snapshot copy DIR"
    dry_run: bool = False

    @abstractmethod
    def read(self, read: Read) -> str | None: ...

    @abstractmethod
    def apply(self, step: Step) -> None: ...

    @abstractmethod
    def undo(self, step: Step, before: str | None) -> None: ...

    @abstractmethod
    def save_journal(self, run_id: str, text: str) -> str:
        """Keep the run's journal on the node; returns where it is."""

    @abstractmethod
    def probe(self) -> Probe:
        """A fresh read-only probe of the node, for verification."""

    def lock(self, holder: dict[str, Any], break_stale: bool = False) -> None:
        """Hold the node's lock for this session (`fixing/lock.py`); nothing to share here."""
        return None

    def unlock(self) -> None:
        return None

    def close(self) -> None:
        return None


class OpsRunner(Runner):
    """A runner that works through the ops channel (`node/channel.py`: in-process or over SSH).
    A refused change is `StepFailed`, a refused read `ReadError`."""

    journal_dir: str = NODE_JOURNAL_DIR

    @abstractmethod
    def send(self, request: Request[A]) -> A: ...

    def _must(self, request: Request[A]) -> A:
        try:
            return self.send(request)
        except OpRefused as refused:
            raise StepFailed(str(refused)) from None

    def _run(self, argv: tuple[str, ...]) -> None:
        done = self._must(Run(argv))
        if done.rc != 0:
            raise StepFailed(command_error(argv, done.rc, done.stdout, done.stderr))

    def read(self, read: Read) -> str | None:
        try:
            if read.source == "mtu":
                return str(self.send(GetMtu(read.path)).value)
            if read.source == "file":
                value = self.send(ReadFile(read.path)).value
                return None if value is None else parse(read.parse, value)
            if read.source == "exists":
                return self.send(Exists(read.path)).value
            done = self.send(Run(read.argv))
        except OpRefused as refused:
            raise ReadError(str(refused)) from None
        if done.rc != 0:
            raise ReadError(command_error(read.argv, done.rc, done.stdout, done.stderr))
        return parse(read.parse, done.stdout)

    def _set(self, step: Step, value: str | None, argv: tuple[str, ...]) -> None:
        if step.kind is Kind.MTU:
            if value is None:
                raise StepFailed(f"no MTU to set on {step.target}")
            self._must(SetMtu(step.target, int(value)))
        elif step.kind is Kind.WRITE:
            if value is not None:  # None: the attribute goes with its configfs directory
                self._must(WriteAttribute(step.target, value))
        elif step.kind is Kind.MKDIR:
            self._must(MakeDir(step.target) if value else RemoveDir(step.target))
        elif step.kind is Kind.FILE:
            if value is None:
                self._must(Delete(step.target))
            else:
                self._must(ReplaceFile(step.target, value, step.mode))
        else:
            self._run(argv)

    def apply(self, step: Step) -> None:
        self._set(step, step.after, step.argv)

    def undo(self, step: Step, before: str | None) -> None:
        self._set(step, before, undo_argv(step, before))

    def _lock_path(self) -> str:
        from strixwizard.fixing.lock import NODE_LOCK

        return f"{self.journal_dir.rstrip('/')}/{NODE_LOCK}"

    def lock(self, holder: dict[str, Any], break_stale: bool = False) -> None:
        from strixwizard.fixing.lock import LockHeld, may_break, parse_holder

        request = Lock(self._lock_path(), holder)
        try:
            try:
                self.send(request)
            except NodeLockHeld as held_here:
                held = parse_holder(held_here.holder)
                if not (break_stale and may_break(held)):
                    raise LockHeld(f"node {self.node} ({request.path})", held) from None
                self.send(Lock(request.path, holder, take_over=True))
        except OpRefused as refused:
            raise StepFailed(f"cannot lock {request.path}: {refused}") from None

    def unlock(self) -> None:
        self.send(Unlock(self._lock_path()))

    def save_journal(self, run_id: str, text: str) -> str:
        path = f"{self.journal_dir.rstrip('/')}/{run_id}.json"
        try:
            self.send(ReplaceFile(path, text, mode=0o600))
        except OpRefused as refused:
            raise StepFailed(f"cannot write the journal on the node: {refused}") from None
        return path


class SessionRunner(OpsRunner):
    """A runner over a node session: requests go through the session's ops channel (opened on
    the first one), verification collects the node through the same session."""

    def __init__(self, node: str, session: NodeSession,
                 journal_dir: str = NODE_JOURNAL_DIR) -> None:
        self.node = node
        self.session = session
        self.journal_dir = journal_dir
        self.where = session.where
        self._ops: OpsChannel | None = None

    def send(self, request: Request[A]) -> A:
        try:
            if self._ops is None:
                self._ops = self.session.ops()
            return self._ops.send(request)
        except OpRefused:  # the node answered: the channel still serves
            raise
        except Unreachable:
            self._ops = None
            raise
        except NodeError as error:
            self._ops = None
            raise Unreachable(str(error)) from error

    def probe(self) -> Probe:
        try:
            return self.session.collect(SPEC)
        except Unreachable:
            raise
        except NodeError as error:
            raise Unreachable(str(error)) from error

    def close(self) -> None:
        if self._ops is not None:
            self._ops.close()
            self._ops = None
        self.session.close()


class LocalRunner(SessionRunner):
    """This machine; with `netns`, MTU changes happen in that network namespace (pyroute2)."""

    def __init__(self, node: str, netns: str | None = None,
                 journal_dir: str = NODE_JOURNAL_DIR, session: NodeSession | None = None
                 ) -> None:
        from strixwizard.node.local import LocalSession

        super().__init__(node, session or LocalSession(node, netns=netns), journal_dir)
        self.netns = netns


class SnapshotRunner(Runner):
    """A snapshot directory changed in place: the dry run of a plan (see module docstring)."""

    dry_run = True

    def __init__(self, node: str, root: Path) -> None:
        self.node = node
        self.root = Path(root)
        self.where = f"snapshot copy {self.root} (dry run)"
        self._probe: SnapshotProbe | None = None

    def probe(self) -> SnapshotProbe:
        if self._probe is None:
            self._probe = SnapshotProbe.load(self.root)
        return self._probe

    def _disk(self, path: str) -> Path:
        """Where the node's `path` is in the copy. Symbolic links on the way are followed on
        disk but only inside the copy: an absolute target is re-rooted at the copy's `fs/`,
        `..` stops there, so every existing component of the answer is a real directory or
        file of the copy and nothing written through it lands outside."""
        fs = self.root / "fs"
        if fs.is_symlink() or not fs.is_dir():
            raise StepFailed(f"{fs} is not a directory of the snapshot copy: refusing to write")
        todo = [p for p in path.split("/") if p]
        done: list[str] = []
        hops = 0
        while todo:
            part = todo.pop(0)
            if part in (".", ".."):
                if part == ".." and done:
                    done.pop()
                continue
            here = fs.joinpath(*done, part)
            if not here.is_symlink():
                done.append(part)
                continue
            hops += 1
            if hops > MAX_LINK_HOPS:
                raise StepFailed(f"{path}: too many levels of symbolic links in the snapshot copy")
            target = os.readlink(here)
            if target.startswith("/"):
                done = []
            todo = [p for p in target.split("/") if p] + todo
        return fs.joinpath(*done)

    def _disk_entry(self, path: str) -> Path:
        """`_disk` of the parent, then the name itself: the entry a rename, unlink, mkdir or
        symlink acts on (as `ops` does on a node), not what a final link points at."""
        parent, name = posixpath.split(posixpath.normpath("/" + path))
        if name in ("", ".", ".."):
            raise StepFailed(f"{path}: not a file name")
        return self._disk(parent) / name

    def _changed(self) -> None:
        self._probe = None

    def read(self, read: Read) -> str | None:
        if read.source == "mtu":
            value = self.probe().read(f"/sys/class/net/{read.path}/mtu")
            if value is None:
                raise ReadError(f"no interface {read.path}")
            return value.strip()
        if read.source == "exists":
            return "present" if os.path.lexists(self._disk_entry(read.path)) else None
        if read.source == "file":
            disk = self._disk(read.path)
            if not disk.is_file():
                return None
            return parse(read.parse, disk.read_text())
        try:
            result = self.probe().run(read.argv)
        except NotCaptured:
            raise ReadError(f"`{' '.join(read.argv)}` was not captured in the snapshot") from None
        if not result.ok:
            raise ReadError(command_error(read.argv, result.rc, result.stdout, result.stderr))
        return parse(read.parse, result.stdout)

    def _follow_roce_mtu(self, netdev: str, mtu: int) -> None:
        """Do what the kernel does when a RoCE netdev's MTU changes: its RDMA ports' active MTU
        follows (as `ibv_devinfo` would then report it), so the dry run verifies like a node."""
        from strixwizard.facts import NodeFacts

        ports = [p for p in NodeFacts(self.node, self.probe()).rdma_ports
                 if p.netdev == netdev and p.is_ethernet]
        try:
            devinfo = self.probe().run(IBV_DEVINFO.argv)
        except NotCaptured:
            return
        text = devinfo.stdout
        for port in ports:
            text = with_active_mtu(text, port.device, port.number, roce_active_mtu(mtu, port.max_mtu))
        if text != devinfo.stdout:
            self._set_command_output(IBV_DEVINFO.argv, text)

    def _set_command_output(self, argv: tuple[str, ...], stdout: str) -> None:
        path = self.root / "commands.json"
        if path.is_symlink():
            raise StepFailed(f"{path} is a symbolic link: refusing to write through it")
        commands = json.loads(path.read_text())
        for entry in commands:
            if tuple(entry["argv"]) == argv:
                entry.update(stdout=stdout, rc=0, stderr="")
        path.write_text(json.dumps(commands, indent=1, allow_nan=False))

    def _set(self, step: Step, value: str | None) -> None:
        entry = step.kind in (Kind.MKDIR, Kind.FILE)
        disk = (None if step.kind is Kind.MTU else
                self._disk_entry(step.target) if entry else self._disk(step.target))
        if step.kind is Kind.MTU:
            self._disk(f"/sys/class/net/{step.target}/mtu").write_text(f"{value}\n")
            self._changed()
            self._follow_roce_mtu(step.target, int(value or 0))
        elif step.kind is Kind.WRITE:
            if value is not None:
                assert disk is not None
                if step.target.startswith("/sys/kernel/config/"):
                    disk.parent.mkdir(parents=True, exist_ok=True)  # configfs makes ports/N itself
                if not disk.parent.is_dir():
                    raise StepFailed(f"{step.target}: No such file or directory")
                disk.write_text(value + "\n")
        elif step.kind is Kind.MKDIR:
            assert disk is not None
            if value:
                disk.mkdir(parents=True, exist_ok=False)
            else:
                shutil.rmtree(disk)
        elif step.kind is Kind.FILE:
            assert disk is not None
            if value is None:
                disk.unlink(missing_ok=True)
            else:
                disk.parent.mkdir(parents=True, exist_ok=True)
                if disk.is_symlink():  # replaced, as `ops` renames over it: never written through
                    disk.unlink()
                disk.write_text(value)
        elif step.read.source == "exists":
            link = self._disk_entry(step.read.path)
            if value is None:
                link.unlink(missing_ok=True)
            else:
                link.parent.mkdir(parents=True, exist_ok=True)
                link.unlink(missing_ok=True)
                link.symlink_to(f"../{Path(step.read.path).name}")
        elif step.read.source == "command":
            try:
                old = self.probe().run(step.read.argv)
            except NotCaptured:
                raise StepFailed(f"cannot simulate {' '.join(step.argv)}: "
                                 f"`{' '.join(step.read.argv)}` was not captured") from None
            if not old.ok:
                raise StepFailed(command_error(step.argv, old.rc, old.stdout, old.stderr))
            new = render(step.read.parse, old.stdout, value)
            if new is None:
                raise StepFailed(f"cannot simulate `{' '.join(step.argv)}` on a snapshot")
            self._set_command_output(step.read.argv, new)
        else:
            raise StepFailed(f"cannot simulate {step.kind.value} steps on a snapshot")
        self._changed()

    def apply(self, step: Step) -> None:
        self._set(step, step.after)

    def undo(self, step: Step, before: str | None) -> None:
        self._set(step, before)

    def save_journal(self, run_id: str, text: str) -> str:
        path = self._disk(f"{NODE_JOURNAL_DIR}/{run_id}.json")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return str(path)

"""The node session that replays: snapshots for collection and the fix engine's reads,
recorded outputs for programs. For tests and the demo; it never changes the node it replays.

`SnapshotSession` is the session of a `SnapshotTarget` (what `connect` gives for a site's
snapshot node): it reads the snapshot, and for a dry run holds the private copy that the
dry-run runner changes (`fixing/runner.py` `SnapshotRunner`); the snapshot itself is never
written.

    connector = ReplayConnector({"node0": SnapshotProbe.load(path)},
                                programs={"ib_write_lat": Recording(stdout=text)},
                                unreachable={"node1": "cannot connect to 10.0.0.2:22: refused"})
    site_nodes(site, connector=connector)
"""

from __future__ import annotations

import io
import os
import shutil
import tarfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from strixwizard.files import private_dir
from strixwizard.node.channel import OpsChannel
from strixwizard.node.command import program_name
from strixwizard.node.errors import ConnectFailed, NodeError, Unreachable
from strixwizard.node.session import Spec
from strixwizard.node.target import SnapshotTarget, Target
from strixwizard.probe import NotCaptured, Probe
from strixwizard.probe.snapshot import SnapshotProbe

if TYPE_CHECKING:  # the process module loads subprocess: only a replayed program needs it
    from strixwizard.node.process import Process


@dataclass(frozen=True)
class Recording:
    """What a program printed and how it ended, as it did on a real node."""

    stdout: str = ""
    stderr: str = ""
    status: int = 0


#: Recordings by argv (a tuple, matched exactly) or by program name (matched for any argv).
Recordings = Mapping[tuple[str, ...] | str, Recording]


class ReplayOps:
    """The ops transport of a replay: reads from the snapshot; every change is refused (a
    replay changes nothing)."""

    def __init__(self, probe: Probe) -> None:
        self.probe = probe
        self.requests: list[dict[str, Any]] = []

    def exchange(self, request: dict[str, Any]) -> dict[str, Any]:
        self.requests.append(request)
        op = request.get("op")
        if op == "ping":
            return {"ok": True, "pid": 0}
        if op == "read":
            return {"ok": True, "value": self.probe.read(str(request["path"]))}
        if op == "exists":
            path = str(request["path"])
            present = self.probe.read(path) is not None or bool(self.probe.listdir(path)) \
                or self.probe.readlink(path) is not None
            return {"ok": True, "value": "present" if present else None}
        if op == "mtu_get":
            value = self.probe.read(f"/sys/class/net/{request['ifname']}/mtu")
            if value is None:
                return {"ok": False, "error": f"no interface {request['ifname']}"}
            return {"ok": True, "value": value.strip()}
        if op == "run":
            argv = [str(a) for a in request["argv"]]
            try:
                done = self.probe.run(argv)
            except NotCaptured:
                from strixwizard.node.process import NOT_INSTALLED

                return {"ok": True, "rc": NOT_INSTALLED, "stdout": "",
                        "stderr": f"{argv[0]}: not recorded in the replay"}
            return {"ok": True, "rc": done.rc, "stdout": done.stdout, "stderr": done.stderr}
        return {"ok": False, "error": f"a replayed node changes nothing ({op} refused)"}

    def close(self) -> None:
        return None


class ReplaySession:
    python = "python3"

    def __init__(self, name: str, probe: Probe | None, programs: Recordings | None = None,
                 archive: bytes | None = None, unreachable: str | None = None) -> None:
        self.name = name
        self.where = f"replay of {name}"
        self.probe = probe
        self.programs = dict(programs or {})
        self.archive = archive
        self.unreachable = unreachable
        self.started: list[tuple[str, ...]] = []
        self.closed = False

    def _usable(self) -> Probe:
        if self.unreachable is not None:
            raise ConnectFailed(self.unreachable)
        if self.probe is None:
            raise Unreachable(f"{self.name}: nothing recorded for this node")
        return self.probe

    def collect(self, spec: Spec) -> Probe:
        return self._usable()

    def collect_archive(self, spec: Spec) -> bytes:
        probe = self._usable()
        if self.archive is not None:
            return self.archive
        if not isinstance(probe, SnapshotProbe):
            raise NodeError(f"{self.name}: the replay holds no snapshot to archive")
        import tempfile
        from pathlib import Path

        with tempfile.TemporaryDirectory(prefix="strixwizard-replay-") as tmp:
            root = probe.write_dir(Path(tmp) / "snapshot")
            buffer = io.BytesIO()
            with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
                archive.add(root, arcname="snapshot")
        return buffer.getvalue()

    def ops(self) -> OpsChannel:
        return OpsChannel(ReplayOps(self._usable()))

    def start(self, argv: Sequence[str], limit_s: float, label: str = "") -> Process:
        from strixwizard.node.process import NOT_INSTALLED, Process

        if self.unreachable is not None:
            raise ConnectFailed(self.unreachable)
        self.started.append(tuple(argv))
        program = program_name(argv)
        recording = self.programs.get(tuple(argv)) or self.programs.get(program)
        process = Process(self.name, label or argv[0], lambda: None, lambda: None, program)
        if recording is None:
            recording = Recording(stderr=f"{program}: command not found", status=NOT_INSTALLED)
        process._feed(process._out, recording.stdout.encode())
        process._feed(process._err, recording.stderr.encode())
        process._end(recording.status)
        return process

    def close(self) -> None:
        self.closed = True


def copy_snapshot(source: Path, destination: Path) -> Path:
    """A private copy of a snapshot (directory or .tar.gz) for a dry run: the folders made
    for it (`dry-runs/`, the run's, the copy's own) are 0700, as the journals' are."""
    cure = "or name another folder with --dry-run-dir"
    private_dir(destination.parent.parent, cure)  # the dry runs' folder, then this run's
    private_dir(destination.parent, cure)
    if source.is_dir():
        shutil.copytree(source, destination, symlinks=True)
    else:
        # Through the snapshot loader rather than tarfile.extractall: paths are normalised
        # inside the snapshot, and Debian 12's Python 3.11.2 has no extraction filters.
        SnapshotProbe.load(source).write_dir(destination)
    os.chmod(destination, 0o700)  # made just now (neither makes it over an existing one)
    return destination


class SnapshotSession(ReplaySession):
    """A snapshot as a node: collected by loading it (`SnapshotError` when it does not load);
    programs are not recorded. With the target's `copy`, that private copy is made on connect
    (unless it is there: a journal's copy, which must still be there) and is `self.copy`, the
    only tree a dry run may write; without one, nothing may be written."""

    def __init__(self, target: SnapshotTarget) -> None:
        copy = target.copy
        if copy is not None and not copy.is_dir():
            if copy == target.snapshot:
                raise Unreachable(f"the dry-run copy {copy} is gone")
            copy_snapshot(target.snapshot, copy)
        self.root = copy if copy is not None else target.snapshot
        self.copy = copy
        super().__init__(target.name, None)
        self.where = f"snapshot {self.root}"

    def _usable(self) -> Probe:
        return SnapshotProbe.load(self.root)


@dataclass
class ReplayConnector:
    """A `Connector` answering from recordings, by node name (a snapshot target it has nothing
for replays its snapshot); remembers the sessions it made."""

    probes: Mapping[str, Probe] = field(default_factory=dict)
    programs: Mapping[str, Recordings] | Recordings = field(default_factory=dict)
    unreachable: Mapping[str, str] = field(default_factory=dict)
    sessions: dict[str, list[ReplaySession]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _programs_for(self, name: str) -> Recordings:
        per_node = self.programs.get(name)
        if isinstance(per_node, Mapping):
            return per_node
        return {k: v for k, v in self.programs.items() if isinstance(v, Recording)}

    def __call__(self, target: Target) -> ReplaySession:
        if isinstance(target, SnapshotTarget) and target.name not in self.probes:
            snapshot: ReplaySession = SnapshotSession(target)  # a snapshot replays itself
            with self._lock:
                self.sessions.setdefault(target.name, []).append(snapshot)
            return snapshot
        session = ReplaySession(target.name, self.probes.get(target.name),
                                self._programs_for(target.name),
                                unreachable=self.unreachable.get(target.name))
        with self._lock:
            self.sessions.setdefault(target.name, []).append(session)
        return session

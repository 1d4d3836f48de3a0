"""The journal of a run: per node, every step with the value it found before and its status.

It is written before the first step runs, updated after each step, kept on the
node (`/var/lib/strixwizard/journal/RUN.json` by default) and on the head
(`~/.local/state/strixwizard/journal/RUN/NODE.json` by default). It holds what a
rollback needs: the steps, the `before` values read right before applying, and
how to reach the node again (`runner`).
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from strixwizard.files import private_dir, state_dir
from strixwizard.fixing.model import Plan, Step
from strixwizard.onnode import ops
from strixwizard.site import name_problem

FORMAT = "strixwizard-journal/1"

#: A step's state in a journal; "applying" is saved before the step runs: after a crash it
#: means "may or may not have landed".
StepStatus = Literal["pending", "applying", "applied", "failed", "rolled-back", "undo-failed",
                     "unknown", "skipped"]
#: A node's journal as a whole; "cancelled" (a signal stopped the run before or at this node)
#: and "not-started" (the run stopped before it reached this node) leave the node unchanged.
JournalStatus = Literal["planned", "applying", "applied", "failed", "rolled-back", "interrupted",
                        "aborted", "cancelled", "not-started"]


def default_journal_dir() -> Path:
    return state_dir() / "journal"


def new_run_id() -> str:
    now = datetime.datetime.now(datetime.UTC)
    return now.strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(2)


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


@dataclass
class StepRecord:
    plan_index: int
    step: Step
    status: StepStatus = "pending"
    observed_before: str | None = None
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {**self.step.to_json(), "plan": self.plan_index, "status": self.status,
                "observed_before": self.observed_before, "error": self.error}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> StepRecord:
        return cls(int(data["plan"]), Step.from_json(data), data.get("status", "pending"),
                   data.get("observed_before"), data.get("error"))


@dataclass
class NodeJournal:
    run_id: str
    node: str
    site: str
    where: str
    runner: dict[str, Any]  # how to reach the node again: the target (`node/target.py` to_json)
    dry_run: bool
    plans: list[Plan]
    steps: list[StepRecord]
    status: JournalStatus = "planned"
    state: str = ""  # the node's state in words, after the run
    on_node: str | None = None
    created_at: str = field(default_factory=_now)
    updated_at: str = field(default_factory=_now)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT, "run_id": self.run_id, "node": self.node, "site": self.site,
            "where": self.where, "runner": self.runner, "dry_run": self.dry_run,
            "status": self.status, "state": self.state, "on_node": self.on_node,
            "created_at": self.created_at, "updated_at": self.updated_at,
            "plans": [{k: v for k, v in p.to_json().items() if k != "steps"} for p in self.plans],
            "steps": [s.to_json() for s in self.steps],
        }

    @property
    def unfinished(self) -> bool:
        """The run stopped before it ended (killed, a node unreachable, stopped at once) or its
        rollback was cancelled: values of it may still be applied, or half-applied."""
        if self.dry_run:
            return False
        if self.status in ("planned", "applying", "interrupted"):
            return True
        return self.status == "cancelled" and any(r.status in ("applied", "applying", "unknown")
                                                  for r in self.steps)

    def text(self) -> str:
        self.updated_at = _now()
        return json.dumps(self.to_json(), indent=1, allow_nan=False) + "\n"

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> NodeJournal:
        if data.get("format") != FORMAT:
            raise ValueError(f"not a strixwizard journal ({data.get('format')!r})")
        steps = [StepRecord.from_json(s) for s in data["steps"]]
        plans = [Plan.from_json({**p, "steps": [r.step.to_json() for r in steps
                                                if r.plan_index == i]})
                 for i, p in enumerate(data["plans"])]
        return cls(data["run_id"], data["node"], data["site"], data["where"], data["runner"],
                   bool(data["dry_run"]), plans, steps, data.get("status", "planned"),
                   data.get("state", ""), data.get("on_node"), data.get("created_at", ""),
                   data.get("updated_at", ""))


def write_durably(path: Path, text: str, mode: int = 0o600) -> None:
    """Write `text` to `path` atomically and durably, as a node's `ops` writes its files."""
    ops.write_durably(os.fspath(path), text, mode)


_RUN_ID = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}")


def file_name(name: str) -> str:
    """A node name as a file name inside the run directory: as it is when it is a valid
    name (site.py), else %-escaped (and shortened with a hash), never a path."""
    if name_problem(name) is None:
        return name
    escaped = "".join(c if c.isascii() and (c.isalnum() or c in "_-") else f"%{ord(c):02X}"
                      for c in name)
    if len(escaped) > 80:
        escaped = escaped[:64] + "-" + hashlib.sha256(name.encode()).hexdigest()[:12]
    return escaped


class JournalStore:
    """The head's copy of the journals: DIR/RUN/NODE.json."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = Path(root) if root else default_journal_dir()
        #: the way out, besides `chmod 700`, when an existing folder is not private
        self.cure = ("or name another folder with --journal-dir" if root else
                     "or point XDG_STATE_HOME elsewhere")

    def path(self, run_id: str, node: str) -> Path:
        """DIR/RUN/NODE.json, always inside DIR whatever the node is called."""
        if not _RUN_ID.fullmatch(run_id):
            raise ValueError(f"not a run id: {run_id!r}")
        return self.root / run_id / f"{file_name(node)}.json"

    def save(self, journal: NodeJournal) -> Path:
        """Durably: the file is fsynced, renamed over the old one and its directory fsynced,
        so what the engine saved before a step is on disk when the step starts. 0600 in 0700
        directories: journals name hosts, users and keys. An existing folder that is not
        private and the user's is refused (`FolderRefused`), never changed."""
        path = self.path(journal.run_id, journal.node)
        if self.root.parent == state_dir():  # strixwizard's state folder is judged as well
            private_dir(self.root.parent, self.cure)
        private_dir(self.root, self.cure)
        private_dir(path.parent, self.cure)
        write_durably(path, journal.text())
        return path

    def runs(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return sorted(p.name for p in self.root.iterdir() if p.is_dir() and any(p.glob("*.json")))

    def unfinished(self, nodes: set[str] | None = None, but: str | None = None
                   ) -> dict[str, list[NodeJournal]]:
        """Runs (oldest first) with a journal that is `unfinished` on one of `nodes` (None:
        any), other than the run `but`; a journal that cannot be read is skipped."""
        found: dict[str, list[NodeJournal]] = {}
        for run_id in self.runs():
            if run_id == but:
                continue
            for path in sorted((self.root / run_id).glob("*.json")):
                try:
                    journal = NodeJournal.from_json(json.loads(path.read_text()))
                except (OSError, ValueError, KeyError, TypeError):
                    continue
                if journal.unfinished and (nodes is None or journal.node in nodes):
                    found.setdefault(run_id, []).append(journal)
        return found

    def load_run(self, run_id: str | None) -> list[NodeJournal]:
        runs = self.runs()
        if not runs:
            raise FileNotFoundError(f"no journal in {self.root}: nothing to roll back")
        chosen = run_id or runs[-1]
        if chosen not in runs:
            raise FileNotFoundError(f"no run {chosen!r} in {self.root} (runs: {', '.join(runs[-5:])})")
        return [NodeJournal.from_json(json.loads(p.read_text()))
                for p in sorted((self.root / chosen).glob("*.json"))]

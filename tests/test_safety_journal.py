"""The journal says "applying" on the head and on the node before a step runs, durably and
privately; a rollback re-reads such a step and restores its `before`."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest

from fixes.steps import mtu_step
from strixwizard.fixing.engine import apply_plan, rollback_run
from strixwizard.fixing.journal import JournalStore, NodeJournal
from strixwizard.fixing.model import Plan, Read, SitePlan, Step
from strixwizard.fixing.runner import Runner
from strixwizard.probe import Probe
from strixwizard.site import Site


class MemoryNode(Runner):
    """MTUs in a dict; records what the head's and the node's journals said at each apply."""

    def __init__(self, store: JournalStore, mtus: dict[str, str]) -> None:
        self.node, self.where, self.store, self.mtus = "n1", "memory", store, mtus
        self.node_journal = ""
        self.seen: list[tuple[str, str]] = []
        self.crash_after_apply = False

    def read(self, read: Read) -> str | None:
        return self.mtus[read.path]

    def apply(self, step: Step) -> None:
        head = json.loads(next(self.store.root.glob("*/n1.json")).read_text())
        node = json.loads(self.node_journal)
        self.seen.append((head["steps"][0]["status"], node["steps"][0]["status"]))
        self.mtus[step.target] = step.after or ""
        if self.crash_after_apply:
            raise KeyboardInterrupt  # stands for a kill: nothing after this line runs

    def undo(self, step: Step, before: str | None) -> None:
        self.mtus[step.target] = before or ""

    def save_journal(self, run_id: str, text: str) -> str:
        self.node_journal = text
        return f"/var/lib/strixwizard/journal/{run_id}.json"

    def probe(self) -> Probe:
        raise NotImplementedError


def plan() -> SitePlan:
    return SitePlan("lab", [Plan("net.mtu", "n1", "n1:fab0", (mtu_step("fab0", 1500, 9000),))])


def test_intent_is_saved_before_the_step_and_files_are_private(tmp_path: Path) -> None:
    store = JournalStore(tmp_path / "state" / "journal")
    node = MemoryNode(store, {"fab0": "1500"})
    report = apply_plan(plan(), {"n1": node}, store, Site("lab"), {})
    assert report.status == "applied"
    assert node.seen == [("applying", "applying")]
    path = store.path(report.run_id, "n1")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(store.root.stat().st_mode) == 0o700


def test_a_crash_during_a_step_is_rolled_back_from_applying(tmp_path: Path) -> None:
    store = JournalStore(tmp_path / "journal")
    node = MemoryNode(store, {"fab0": "1500"})
    node.crash_after_apply = True
    with pytest.raises(KeyboardInterrupt):
        apply_plan(plan(), {"n1": node}, store, Site("lab"), {})
    assert node.mtus["fab0"] == "9000"
    (journal,) = store.load_run(None)
    assert journal.steps[0].status == "applying"

    def runner_for(_: NodeJournal) -> Any:
        node.crash_after_apply = False
        return node

    report = rollback_run([journal], runner_for, store)
    assert report.ok and node.mtus["fab0"] == "1500"
    assert "was in progress when the run stopped: found '9000' (it had landed" in (
        report.nodes[0].state)

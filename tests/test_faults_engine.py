"""The head's journal failing at EVERY save of a run, one save at a time, on snapshot copies
(dry runs: the runners change a copy of each snapshot as a node would). The store here is a
STAND-IN for a full disk: its Nth save raises the OSError a full disk raises (ENOSPC); the
namespace lab does the same with a real tmpfs at chosen points (tests/test_faults_lab.py).
Whatever save fails, the run ends stopped or aborted (or, past the last save, applied), never
with an exception, and a stopped node is exactly as it was."""

from __future__ import annotations

import errno
from pathlib import Path

from strixwizard.fixing.journal import JournalStore, NodeJournal
from tests.test_fix_apply import build, run, tree_state

FIXES = ("net.mtu", "dcb.pfc", "ethtool.pause_off", "dcb.fw_lldp_off")


class FailingStore(JournalStore):
    """Raises ENOSPC on save number `fail_at` and every save after it (the disk stays full)."""

    def __init__(self, root: Path, fail_at: int) -> None:
        super().__init__(root)
        self.fail_at, self.saves = fail_at, 0

    def save(self, journal: NodeJournal) -> Path:
        self.saves += 1
        if self.saves >= self.fail_at:
            raise OSError(errno.ENOSPC, "No space left on device")
        return super().save(journal)


def test_every_head_save_failing_stops_the_run_and_restores_the_node(tmp_path: Path) -> None:
    site, roots = build(tmp_path / "count")
    counting = FailingStore(tmp_path / "count" / "journal", fail_at=10 ** 6)
    _plan, whole = run(site, roots, counting, only=FIXES)
    assert whole.status == "applied"
    total = counting.saves
    assert total >= 6  # journals, then intent and outcome of every step
    for fail_at in range(1, total + 1):
        where = tmp_path / f"at{fail_at}"
        site, roots = build(where)
        before = {name: tree_state(root) for name, root in roots.items()}
        store = FailingStore(where / "journal", fail_at)
        _plan, report = run(site, roots, store, only=FIXES)
        assert report.status in ("aborted", "stopped"), (fail_at, report.status, report.message)
        assert report.journal_problems, fail_at
        assert all("No space left on device (errno 28 ENOSPC)" in p for p in report.journal_problems)
        for name, root in roots.items():
            assert tree_state(root) == before[name], (fail_at, name, report.to_json())
        assert all(r.status in ("pending", "rolled-back", "skipped")
                   for n in report.nodes for r in n.steps), (fail_at, report.to_json())

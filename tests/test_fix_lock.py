"""A second apply or rollback is refused at once: the site's lock is taken before anything is
read or asked (`fix --rollback` and `deploy --rollback` as well as the applies), it is
re-entrant for the thread that holds it (the engine takes it again around the steps) and
exclusive for every other thread and process; the wizard shows the refusal."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from fixes.steps import mtu_step
from strixwizard.fixing.journal import JournalStore, NodeJournal, StepRecord, new_run_id
from strixwizard.fixing.lock import LockHeld, site_lock
from strixwizard.fixing.model import Plan
from strixwizard.services import deploy as deploying
from strixwizard.services import fix as fixing
from strixwizard.services.common import Question
from strixwizard.tui.steps import key_of


@contextmanager
def held_by_another_thread(store_root: Path, site: str, command: str) -> Iterator[None]:
    """`site`'s lock held by another thread of this process for the block."""
    taken, release = threading.Event(), threading.Event()
    failure: list[BaseException] = []

    def hold() -> None:
        try:
            with site_lock(store_root, site, command):
                taken.set()
                release.wait(30)
        except BaseException as error:  # shown by the assertion below
            failure.append(error)
            taken.set()

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    assert taken.wait(30) and not failure, failure
    try:
        yield
    finally:
        release.set()
        thread.join(30)


def never_asked(question: Question) -> bool:
    raise AssertionError(f"asked {question.title!r} while another run holds the lock")


def saved_run(store: JournalStore, site: str = "lab") -> str:
    run_id = new_run_id()
    step = mtu_step("fab0", 1500, 9000)
    record = StepRecord(0, step)
    record.status = "applied"
    journal = NodeJournal(run_id, "node0", site, "ssh root@10.99.255.254", {"kind": "ssh"}, False,
                          [Plan("net.mtu", "node0", "node0:fab0", (step,))], [record],
                          status="applied")
    store.save(journal)
    return run_id


def test_site_lock_is_reentrant_in_its_thread_only(tmp_path: Path) -> None:
    root = tmp_path / "journal"
    with site_lock(root, "lab", "fix --apply") as outer:
        with site_lock(root, "lab", "fix --apply") as inner:
            assert inner is outer
        refused: list[BaseException] = []

        def other() -> None:
            try:
                with site_lock(root, "lab", "deploy --apply"):
                    pass
            except LockHeld as error:
                refused.append(error)

        thread = threading.Thread(target=other)
        thread.start()
        thread.join(30)
        assert len(refused) == 1 and "wait for it to finish" in str(refused[0])
        # the inner exit did not release it: another process would still be refused
        assert (tmp_path / "locks" / "lab.lock").read_text().startswith("{")
    assert (tmp_path / "locks" / "lab.lock").read_text() == ""
    with site_lock(root, "lab", "fix --apply"):  # free again
        pass


def test_fix_rollback_is_refused_before_the_question(tmp_path: Path) -> None:
    store = JournalStore(tmp_path / "journal")
    run_id = saved_run(store)
    with (held_by_another_thread(store.root, "lab", "fix --apply"),
          pytest.raises(LockHeld, match=r"site 'lab' .* is locked by `strixwizard fix --apply`")):
        fixing.rollback(run_id, never_asked, fixing.FixOptions(journal_dir=store.root))


def test_deploy_rollback_is_refused_before_the_question(tmp_path: Path) -> None:
    store = JournalStore(tmp_path / "deploy-journal")
    run_id = saved_run(store)
    # fix and deploy journals share the head's lock directory: one change at a time per site
    with (held_by_another_thread(tmp_path / "journal", "lab", "fix --apply"),
          pytest.raises(LockHeld, match=r"is locked by `strixwizard fix --apply`")):
        deploying.rollback(run_id, never_asked, deploying.DeployOptions(journal_dir=store.root))


def test_dry_run_rollback_takes_no_lock(tmp_path: Path) -> None:
    store = JournalStore(tmp_path / "journal")
    run_id = saved_run(store)
    (journal,) = store.load_run(run_id)
    journal.dry_run = True
    store.save(journal)
    asked: list[str] = []

    def no(question: Question) -> bool:
        asked.append(question.title)
        return False

    with held_by_another_thread(store.root, "lab", "fix --apply"), pytest.raises(Exception) as raised:
        fixing.rollback(run_id, no, fixing.FixOptions(journal_dir=store.root))
    assert asked == ["Roll back"] and not isinstance(raised.value, LockHeld)


def test_the_wizard_shows_the_refusal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    from strixwizard.services.common import Confirm, OnStep
    from strixwizard.services.discover import Discovery
    from strixwizard.services.facade import Services
    from strixwizard.tui.app import WizardApp
    from strixwizard.tui.screens.fix import FixState
    from strixwizard.tui.widgets.notice import Notice

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    holder = {"command": "fix --apply", "site": "demo", "pid": 4242, "host": "head-1",
              "started": "2026-12-01T10:00:00+00:00"}

    class Locked(Services):
        def apply_fixes(self, found: Discovery, confirm: Confirm, on_step: OnStep | None
                        ) -> fixing.Applied:
            raise LockHeld("site 'demo' (/state/locks/demo.lock)", holder)

    async def walk() -> None:
        app = WizardApp(services=Locked(demo_seconds=0.3), demo=True)
        async with app.run_test(size=(100, 40)) as pilot:
            await pilot.press(key_of("fix"))
            await app.workers.wait_for_complete()
            await pilot.pause()
            await pilot.press("a")
            await app.workers.wait_for_complete()
            await pilot.pause()
            await pilot.pause()
            error = app.session.of(FixState).run_error or ""
            assert error.startswith("refused, nothing was changed: site 'demo'"), error
            assert "`strixwizard fix --apply` (pid 4242 on head-1" in error
            shown = str(app.screen.query_one("#fix-run", Notice).render())
            assert "refused, nothing was changed" in shown and "pid 4242" in shown
            assert "LockHeld(" not in shown

    asyncio.run(walk())

"""A second apply or rollback is refused at once: the site's lock is taken once per run, before
anything is read or asked (`fix --rollback` and `deploy --rollback` as well as the applies),
and handed down to the engine; it is exclusive for every other take, in this thread or
another, in this process or another; the wizard shows the refusal."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from fixes.steps import mtu_step
from strixwizard.fixing.journal import JournalStore, NodeJournal, StepRecord, new_run_id
from strixwizard.fixing.lock import LockHeld, site_lock
from strixwizard.fixing.model import Plan, SitePlan
from strixwizard.node.replay import ReplayConnector
from strixwizard.onnode import ops
from strixwizard.probe.snapshot import SnapshotProbe
from strixwizard.services import deploy as deploying
from strixwizard.services import fix as fixing
from strixwizard.services.common import Question
from strixwizard.tui.steps import key_of

DEMO_SNAPSHOTS = Path(__file__).resolve().parent.parent / "strixwizard" / "demo" / "snapshots"
DEMO_NODES = ("node-a", "node-b")


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


def test_site_lock_is_exclusive_even_in_the_thread_that_holds_it(tmp_path: Path) -> None:
    """Taken once per run and handed down: a second take, even by the same thread, is another
    run and is refused (a `flock` of its own), naming the holder."""
    root = tmp_path / "journal"
    with site_lock(root, "lab", "fix --apply") as holder:
        with pytest.raises(LockHeld, match="wait for it to finish"), \
                site_lock(root, "lab", "deploy --apply"):
            pass
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
        # the refused takes did not release it: another process would still be refused
        assert json.loads((tmp_path / "locks" / "lab.lock").read_text())["pid"] == holder["pid"]
    assert (tmp_path / "locks" / "lab.lock").read_text() == ""
    with site_lock(root, "lab", "fix --apply"):  # free again
        pass


def replayed_lab(tmp_path: Path) -> tuple[Path, ReplayConnector]:
    """A site file of the demo's two nodes reached over SSH (not snapshots: a real run), and a
    connector that answers from their snapshots."""
    specs = [f"  - name: {name}\n    host: 10.99.250.{i + 1}\n" for i, name in enumerate(DEMO_NODES)]
    site_file = tmp_path / "lab.yaml"
    site_file.write_text("site: lab\nnodes:\n" + "".join(specs), encoding="utf-8")
    probes = {name: SnapshotProbe.load(DEMO_SNAPSHOTS / f"{name}.tar.gz") for name in DEMO_NODES}
    return site_file, ReplayConnector(probes=probes)


@contextmanager
def counted_site_locks(site: str) -> Iterator[list[str]]:
    """Every take of `site`'s lock on the head (each `lock` request for its lock file)."""
    taken: list[str] = []
    real = ops.handle

    def handle(request: dict[str, Any]) -> dict[str, Any]:
        if request.get("op") == "lock" and str(request.get("path", "")).endswith(f"/{site}.lock"):
            taken.append(str(request["holder"]["command"]))
        return real(request)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ops, "handle", handle)
        yield taken


def test_a_fix_run_takes_the_site_lock_once(tmp_path: Path) -> None:
    from strixwizard.services.discover import discover
    from strixwizard.services.nodes import RunRequest

    site_file, connector = replayed_lab(tmp_path)
    found = discover(RunRequest(site_file=site_file), connector=connector)
    assert found.plan is not None and found.plan.changes and not found.found.dry_run
    options = fixing.FixOptions(journal_dir=tmp_path / "journal", connector=connector)
    asked: list[str] = []
    looked: list[int] = []
    real_unfinished = JournalStore.unfinished

    def unfinished(store: JournalStore, *args: Any, **kwargs: Any) -> Any:
        looked.append(1)
        return real_unfinished(store, *args, **kwargs)

    with counted_site_locks("lab") as taken, pytest.MonkeyPatch.context() as patch:
        patch.setattr(JournalStore, "unfinished", unfinished)
        applied = fixing.apply(found.found, found.report, found.plan,
                               lambda q: asked.append(q.title) or True, options)
    assert asked == ["Apply the fixes"] and not applied.report.dry_run
    assert taken == ["fix --apply"] and len(looked) == 1  # unfinished runs looked for once


def test_the_engine_changes_real_nodes_only_under_the_lock_it_is_handed(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from strixwizard.fixing.engine import apply_plan, rollback_run
    from strixwizard.site import Site

    store = JournalStore(tmp_path / "journal")
    plan = SitePlan("lab", [Plan("net.mtu", "node0", "node0:fab0", (mtu_step("fab0", 1500, 9000),))])
    real: Any = {"node0": SimpleNamespace(dry_run=False)}
    with pytest.raises(ValueError, match="needs the site's lock"):
        apply_plan(plan, real, store, Site("lab"), {}, dry_run=False, holder=None)
    with pytest.raises(ValueError, match="dry run on every node or on none"):
        apply_plan(plan, real, store, Site("lab"), {}, dry_run=True, holder=None)
    with pytest.raises(ValueError, match="needs the site's lock"):
        rollback_run(store.load_run(saved_run(store)), lambda journal: real["node0"], store,
                     holder=None)
    assert not (tmp_path / "locks").exists()  # and it took none of its own


def test_a_rollback_takes_the_site_lock_once(tmp_path: Path) -> None:
    store = JournalStore(tmp_path / "journal")
    run_id = saved_run(store)
    (journal,) = store.load_run(run_id)
    journal.runner = {"kind": "ssh", "host": "10.99.255.254", "user": "root", "port": 22,
                      "known_hosts": str(tmp_path / "known_hosts")}
    store.save(journal)
    options = fixing.FixOptions(journal_dir=store.root,
                                connector=ReplayConnector(unreachable={"node0": "refused"}))
    with counted_site_locks("lab") as taken:
        report = fixing.rollback(run_id, lambda question: True, options)
    assert taken == ["fix --rollback"] and [n.status for n in report.nodes] == ["unreachable"]


def test_a_second_concurrent_fix_run_is_refused_with_the_same_message_and_status(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`fix --apply` while another run holds the site: refused at once, exit status 2, the
    holder named, before any node is read or anything asked."""
    from tests.support.cli import invoke

    site_file, _ = replayed_lab(tmp_path)
    state = tmp_path / "state"
    monkeypatch.setattr("strixwizard.services.nodes.site_nodes", never_read)
    with (held_by_another_thread(state / "strixwizard" / "journal", "lab", "fix --apply"),
          counted_site_locks("lab") as taken):
        refused = invoke("fix", "--site", str(site_file), "--apply", "--yes",
                         env={"XDG_STATE_HOME": str(state)})
    assert refused.rc == 2, refused.stdout + refused.stderr
    assert "site 'lab'" in refused.stderr and "is locked by `strixwizard fix --apply` (pid " in \
        refused.stderr and "wait for it to finish; one apply or rollback at a time" in refused.stderr
    assert taken == ["fix --apply"]  # the refused run tried once, and read nothing


def never_read(*args: object, **kwargs: object) -> None:
    raise AssertionError("the refused run read the nodes")


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
    from strixwizard.services.discover import Diagnosis
    from strixwizard.services.facade import Services
    from strixwizard.tui.app import WizardApp
    from strixwizard.tui.screens.fix import FixState
    from strixwizard.tui.widgets.notice import Notice

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    holder = {"command": "fix --apply", "site": "demo", "pid": 4242, "host": "head-1",
              "started": "2026-12-01T10:00:00+00:00"}

    class Locked(Services):
        def apply_fixes(self, found: Diagnosis, confirm: Confirm, on_step: OnStep | None
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

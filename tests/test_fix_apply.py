"""Apply, verify and roll back on snapshot copies (dry runs), the journal (the intent saved before
each step, privately; a save that fails at any point; paths that stay in their run directory),
and the `fix` command line.

The runners change a copy of each snapshot exactly as a node would change; the
drift check, journals, link-wide rollback and verification are the real ones.
"""

from __future__ import annotations

import errno
import json
import stat
from pathlib import Path
from typing import Any

import pytest

from checks import ALL
from fixes import BY_ID, FIXES
from fixes.steps import mtu_step
from strixwizard.demo.hardware import RoceSetup
from strixwizard.discovery import Discovery
from strixwizard.facts import NodeFacts
from strixwizard.fixing.engine import apply_plan, restoring, rollback_run, shown, verify
from strixwizard.fixing.journal import JournalStore, NodeJournal
from strixwizard.fixing.lock import holder_record
from strixwizard.fixing.model import Kind, Plan, Read, SitePlan, Step
from strixwizard.fixing.planning import plan_site
from strixwizard.fixing.runner import Runner, SnapshotRunner, StepFailed, Unreachable, with_active_mtu
from strixwizard.fixing.site_apply import runner_from_journal
from strixwizard.probe import Probe
from strixwizard.probe.snapshot import SnapshotProbe
from strixwizard.site import NodeSpec, Site
from tests.support.cli import invoke
from tests.support.demo import demo_site_copy, printed_lines, state_env
from tests.support.fixplans import SITE_FABRIC, checked, pair

BAD_B = RoceSetup(mtu=1500, pfc=(), fw_lldp=True, pause=(True, True), roce_mode="RoCE v2")


def build(tmp_path: Path, setup_b: RoceSetup = BAD_B) -> tuple[Site, dict[str, Path]]:
    roots = {}
    for name, node in pair(setup_b).items():
        out = tmp_path / "snap" / name
        out.mkdir(parents=True)
        roots[name] = node.capture(out)
    site = Site(name="t", nodes=tuple(NodeSpec(name=n, snapshot=str(p)) for n, p in roots.items()),
                fabric=SITE_FABRIC)
    return site, roots


def facts(roots: dict[str, Path]) -> dict[str, NodeFacts]:
    return {n: NodeFacts(n, SnapshotProbe.load(p)) for n, p in roots.items()}


def run(site: Site, roots: dict[str, Path], store: JournalStore, runners=None, only=()):
    before = facts(roots)
    plan = plan_site(Discovery.of_facts(site, list(before.values())), only, fixes=FIXES)
    runners = runners or {n: SnapshotRunner(n, p) for n, p in roots.items()}
    descriptors = {n: {"kind": "snapshot", "root": str(p)} for n, p in roots.items()}
    dry = all(r.dry_run for r in runners.values())
    report = apply_plan(plan, runners, store, site, descriptors, dry_run=dry,
                        holder=None if dry else holder_record("fix --apply", site.name),
                        verify_with=lambda after: verify(*checked(site, before), plan,
                                                          after, checks=ALL, fixes=BY_ID))
    return plan, report


def tree_state(root: Path) -> dict[str, object]:
    files = {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*"))
             if p.is_file() and not p.is_symlink() and "var/lib/strixwizard" not in str(p)
             and p.name != "commands.json"}
    files["commands"] = json.loads((root / "commands.json").read_text())
    return files


def test_apply_changes_the_copy_verifies_and_a_second_apply_changes_nothing(tmp_path: Path) -> None:
    site, roots = build(tmp_path)
    store = JournalStore(tmp_path / "journal")
    _plan, report = run(site, roots, store, only=("net.mtu", "dcb.pfc", "ethtool.pause_off",
                                                 "dcb.fw_lldp_off"))
    assert report.status == "applied" and report.dry_run
    b = next(n for n in report.nodes if n.node == "node-b")
    assert [r.status for r in b.steps if r.step.persistence is None] == ["applied"] * 4
    verdicts = {(v.fix, v.node): v.status for v in report.verification}
    assert verdicts[("dcb.pfc", "node-b")] == "cured"
    # pause was no fault before (no PFC yet): turned off because this run turns PFC on
    assert verdicts[("ethtool.pause_off", "node-b")] == "passing"
    assert verdicts[("dcb.fw_lldp_off", "node-b")] == "cured"
    node_b = NodeFacts("node-b", SnapshotProbe.load(roots["node-b"]))
    assert node_b.netdev("enp194s0np0").mtu == 9000
    assert node_b.dcb("enp194s0np0").pfc_enabled == (3,)
    assert (roots["node-b"] / "fs/etc/systemd/system/strixwizard-dcb-pfc-enp194s0np0.service").exists()
    journal = json.loads(Path(b.journal).read_text())
    assert journal["status"] == "applied" and journal["run_id"] == report.run_id
    assert Path(b.journal_on_node).is_file()
    again_plan, again = run(site, roots, store, only=("net.mtu", "dcb.pfc", "ethtool.pause_off",
                                                      "dcb.fw_lldp_off"))
    assert again_plan.changes == 0 and again.status == "nothing-to-do"


def test_rollback_restores_the_tree_exactly(tmp_path: Path) -> None:
    site, roots = build(tmp_path)
    original = {n: tree_state(p) for n, p in roots.items()}
    store = JournalStore(tmp_path / "journal")
    _, report = run(site, roots, store)
    assert report.status == "applied"
    assert tree_state(roots["node-b"]) != original["node-b"]
    rolled = rollback_run(store.load_run(None), runner_from_journal, store, holder=None)
    assert rolled.ok, rolled.to_json()
    for name, root in roots.items():
        assert tree_state(root) == original[name], name


def test_drift_aborts_before_anything_is_touched(tmp_path: Path) -> None:
    site, roots = build(tmp_path)
    before = facts(roots)
    plan = plan_site(Discovery.of_facts(site, list(before.values())), ("net.mtu", "ethtool.pause_off"),
                     fixes=FIXES)
    # someone changes the MTU of node-b after the plan was made
    mtu = next(roots["node-b"].glob("fs/sys/devices/**/net/enp194s0np0/mtu"))
    mtu.write_text("4000\n")
    original = tree_state(roots["node-b"])
    store = JournalStore(tmp_path / "journal")
    runners = {n: SnapshotRunner(n, p) for n, p in roots.items()}
    report = apply_plan(plan, runners, store, site, {}, dry_run=True, holder=None)
    assert report.status == "aborted"
    assert "enp194s0np0 changed since the plan was made (planned from '1500', now '4000')" in report.message
    assert "nothing was changed on any node" in report.message
    assert tree_state(roots["node-b"]) == original
    assert store.runs() == []  # no journal: nothing was about to change


class FailingRunner(SnapshotRunner):
    """A node that refuses one step (by summary), as a driver would."""

    def __init__(self, node: str, root: Path, refuse: str, unreachable: bool = False) -> None:
        super().__init__(node, root)
        self.refuse, self.unreachable = refuse, unreachable

    def apply(self, step: Step) -> None:
        if self.refuse in step.summary:
            if self.unreachable:
                raise Unreachable("connection lost (the session ended)")
            raise StepFailed("`dcb pfc set` failed: Error: Operation not supported.")
        super().apply(step)


def test_a_failing_step_rolls_back_its_node_and_the_other_end_of_the_link(tmp_path: Path) -> None:
    setup = RoceSetup(mtu=1500, pfc=(), roce_mode="RoCE v2")
    site, roots = build(tmp_path, setup)
    # node-a wants MTU too, so both ends change; node-b then fails on PFC
    a_mtu = next(roots["node-a"].glob("fs/sys/devices/**/net/enp194s0np0/mtu"))
    a_mtu.write_text("1500\n")
    # and, as on a real node, its RoCE port's active MTU follows (1024 at MTU 1500)
    commands_file = roots["node-a"] / "commands.json"
    commands = json.loads(commands_file.read_text())
    for entry in commands:
        if entry["argv"] == ["ibv_devinfo"]:
            entry["stdout"] = with_active_mtu(entry["stdout"], "rocep194s0", 1, (1024, 3))
    commands_file.write_text(json.dumps(commands))
    original = {n: tree_state(p) for n, p in roots.items()}
    store = JournalStore(tmp_path / "journal")
    runners = {"node-a": SnapshotRunner("node-a", roots["node-a"]),
               "node-b": FailingRunner("node-b", roots["node-b"], "PFC on priority")}
    _plan, report = run(site, roots, store, runners, only=("net.mtu", "dcb.pfc"))
    assert report.status == "failed"
    a, b = report.nodes
    assert b.status == "rolled-back"
    assert "PFC on priority 3 only on enp194s0np0' failed: `dcb pfc set` failed: Error: Operation " \
           "not supported." in b.state and "the node is as it was" in b.state
    assert a.status == "rolled-back" and "node-b did not complete" in a.state
    for name, root in roots.items():
        assert tree_state(root) == original[name], name


def test_an_unreachable_node_is_reported_with_its_journal_for_a_later_rollback(tmp_path: Path
                                                                              ) -> None:
    setup = RoceSetup(mtu=1500, pfc=(), roce_mode="RoCE v2")
    site, roots = build(tmp_path, setup)
    store = JournalStore(tmp_path / "journal")
    runners = {"node-a": SnapshotRunner("node-a", roots["node-a"]),
               "node-b": FailingRunner("node-b", roots["node-b"], "PFC on priority", True)}
    _, report = run(site, roots, store, runners, only=("net.mtu", "dcb.pfc"))
    b = next(n for n in report.nodes if n.node == "node-b")
    assert b.status == "interrupted"
    assert "unreachable during 'PFC on priority 3 only on enp194s0np0'" in b.state
    assert "applied before it: set the MTU of enp194s0np0 to 9000" in b.state
    assert f"--rollback {report.run_id}" in b.state
    journal = json.loads(Path(b.journal).read_text())
    status = {s["summary"]: s["status"] for s in journal["steps"]}
    assert status["set the MTU of enp194s0np0 to 9000"] == "applied"
    assert status["PFC on priority 3 only on enp194s0np0"] == "unknown"
    assert journal["status"] == "interrupted"
    rolled = rollback_run(store.load_run(report.run_id), runner_from_journal, store, holder=None)
    assert rolled.ok
    assert NodeFacts("b", SnapshotProbe.load(roots["node-b"])).netdev("enp194s0np0").mtu == 1500


# -- the command line -----------------------------------------------------------

@pytest.fixture
def state(tmp_path: Path) -> dict[str, str]:
    return {"XDG_STATE_HOME": str(tmp_path / "state")}


def test_fix_demo_shows_the_plan_per_node_with_before_and_after(cli, state) -> None:
    result = cli("fix", "--demo", env=state)
    assert result.rc == 0, result.stderr
    out = result.stdout
    assert "Fix plan for site demo (snapshots: applying is a dry run on copies)" in out
    assert "node-b:" in out and "enp194s0np0: 1500 → 9000" in out
    assert "run:  ethtool -A enp194s0np0 rx off tx off" in out
    assert "undo: ethtool -A enp194s0np0 rx on tx on" in out
    assert "Apply with: strixwizard fix --demo --apply" in out


def test_fix_json_is_one_document_with_plans_and_steps(cli, state) -> None:
    result = cli("fix", "--demo", "--json", "--only", "net.mtu", env=state)
    doc = result.json()
    assert doc["mode"] == "plan" and doc["dry_run"] is True and doc["schema_version"] == 1
    assert doc["summary"] == {"changes": 2, "plans": 1, "manual": 0, "problems": 10, "failed": 3,
                              "warnings": 7, "errors": 0, "cured_by_plan": 2, "by_hand": 0,
                              "not_planned": 8}
    (plan,) = doc["plans"]
    assert plan["fix"] == "net.mtu" and plan["node"] == "node-b"
    step = plan["steps"][0]
    assert (step["kind"], step["target"], step["before"], step["after"]) == (
        "mtu", "enp194s0np0", "1500", "9000")


def test_apply_without_a_terminal_or_yes_is_refused(cli, state) -> None:
    result = cli("fix", "--demo", "--apply", env=state)
    assert result.rc == 2
    assert "refusing to change nodes without confirmation" in result.stderr
    assert "--yes" in result.stderr


def test_apply_on_the_demo_is_a_labelled_dry_run_then_rollback(cli, state, tmp_path: Path) -> None:
    demo = Path(__file__).resolve().parent.parent / "strixwizard/demo/snapshots"
    before = {p: p.read_bytes() for p in demo.rglob("*") if p.is_file() and not p.is_symlink()}
    result = cli("fix", "--demo", "--apply", "--yes", "--json", env=state)
    doc = result.json()
    assert result.rc in (0, 1)
    assert doc["mode"] == "apply" and doc["apply"]["dry_run"] is True
    assert doc["apply"]["status"] == "applied"
    run_id = doc["apply"]["run_id"]
    assert {v["status"] for v in doc["apply"]["verification"]} <= {"cured", "passing", "not-cured",
                                                                  "not-verified", "pending-reboot"}
    assert before == {p: p.read_bytes() for p in before}, "the bundled demo must never change"
    text = cli("fix", "--demo", "--rollback", run_id, "--yes", env=state)
    assert text.rc == 0, text.stdout + text.stderr
    assert f"Rollback of run {run_id}: done" in text.stdout


def test_emit_ansible_writes_inventory_and_playbook(cli, state, tmp_path: Path) -> None:
    import yaml

    out = tmp_path / "ansible"
    result = cli("fix", "--demo", "--emit", "ansible", str(out), env=state)
    assert result.rc == 0, result.stderr
    from tests.support.ansible import UnsafeLoader

    inventory = yaml.load((out / "inventory.yml").read_text(), Loader=UnsafeLoader)
    # node-a's faults in the demo (PCIe x4 slot, counters) have no automated cure: it plans nothing
    assert set(inventory["all"]["hosts"]) == {"node-b"}
    plays = yaml.load((out / "playbook.yml").read_text(), Loader=UnsafeLoader)
    b = next(p for p in plays if p["hosts"] == "node-b")
    assert b["become"] is True
    commands = [t["ansible.builtin.command"]["argv"] for t in b["tasks"]
                if "ansible.builtin.command" in t]
    assert ["ip", "link", "set", "dev", "enp194s0np0", "mtu", "9000"] in commands
    assert ["ethtool", "-A", "enp194s0np0", "rx", "off", "tx", "off"] in commands
    import shutil
    import subprocess
    import sys

    # ansible-core is a test dependency (pyproject's [test] extra): missing it is an error.
    playbook = Path(sys.executable).with_name("ansible-playbook")
    found = str(playbook) if playbook.exists() else shutil.which("ansible-playbook")
    assert found, "ansible-playbook not found: install the test extras (pip install -e '.[test]')"
    check = subprocess.run([found, "--syntax-check", "-i", str(out / "inventory.yml"),
                            str(out / "playbook.yml")], capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stdout + check.stderr


def test_doctor_does_not_import_the_fix_engine() -> None:
    """Doctor reads the fixes' metadata, declared with their (pure) plan functions, and so the
    plan data types; it never loads what plans, applies, journals or reaches a node."""
    import subprocess
    import sys

    code = ("import sys, io, contextlib\nfrom strixwizard.cli.main import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n    main(['doctor', '--demo', '--json'])\n"
            "print(sorted(m for m in sys.modules if m.startswith('strixwizard.fixing')))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ("['strixwizard.fixing', "
                                   "'strixwizard.fixing.context', 'strixwizard.fixing.model', "
                                   "'strixwizard.fixing.readers']")


def test_apply_on_a_terminal_asks_and_no_changes_nothing(tmp_path: Path) -> None:
    import os
    import pty
    import subprocess
    import sys

    main, child = pty.openpty()
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}
    proc = subprocess.Popen([sys.executable, "-m", "strixwizard", "fix", "--demo", "--apply",
                             "--only", "net.mtu"], stdin=child, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, text=True)
    os.close(child)
    os.write(main, b"n\n")
    out, err = proc.communicate(timeout=60)
    os.close(main)
    assert proc.returncode == 2
    assert "Apply 2 change(s) on copies of the snapshots (dry run)? [y/N]" in out
    assert "not confirmed: nothing was changed" in err
    assert not (tmp_path / "state" / "strixwizard" / "journal").exists()


def test_no_python_none_in_restore_words() -> None:
    assert restoring("/etc/x.conf", Kind.FILE, None) == "removing /etc/x.conf, the file strixwizard created"
    assert "None" not in restoring("/sys/x", Kind.MTU, None)
    assert restoring("eth0", Kind.MTU, "1500") == "restoring eth0 to '1500'"
    assert shown(None) == "(absent)" and shown("") == "''"


def test_the_state_folders_a_fix_run_makes_are_private(tmp_path: Path) -> None:
    import os
    import stat

    state = tmp_path / "state"
    state.mkdir()
    os.chmod(state, 0o755)  # as ~/.local/state usually is: left as its owner set it
    done = invoke("fix", "--demo", "--apply", "--yes", env={"XDG_STATE_HOME": str(state)})
    assert done.rc == 0, done.stderr
    own = state / "strixwizard"
    folders = [own, *own.glob("*"), *own.glob("journal/*"), *own.glob("dry-runs/*"),
               *own.glob("dry-runs/*/*")]  # what strixwizard makes, not the copies' insides
    assert any(p.name == "dry-runs" for p in folders)
    loose = [f"{oct(stat.S_IMODE(p.stat().st_mode))} {p}" for p in folders
             if p.is_dir() and stat.S_IMODE(p.stat().st_mode) & 0o077]
    assert not loose, loose
    assert stat.S_IMODE(state.stat().st_mode) == 0o755


# -- the command line on the demo as a user's own site file ----------------------------

@pytest.fixture
def site_copy(tmp_path: Path) -> Path:
    """The demo site as a user's own site file in another directory (snapshot nodes)."""
    return demo_site_copy(tmp_path)


def test_fix_plan_names_the_apply_for_the_same_site_and_selection(site_copy: Path, tmp_path: Path) -> None:
    result = invoke("fix", "--site", str(site_copy), "--only", "net.mtu", env=state_env(tmp_path))
    assert result.rc == 0, result.stderr
    assert printed_lines(result)[-1] == (
        f"2 change(s) planned. Apply with: strixwizard fix --site '{site_copy}' --only net.mtu --apply")


def test_fix_apply_without_terminal_prints_the_refusal_alone(site_copy: Path, tmp_path: Path) -> None:
    result = invoke("fix", "--site", str(site_copy), "--apply", env=state_env(tmp_path))
    assert result.rc == 2 and result.stdout == ""
    assert result.stderr.startswith("strixwizard: error: refusing to change nodes without confirmation")
    assert f"strixwizard fix --site '{site_copy}' --apply --yes" in result.stderr


def test_fix_apply_does_not_suggest_itself_and_its_undo_names_the_journal(site_copy: Path,
                                                                         tmp_path: Path) -> None:
    journals = tmp_path / "journals"
    result = invoke("fix", "--site", str(site_copy), "--apply", "--yes", "--journal-dir", str(journals),
                     "--dry-run-dir", str(tmp_path / "dry"), env=state_env(tmp_path))
    assert result.rc in (0, 1), result.stderr
    assert "Apply with" not in result.stdout
    assert f"Undo this run with: strixwizard fix --journal-dir {journals} --rollback " in result.stdout


# -- the journal ---------------------------------------------------------------------

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


#: The site's lock as a caller that took it hands it to the engine (these runners keep no lock).
HOLDER = holder_record("fix --apply", "lab")


def one_mtu_step() -> SitePlan:
    """One MTU step on n1, 1500 to 9000."""
    return SitePlan("lab", [Plan("net.mtu", "n1", "n1:fab0", (mtu_step("fab0", 1500, 9000),))])


def test_intent_is_saved_before_the_step_and_files_are_private(tmp_path: Path) -> None:
    store = JournalStore(tmp_path / "state" / "journal")
    node = MemoryNode(store, {"fab0": "1500"})
    report = apply_plan(one_mtu_step(), {"n1": node}, store, Site("lab"), {}, dry_run=False,
                   holder=HOLDER)
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
        apply_plan(one_mtu_step(), {"n1": node}, store, Site("lab"), {}, dry_run=False,
                   holder=HOLDER)
    assert node.mtus["fab0"] == "9000"
    (journal,) = store.load_run(None)
    assert journal.steps[0].status == "applying"

    def runner_for(_: NodeJournal) -> Any:
        node.crash_after_apply = False
        return node

    report = rollback_run([journal], runner_for, store, holder=HOLDER)
    assert report.ok and node.mtus["fab0"] == "1500"
    assert "was in progress when the run stopped: found '9000' (it had landed" in (
        report.nodes[0].state)


@pytest.mark.parametrize("node", ["../../outside", "/abs", "..", "a/../../b"])
def test_head_journal_paths_stay_in_their_run_directory(tmp_path: Path, node: str) -> None:
    store = JournalStore(tmp_path / "journal")
    path = store.path("20260101T000000Z-abcd", node)
    assert path.parent == tmp_path / "journal" / "20260101T000000Z-abcd"
    with pytest.raises(ValueError, match="not a run id"):
        store.path("../x", "n")


# The head's journal failing at EVERY save of a run, one save at a time, on snapshot copies
# (dry runs: the runners change a copy of each snapshot as a node would). The store here is a
# STAND-IN for a full disk: its Nth save raises the OSError a full disk raises (ENOSPC); the
# namespace lab does the same with a real tmpfs at chosen points (tests/test_fix_interrupted_lab.py).
# Whatever save fails, the run ends stopped or aborted (or, past the last save, applied), never
# with an exception, and a stopped node is exactly as it was.

#: The fixes whose steps and journal saves the full-disk test runs through.
SAVED_FIXES = ("net.mtu", "dcb.pfc", "ethtool.pause_off", "dcb.fw_lldp_off")


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
    _plan, whole = run(site, roots, counting, only=SAVED_FIXES)
    assert whole.status == "applied"
    total = counting.saves
    assert total >= 6  # journals, then intent and outcome of every step
    for fail_at in range(1, total + 1):
        where = tmp_path / f"at{fail_at}"
        site, roots = build(where)
        before = {name: tree_state(root) for name, root in roots.items()}
        store = FailingStore(where / "journal", fail_at)
        _plan, report = run(site, roots, store, only=SAVED_FIXES)
        assert report.status in ("aborted", "stopped"), (fail_at, report.status, report.message)
        assert report.journal_problems, fail_at
        assert all("No space left on device (errno 28 ENOSPC)" in p for p in report.journal_problems)
        for name, root in roots.items():
            assert tree_state(root) == before[name], (fail_at, name, report.to_json())
        assert all(r.status in ("pending", "rolled-back", "skipped")
                   for n in report.nodes for r in n.steps), (fail_at, report.to_json())

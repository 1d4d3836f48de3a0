"""The service layer: both front ends call it, it asks before any change, one envelope and exit rule."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from strixwizard.services import deploy, fix, measure
from strixwizard.services.common import NotConfirmed, Question
from strixwizard.services.discover import Diagnosis, discover
from strixwizard.services.nodes import RunRequest
from strixwizard.services.output import emit, envelope, exit_code
from tests.support.imports import imports_of

ROOT = Path(__file__).resolve().parent.parent

#: What assembles the engines; front ends reach it only through strixwizard.services.
ENGINE_ASSEMBLY = {
    "strixwizard.fixing.site_apply", "strixwizard.fixing.engine", "strixwizard.deploy.engine",
    "strixwizard.fixing.planning.plan_site", "strixwizard.live.runner.run_measurement",
    "strixwizard.live.plan", "strixwizard.checking.engine.run_doctor",
    "strixwizard.live.hosts",
}
FRONT_ENDS = ["strixwizard/cli/main.py", "strixwizard/cli/fix.py", "strixwizard/cli/deploy.py",
              "strixwizard/cli/live.py", "strixwizard/cli/live_run.py",
              *[str(p.relative_to(ROOT)) for p in sorted((ROOT / "strixwizard" / "tui").rglob("*.py"))]]


def test_front_ends_never_assemble_the_engines() -> None:
    offenders = {name: sorted(imports_of(ROOT / name) & ENGINE_ASSEMBLY) for name in FRONT_ENDS}
    assert not {k: v for k, v in offenders.items() if v}


@pytest.fixture
def demo() -> Diagnosis:
    return discover(RunRequest(demo=True))


class Answers:
    """A caller's `confirm`: records each question and gives the prepared answer."""

    def __init__(self, answer: bool) -> None:
        self.answer = answer
        self.asked: list[Question] = []

    def __call__(self, question: Question) -> bool:
        self.asked.append(question)
        return self.answer


def test_applying_fixes_asks_first_and_a_no_changes_nothing(demo: Diagnosis, tmp_path: Path) -> None:
    assert demo.plan is not None and demo.plan.changes
    options = fix.FixOptions(journal_dir=tmp_path / "journal")
    no = Answers(False)
    with pytest.raises(NotConfirmed, match="nothing was changed"):
        fix.apply(demo.found, demo.report, demo.plan, no, options)
    assert [q.title for q in no.asked] == ["Apply the fixes"]
    assert "copies of the snapshots (dry run)" in no.asked[0].text
    assert not (tmp_path / "journal").exists() or not any((tmp_path / "journal").iterdir())

    yes = Answers(True)
    events: list[str] = []
    applied = fix.apply(demo.found, demo.report, demo.plan, yes, options,
                        lambda e: events.append(f"{e.node}: {e.message}"))
    assert applied.report.dry_run and applied.dry_run_copies is not None and events
    run_id = applied.report.run_id

    with pytest.raises(NotConfirmed):  # the rollback asks too
        fix.rollback(run_id, Answers(False), options)
    again = Answers(True)
    report = fix.rollback(run_id, again, options)
    assert report.ok and run_id in again.asked[0].text
    assert fix.rollback_outcome(report).startswith("rolled back")


def test_fix_and_deploy_read_doctor_of_their_discovery_and_recheck_only_after_applying(
        demo: Diagnosis, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The tally, the deploy plan's doctor failures and what failed before a fix run come from
    the discovery's own report; doctor runs once more, on the re-probed nodes, to verify."""
    import strixwizard.checking.engine as checking

    runs: list[int] = []
    real = checking.run_doctor

    def counted(*args: Any, **kwargs: Any) -> Any:
        runs.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(checking, "run_doctor", counted)
    assert demo.plan is not None
    fix.tally(demo.report, demo.plan)
    assert deploy.plan(demo.found, demo.report).doctor_failures
    assert runs == []
    options = fix.FixOptions(journal_dir=tmp_path / "journal")
    applied = fix.apply(demo.found, demo.report, demo.plan, Answers(True), options)
    assert applied.report.verification and runs == [1]


def test_deploy_on_snapshots_is_plan_only(demo: Diagnosis) -> None:
    preview = deploy.plan(demo.found, demo.report)
    assert preview.plan is not None and preview.plan_only
    with pytest.raises(Exception, match="replayed from snapshots"):
        deploy.refuse_replayed(preview)


def test_the_demo_test_stream_stops_at_the_cancel(demo: Diagnosis) -> None:
    cancel = measure.Cancel()
    stream = measure.wizard_stream(demo.found, True, cancel, demo_seconds=0.1)
    first = next(stream)
    cancel.cancel()
    assert first.pair == ("node-a", "node-b")
    assert list(stream) == []  # nothing after the cancel, not even RCCL


def test_one_topology_per_discovery(monkeypatch: pytest.MonkeyPatch) -> None:
    """doctor's link checks, the fix plan, the deploy plan and the live tests' pair plan share it."""
    import strixwizard.topology as topology
    from strixwizard.decode.links import usb4_paths
    from strixwizard.live.plan import plan_pair

    built: list[int] = []
    real = topology._build

    def counted(*args: object) -> topology.Topology:
        built.append(1)
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(topology, "_build", counted)
    found = discover(RunRequest(demo=True))
    deploy.plan(found.found, found.report)
    plan_pair(found.found, "node-a", "node-b")
    usb4_paths(found.found, plan_pair(found.found, "node-b", "node-a"))
    assert len(built) == 1


def test_one_envelope_and_one_exit_rule(capsys: pytest.CaptureFixture[str]) -> None:
    document = envelope("lab", mode="plan", status="planned")
    assert list(document)[:6] == ["schema_version", "tool", "generated_at", "site", "mode", "status"]
    emit(document)
    assert capsys.readouterr().out.endswith("}\n")
    assert (exit_code(True), exit_code(False), exit_code(None)) == (0, 1, 2)


HEADER = ("schema_version", "tool", "generated_at", "site")


@pytest.mark.parametrize("words", [
    ("doctor", "--demo"), ("fix", "--demo"), ("deploy", "--demo"), ("test", "latency", "--demo"),
    ("history", "--history", "/nonexistent/strixwizard-history.jsonl"), ("advise", "--model", "Llama-3.1-8B"),
], ids=lambda words: words[0])
def test_every_json_document_starts_with_the_one_envelope(words: tuple[str, ...]) -> None:
    """One header for every command (`services/output.envelope`, `model.document_header`)."""
    from tests.support.cli import invoke

    done = invoke(*words, "--json")
    assert done.rc in (0, 1, 2), done.stderr
    document = done.json()
    assert tuple(document)[:4] == HEADER, (words, tuple(document)[:6])
    assert document["tool"]["name"] == "strixwizard"

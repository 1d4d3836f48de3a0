"""The engine: a broken check becomes one `error` result, and the report stays whole."""

from __future__ import annotations

from collections.abc import Iterator

import fixes
from checks import ALL
from strixwizard.checking.declare import Entry, node_check
from strixwizard.checking.engine import Report, run_doctor, select_checks
from strixwizard.demo.scenarios import strix_halo_node
from strixwizard.discovery import Discovery, reached_node
from strixwizard.facts import NodeFacts
from strixwizard.model import Finding, HostReport, Severity, Status
from strixwizard.probe.snapshot import SnapshotProbe
from strixwizard.site import Site
from tests.support.cli import validate_report


@node_check("test.explodes", entry=Entry(title="Explodes", severity=Severity.LOW, fix=None, why="to test",
                                        reads="nothing", matters="to test", manual="none",
                                        sources=()))
def explodes(node: NodeFacts, site: Site) -> Iterator[Finding]:
    """Raises, as a buggy check would."""
    raise ZeroDivisionError("boom")


def test_a_check_that_raises_is_an_error_result_and_the_rest_still_runs(
    snapshot_of, report_schema
) -> None:
    probe = SnapshotProbe.load(snapshot_of(strix_halo_node("strix-a")))
    node = reached_node("strix-a", probe, "x", "snapshot")
    report = run_doctor(Discovery.of(Site("t"), [node]), (explodes, *ALL), fixes.BY_ID)
    by_id = {r.id: r for r in report.checks}
    assert by_id["test.explodes"].status is Status.ERROR
    assert "ZeroDivisionError('boom')" in by_id["test.explodes"].detail
    assert by_id["node.strix_halo"].status is Status.PASS
    assert report.exit_code() == 1
    validate_report(report.to_json(), report_schema)


def test_exit_codes() -> None:
    host = HostReport("a", "x", "snapshot", reachable=True)
    down = HostReport("b", "y", "ssh", reachable=False, error="timed out")

    def report(statuses: list[Status], hosts: list[HostReport]) -> Report:
        from strixwizard.model import CheckResult

        results = [CheckResult("a.b", "t", "a", "a", s, Severity.LOW, "", "", "", "", None)
                   for s in statuses]
        return Report("s", hosts, results)

    assert report([Status.PASS, Status.SKIP], [host]).exit_code() == 0
    assert report([Status.WARN], [host]).exit_code() == 0
    assert report([Status.WARN], [host]).exit_code(strict=True) == 1
    assert report([Status.FAIL], [host, down]).exit_code() == 1
    assert report([], [down]).exit_code() == 2
    assert report([Status.PASS, Status.FAIL, Status.WARN], [host]).status is Status.FAIL


def test_select_checks_by_area_and_id() -> None:
    assert [c.id for c in select_checks(ALL, ["node.gtt"], [])] == ["node.gtt"]
    assert "node.gtt" not in [c.id for c in select_checks(ALL, [], ["node.gtt"])]


def test_one_rule_for_status_and_exit_code(report_schema) -> None:
    from strixwizard.model import CheckResult

    up = HostReport("a", "x", "snapshot", reachable=True)
    down = HostReport("b", "y", "ssh", reachable=False, error="timed out")

    def report(statuses: list[Status], hosts: list[HostReport], allow: bool = False) -> Report:
        results = [CheckResult("a.b", "t", "a", "a", s, Severity.LOW, "", "", "", "", None)
                   for s in statuses]
        return Report("s", hosts, results, allow_unreachable=allow)

    nothing = report([], [down])
    assert (nothing.status, nothing.exit_code()) == (Status.ERROR, 2)
    assert nothing.to_json()["error"] == "no node could be reached (b: timed out)"
    unjudged = report([], [up])
    assert (unjudged.status, unjudged.exit_code()) == (Status.ERROR, 2)
    assert "no check was judged" in unjudged.to_json()["error"]
    partial = report([Status.PASS], [up, down])
    assert (partial.status, partial.exit_code(), partial.exit_code(strict=True)) == (Status.ERROR, 1, 1)
    assert "error" not in partial.to_json() and partial.to_json()["unreachable"] == ["b"]
    assert report([Status.FAIL], [up, down]).status is Status.FAIL  # worse than error stays
    allowed = report([Status.PASS], [up, down], allow=True)
    assert (allowed.status, allowed.exit_code()) == (Status.PASS, 0)
    assert report([Status.WARN], [up, down], allow=True).exit_code(strict=True) == 1
    assert report([], [down], allow=True).exit_code() == 2  # allowing never makes a verdict
    for document in (nothing, unjudged, partial, allowed):
        validate_report(document.to_json(), report_schema)

"""The wizard's pure helpers: rows from engine objects, report files, saved progress, host keys,
and the transport notes (USB4 latency said one-way, as everywhere)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from checks import ALL
from fixes import BY_ID
from strixwizard.checking.engine import Report, run_doctor
from strixwizard.discovery import DiscoveredNode, Discovery
from strixwizard.model import HostReport, Status
from strixwizard.present.report import to_html, to_markdown
from strixwizard.services.nodes import RunRequest, resolve_run
from strixwizard.tui.export import save_report
from strixwizard.tui.hostkeys import changed_host_key, unknown_host_key
from strixwizard.tui.saved import WizardState, load_state, save_state, state_path
from strixwizard.tui.steps import STEPS, step_after
from strixwizard.tui.views import all_ports, fix_groups, link_views, node_rows


@pytest.fixture(scope="module")
def demo() -> tuple[Report, list[DiscoveredNode]]:
    site, nodes = resolve_run(RunRequest(demo=True))
    return run_doctor(Discovery.of(site, nodes), ALL, BY_ID), nodes


def test_node_rows_come_from_the_report(demo: tuple[Report, list[DiscoveredNode]]) -> None:
    report, _ = demo
    rows = node_rows(report)
    assert [r.name for r in rows] == [h.name for h in report.hosts]
    assert all(r.state == "ok" and r.gfx == "gfx1151" for r in rows)


def test_unreachable_node_row_says_why() -> None:
    host = HostReport("n1", "root@x", "ssh", False, "connection refused")
    report = Report(site="s", hosts=[host], checks=[])
    (row,) = node_rows(report)
    assert row.state == "unreachable" and row.error == "connection refused" and row.sku == "-"


def test_port_rows_and_honest_empty_states(demo: tuple[Report, list[DiscoveredNode]]) -> None:
    _, nodes = demo
    ports = all_ports(nodes)
    assert [p.node for p in ports] == [n.report.name for n in nodes]
    for node, node_ports in zip(nodes, ports, strict=True):
        assert node.facts is not None
        hardware = [d for d in node.facts.rdma if d.is_hardware]
        assert (node_ports.note is None) == bool(hardware)
        shown = {row.rdma for row in node_ports.rows}
        assert all(f"{d.name}/{p.number}" in shown for d in hardware for p in d.ports)
    unreachable = all_ports([DiscoveredNode(HostReport("x", "a", "ssh", False, "timed out"), None)])
    assert unreachable[0].note == "not reachable: timed out"


def test_no_rdma_device_is_said_plainly(snapshot_of) -> None:  # type: ignore[no-untyped-def]
    from strixwizard.demo.builder import FakeNode
    from strixwizard.tui.views import ports_of

    fake = FakeNode("bare")
    fake.cpu()
    path = snapshot_of(fake)
    _, nodes = resolve_run(RunRequest(snapshots=(path,)))
    assert nodes[0].facts is not None
    view = ports_of(nodes[0].facts)
    assert view.note is not None and view.note.startswith("no RDMA device on this node")


def test_links_and_fix_groups(demo: tuple[Report, list[DiscoveredNode]]) -> None:
    report, _ = demo
    views = link_views(report)
    assert len(views) == len(report.links)
    for view in views:
        assert view.warning == (view.transport in ("thunderbolt-net", "ethernet"))
        assert view.note
    groups = fix_groups(report)
    problems = [r for r in report.checks if r.status in (Status.FAIL, Status.WARN, Status.ERROR)]
    assert sum(len(g.results) for g in groups) == len(problems)
    assert all(g.title.split()[0] in ("node", "link", "site") for g in groups)


def test_report_files(tmp_path: Path, demo: tuple[Report, list[DiscoveredNode]]) -> None:
    report, _ = demo
    written = save_report(report, tmp_path / "out", {"source": "demo"})
    assert json.loads(written["json"].read_text()) == json.loads(json.dumps(report.to_json()))
    markdown = to_markdown(report)
    assert markdown.startswith("# strixwizard report: site demo")
    assert "## Checks" in markdown and "## Links" in markdown
    page = to_html(report)
    assert page.startswith("<!doctype html>") and "<script" not in page


def test_state_round_trip_and_bad_files(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    assert load_state(path).step == "site"
    assert save_state(path, WizardState(step="links", visited=["site", "links"])) is None
    assert load_state(path).step == "links"
    path.write_text("{not json")
    assert load_state(path).step == "site"
    path.write_text(json.dumps({"format": "strixwizard-wizard-state/1", "step": "nonsense"}))
    assert load_state(path).step == "site"
    blocked = tmp_path / "file"
    blocked.write_text("")
    assert "cannot save" in (save_state(blocked / "state.json", WizardState()) or "")


def test_state_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert state_path(None, True) == tmp_path / "xdg" / "strixwizard" / "demo-state.json"
    assert state_path(tmp_path / "lab" / "site.yaml", False) == tmp_path / "lab" / ".strixwizard-state.json"


def test_steps_clamp() -> None:
    assert step_after("site", -1).id == "site"
    assert step_after("report", 1).id == "report"
    assert [s.number for s in STEPS] == list(range(1, len(STEPS) + 1))


def test_host_key_messages() -> None:
    error = ("unknown host key for [10.99.2.10]:2222: ssh-ed25519 SHA256:q1W+/abc; if that is the "
             "node's key, trust it with --trust-new-hosts")
    key = unknown_host_key("node-a", error)
    assert key is not None
    assert (key.host, key.key_type) == ("[10.99.2.10]:2222", "ssh-ed25519")
    assert key.fingerprint == "SHA256:q1W+/abc"
    assert unknown_host_key("node-a", "connection refused") is None
    assert changed_host_key("host key for 10.0.0.1 CHANGED: it now offers SHA256:x")


def test_usb4_latency_is_said_one_way_everywhere() -> None:
    from strixwizard.tui.views import TRANSPORT_NOTES
    from strixwizard.vendors.usb4net import TCP_LATENCY, TCP_ONLY

    assert TCP_LATENCY in TRANSPORT_NOTES["thunderbolt-net"] and TCP_LATENCY in TCP_ONLY
    assert "50-130" not in TRANSPORT_NOTES["thunderbolt-net"]

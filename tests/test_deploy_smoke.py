"""Smoke-test verdicts on recorded logs: NET/IB on the planned device passes, a NET/Socket
fallback or another device fails; `ray status` node counts."""

from __future__ import annotations

from pathlib import Path

import pytest

from strixwizard.deploy.engine import make_plan
from strixwizard.deploy.plan import DeployPlan, DeploySettings
from strixwizard.deploy.render import render_smoke
from strixwizard.deploy.smoke import SmokeReport
from strixwizard.deploy.stacks.ray.smoke import (
    all_reduce_argv,
    judge_ray,
    judge_rccl,
    parse_ray_status,
)
from strixwizard.discovery import Discovery
from strixwizard.services.nodes import RunRequest, resolve_run

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def plan() -> DeployPlan:
    site, nodes = resolve_run(RunRequest(demo=True))
    return make_plan(Discovery.of(site, nodes), DeploySettings())


def verdicts(plan: DeployPlan, name: str, rc: int = 0) -> dict[str, tuple[str, str]]:
    log = (DATA / name).read_text()
    return {c.id: (c.status, c.observed) for c in judge_rccl(plan.env, rc, log)}


def test_net_ib_on_the_planned_device_passes(plan: DeployPlan) -> None:
    assert verdicts(plan, "live/all_reduce_perf_gfx1151_net_ib.txt") == {
        "rccl.transport": ("pass", "NET/IB on rocep194s0:1"),
        "rccl.results": ("pass", "7 sizes, avg busbw 2.54512 GB/s, peak 5.81 GB/s")}


def test_net_socket_fallback_fails(plan: DeployPlan) -> None:
    checks = judge_rccl(plan.env, 0, (DATA / "live/all_reduce_perf_gfx1151_net_socket.txt").read_text())
    transport = checks[0]
    assert (transport.status, transport.observed, transport.expected) == (
        "fail", "NET/Socket", "NET/IB on rocep194s0:1")
    assert "fell back to TCP" in transport.detail
    report = SmokeReport(checks)
    assert report.status == "fail" and report.exit_code == 1


def test_net_ib_on_another_device_fails(plan: DeployPlan) -> None:
    assert verdicts(plan, "deploy/all_reduce_perf_other_hca.txt")["rccl.transport"] == (
        "fail", "NET/IB on mlx5_10:1")


def test_a_cut_short_run_fails_and_a_silent_log_has_no_verdict(plan: DeployPlan) -> None:
    assert verdicts(plan, "live/all_reduce_perf_cut_short.txt", rc=1)["rccl.results"][0] == "fail"
    silent = judge_rccl(plan.env, 0, "# nThread 1 nGpus 1\n")
    assert silent[0].status == "error" and SmokeReport(silent).exit_code == 2


def test_ray_status_counts(plan: DeployPlan) -> None:
    two = (DATA / "deploy/ray_status_two_nodes.txt").read_text()
    assert parse_ray_status(two) == 2
    assert parse_ray_status((DATA / "deploy/ray_status_healthy_old.txt").read_text()) == 1
    assert parse_ray_status("nothing here") is None
    ok = judge_ray(plan.env, 0, two, "")
    assert (ok.status, ok.observed, ok.expected) == ("pass", "2 nodes", "2 nodes")
    one = judge_ray(plan.env, 0, (DATA / "deploy/ray_status_healthy_old.txt").read_text(), "")
    assert (one.status, one.observed) == ("fail", "1 nodes")
    down = judge_ray(plan.env, 1, "", "ConnectionError: Could not find any running Ray instance.")
    assert down.status == "fail" and "Could not find any running Ray instance" in down.detail


def test_all_reduce_runs_each_rank_under_its_own_env_file(plan: DeployPlan) -> None:
    assert all_reduce_argv(plan.env, plan.settings) == (
        "mpirun", "--allow-run-as-root", "-np", "2", "-H", "192.168.100.1:1,192.168.100.2:1",
        "--mca", "btl_tcp_if_include", "enp194s0np0", "--mca", "oob_tcp_if_include",
        "enp194s0np0", "-x", "NCCL_DEBUG=INFO", "-x", "NCCL_DEBUG_SUBSYS=INIT,NET",
        "sh", "-ac", '. "$0" && exec "$@"', "/etc/strixwizard/rccl.env",
        "all_reduce_perf", "-b", "8", "-e", "128M", "-f", "2", "-g", "1")


def test_smoke_text(plan: DeployPlan) -> None:
    import io

    out = io.StringIO()
    render_smoke(SmokeReport(judge_rccl(plan.env, 0, (
        DATA / "live/all_reduce_perf_gfx1151_net_socket.txt").read_text())), out)
    text = out.getvalue()
    assert "Smoke test: fail\n  ✗ rccl.transport: NET/Socket (expected NET/IB on rocep194s0:1)" in text
    assert "| stxh-4602-MAPLE:135241:135241 [0] NCCL INFO Using network Socket" in text


def test_a_busbw_of_inf_is_an_error_not_a_peak(plan: DeployPlan) -> None:
    """Ray's smoke all-reduce reads the same table `test rccl` does, by the same rule: a row of
    `inf` was PASS "peak inf GB/s"."""
    log = (DATA / "live/all_reduce_perf_gfx1151_net_ib.txt").read_text()
    row = "23120    5.81    5.81      0"
    assert row in log
    results = {c.id: c for c in judge_rccl(plan.env, 0, log.replace(row, "23120    inf    inf      0"))}
    assert results["rccl.results"].status == "error"
    assert "inf" in results["rccl.results"].observed and "peak" not in results["rccl.results"].observed

"""Ray's part of the deploy, pure: the `ray start` lines, the steps that start and stop
exactly strixwizard's Ray, and the smoke verdicts on the driver's answers (what a task
pinned to each node saw). The real Ray runs in tests/test_deploy_ray_lab.py."""

from __future__ import annotations

import json
import shlex
from typing import Any

import pytest

from strixwizard.deploy.engine import make_plan
from strixwizard.deploy.plan import DeployPlan, DeploySettings
from strixwizard.deploy.stacks.ray.ray import (
    DRIVER,
    NO_RAY_MODULE,
    WATCHED,
    RaySettings,
    another_ray,
    driver_argv,
    judge_cluster,
    start_argv,
)
from strixwizard.discovery import Discovery
from strixwizard.services.nodes import RunRequest, resolve_run


@pytest.fixture(scope="module")
def plan() -> DeployPlan:
    site, nodes = resolve_run(RunRequest(demo=True))
    return make_plan(Discovery.of(site, nodes), DeploySettings())


def seen_as_planned(plan: DeployPlan) -> dict[str, dict[str, str | None]]:
    """What each node's task reports when its raylet got the env file."""
    return {n.ip: {name: (v.value if (v := n.get(name)) else None) for name in WATCHED}
            for n in plan.env.nodes}


def answer(plan: DeployPlan, **changes: Any) -> str:
    doc = {"ray": "2.60.0", "nodes": [n.ip for n in plan.env.nodes],
           "env": seen_as_planned(plan), "error": None, **changes}
    return "2026-12-01 12:00:00 INFO worker.py -- Connecting to existing Ray cluster\n" + json.dumps(doc)


def verdicts(plan: DeployPlan, stdout: str, rc: int = 0) -> dict[str, tuple[str, str, str]]:
    checks = judge_cluster(plan.env, rc, stdout, "")
    assert checks is not None
    return {c.id: (c.status, c.observed, c.detail) for c in checks}


def test_start_lines_bind_the_fabric_addresses_with_strixwizards_temp_dir(plan: DeployPlan) -> None:
    settings = DeploySettings(options=(RaySettings(temp_dir="/srv/ray", num_cpus=1,
                                                   object_store_bytes=80_000_000),))
    assert start_argv(plan.env, "node-a", settings) == (
        "ray", "start", "--head", "--port=6379", "--node-ip-address=192.168.100.1", "--num-gpus=1",
        "--disable-usage-stats", "--temp-dir=/srv/ray", "--num-cpus=1",
        "--object-store-memory=80000000", "--include-dashboard=false")
    assert start_argv(plan.env, "node-b", settings) == (
        "ray", "start", "--address=192.168.100.1:6379", "--node-ip-address=192.168.100.2",
        "--num-gpus=1", "--disable-usage-stats", "--temp-dir=/srv/ray", "--num-cpus=1",
        "--object-store-memory=80000000")


def test_every_node_seeing_the_plan_passes(plan: DeployPlan) -> None:
    got = verdicts(plan, answer(plan))
    assert got["ray.nodes"][:2] == ("pass", "2 nodes")
    # rdma profile: all six variables on both nodes
    assert got["ray.env"][:2] == ("pass", "12 variables as planned on 2 nodes")


def test_a_raylet_started_without_a_variable_fails_naming_node_and_variable(plan: DeployPlan) -> None:
    env = seen_as_planned(plan)
    env["192.168.100.2"]["NCCL_IB_HCA"] = None
    status, observed, detail = verdicts(plan, answer(plan, env=env))["ray.env"]
    assert (status, observed) == ("fail", "1 problem(s)")
    assert detail == ("node-b: NCCL_IB_HCA is missing from the environment its Ray workers see "
                      "(its raylet was started without it)")


def test_another_value_than_planned_fails_with_both_values(plan: DeployPlan) -> None:
    env = seen_as_planned(plan)
    env["192.168.100.1"]["NCCL_IB_GID_INDEX"] = "3"
    env["192.168.100.2"]["VLLM_HOST_IP"] = ["not", "a", "string"]  # type: ignore[assignment]
    detail = verdicts(plan, answer(plan, env=env))["ray.env"][2]
    assert "node-a: NCCL_IB_GID_INDEX='3', planned '1'" in detail
    assert "node-b: VLLM_HOST_IP=['not', 'a', 'string'], planned '192.168.100.2'" in detail


def test_a_node_missing_from_the_cluster_is_named(plan: DeployPlan) -> None:
    env = seen_as_planned(plan)
    del env["192.168.100.2"]
    got = verdicts(plan, answer(plan, nodes=["192.168.100.1", "10.0.0.7"], env=env,
                                error="GetTimeoutError: timed out"))
    assert got["ray.nodes"][0] == "fail"
    assert got["ray.nodes"][2] == ("not in the cluster on its fabric address: node-b (192.168.100.2); "
                                   "GetTimeoutError: timed out")
    assert got["ray.env"][0] == "fail" and "node-b: no answer from a task pinned to it" in got["ray.env"][2]


def test_a_ray_command_without_its_python_module_leaves_the_count_to_ray_status(
        plan: DeployPlan) -> None:
    stdout = json.dumps({"error": "no-ray-module", "detail": "No module named 'ray'"})
    assert judge_cluster(plan.env, NO_RAY_MODULE, stdout, "") is None
    # the same words with another exit status are not that case
    assert judge_cluster(plan.env, 1, stdout, "") is not None


@pytest.mark.parametrize("stdout", ["", "Traceback (most recent call last):\n", "{not json", "[1, 2]"])
def test_an_answer_that_is_not_the_drivers_is_an_error(plan: DeployPlan, stdout: str) -> None:
    checks = judge_cluster(plan.env, 1, stdout, "ImportError: boom")
    assert checks is not None and [(c.id, c.status) for c in checks] == [("ray.nodes", "error")]


def test_the_driver_gets_every_value_as_an_argument(plan: DeployPlan) -> None:
    argv = driver_argv(plan.env, DeploySettings(), budget_s=20)
    assert argv[:2] == ("sh", "-c") and argv[3] == DRIVER
    assert argv[4:] == ("192.168.100.1:6379", "192.168.100.1", "2", json.dumps(list(WATCHED)), "20")
    assert "NodeAffinitySchedulingStrategy" in DRIVER and "soft=False" in DRIVER


def test_only_a_state_naming_another_ray_refuses() -> None:
    assert another_ray("another Ray runs here (raylet PID 42, not started by strixwizard)")
    assert not any(another_ray(s) for s in ("running", "stopped", None, ""))


def test_the_wizard_shows_the_launcher_line_the_deploy_runs(plan: DeployPlan) -> None:
    """The Deploy step's node view names the command the start step really runs."""
    from strixwizard.deploy.plan import panel_of
    from strixwizard.tui.screens.deploy import node_content

    steps = [s for p in plan.site_plan.for_node("node-b") for s in p.steps]
    start = next(s for s in steps if s.target.startswith("ray ("))
    view = next(v for v in panel_of(plan).nodes if v.node == "node-b")
    shown = node_content(plan, view).plain
    assert shlex.join(start.argv or ()) in shown and "sh -ac" not in shown

"""The llama.cpp checks on fake nodes captured through the real collector: the RPC server's RDMA
transport, the GPU backend, one build across the site; and the version line read from what
llama.cpp prints (published lines under tests/data/llama/)."""

from __future__ import annotations

from pathlib import Path

import pytest

from strixwizard.demo.builder import FakeNode
from strixwizard.demo.hardware import llama_cpp
from strixwizard.demo.scenarios import strix_halo_node
from strixwizard.facts.llama_cpp import parse_version
from strixwizard.model import Status
from tests.support.scenarios import run_site, statuses

DATA = Path(__file__).parent / "data" / "llama"


def _pair(a: dict[str, object] | None, b: dict[str, object] | None) -> dict[str, FakeNode]:
    nodes = {}
    for name, build in (("node-a", a), ("node-b", b)):
        node = strix_halo_node(f"strix-{name[-1]}")
        if build is not None:
            llama_cpp(node, **build)  # type: ignore[arg-type]
        nodes[name] = node
    return nodes


def test_the_same_rdma_build_everywhere_passes(tmp_path: Path) -> None:
    report = run_site(tmp_path, _pair({}, {}))
    assert set(statuses(report, "llama.rpc_rdma").values()) == {Status.PASS}
    assert statuses(report, "llama.same_build") == {"test": Status.PASS}
    assert set(statuses(report, "llama.gpu_backend").values()) == {Status.PASS}


def test_rdma_on_one_end_only_fails_the_site_and_warns_the_tcp_node(tmp_path: Path) -> None:
    report = run_site(tmp_path, _pair({}, {"rdma": False}))
    assert statuses(report, "llama.same_build") == {"test": Status.FAIL}
    assert statuses(report, "llama.rpc_rdma") == {"node-a": Status.PASS, "node-b": Status.WARN}
    fail = next(r for r in report.checks if r.id == "llama.same_build")
    assert "mac-amd-cuda-llm-cluster" in fail.detail and "node-b: commit 930e2fa59, TCP only" in fail.observed


def test_two_commits_warn(tmp_path: Path) -> None:
    report = run_site(tmp_path, _pair({}, {"commit": "0c1e570", "build": 10000}))
    assert statuses(report, "llama.same_build") == {"test": Status.WARN}


def test_no_llama_cpp_skips_and_one_node_has_nothing_to_compare(tmp_path: Path) -> None:
    report = run_site(tmp_path, _pair(None, {}))
    assert statuses(report, "llama.rpc_rdma") == {"node-a": Status.SKIP, "node-b": Status.PASS}
    assert statuses(report, "llama.same_build") == {"test": Status.SKIP}


def test_a_cpu_only_build_on_a_strix_halo_warns_and_rocm_7_2_with_hip_warns(tmp_path: Path) -> None:
    report = run_site(tmp_path / "cpu", _pair({"backend": "cpu"}, {"backend": "hip"}))
    found = {r.entity: r for r in report.checks if r.id == "llama.gpu_backend"}
    assert found["node-a"].status == Status.WARN and "iGPU is unused" in found["node-a"].detail
    assert found["node-b"].status == Status.WARN and "ROCm/ROCm/issues/6027" in found["node-b"].detail


def test_a_node_that_is_not_a_strix_halo_is_judged_on_what_it_has(tmp_path: Path) -> None:
    """A CUDA box beside a Strix Halo: its backend passes, the site is not failed for it."""
    nodes = _pair({}, None)
    other = FakeNode("gb10")
    other.cpu(model_name="NVIDIA Grace", vendor="ARM")
    llama_cpp(other, backend="cuda")
    nodes["gb10"] = other
    report = run_site(tmp_path, nodes)
    assert statuses(report, "llama.gpu_backend")["gb10"] == Status.PASS
    assert statuses(report, "llama.same_build") == {"test": Status.PASS}


@pytest.mark.parametrize(("name", "expected"), [
    ("version_0.4.1_build10991_pr28971.txt", ("0.4.1-dev", 10991, "930e2fa59")),
])
def test_published_version_lines_are_read(name: str, expected: tuple[object, ...]) -> None:
    assert parse_version((DATA / name).read_text(encoding="utf-8")) == expected


def test_the_older_version_layout_is_read() -> None:
    """`version: 6945 (cc98f8d34)`, the layout of the build whose start-up line was published."""
    published = (DATA / "startup_build6945_issue18546.txt").read_text(encoding="utf-8")
    assert "6945 (cc98f8d34)" in published
    assert parse_version("version: 6945 (cc98f8d34)\n") == ("6945", 6945, "cc98f8d34")


def test_a_llama_rpc_site_with_a_gb10_beside_a_strix_halo_does_not_fail_for_being_mixed(
        tmp_path: Path) -> None:
    """With `stack: llama-rpc`, a GB10 worker is judged on what it has; without a stack the
    node check still says it is not a Strix Halo (a vLLM/RCCL site cannot use it)."""
    from strixwizard.site import LLAMA_RPC, NodeSpec, Site

    nodes = _pair({}, None)
    nodes.pop("node-b")
    gb10 = FakeNode("gb10")
    gb10.cpu(model_name="NVIDIA Grace", vendor="ARM")
    llama_cpp(gb10, backend="cuda")
    nodes["gb10"] = gb10
    site = Site(name="test", nodes=tuple(NodeSpec(name=n, snapshot=n) for n in nodes),
                stack=LLAMA_RPC)
    report = run_site(tmp_path / "llama", nodes, site)
    gb10_results = [r for r in report.checks if r.host == "gb10"]
    assert not [r for r in gb10_results if r.status in (Status.FAIL, Status.ERROR)], gb10_results
    (cpu,) = [r for r in gb10_results if r.id == "node.strix_halo"]
    assert cpu.status == Status.PASS and "judged on what it has" in cpu.detail
    assert statuses(report, "llama.same_build") == {"test": Status.PASS}
    without = run_site(tmp_path / "plain", nodes)
    assert statuses(without, "node.strix_halo")["gb10"] == Status.FAIL

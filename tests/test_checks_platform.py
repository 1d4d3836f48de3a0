"""Node platform checks, each on a failing and a passing scenario."""

from __future__ import annotations

from pathlib import Path

import pytest

from strixwizard.model import Status
from tests.support.scenarios import report_of, statuses


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("platform")


def test_node_rocm_fails_on_rocm_6_and_passes_on_7_2(root: Path) -> None:
    bad = report_of(root, "platform")
    (result,) = [r for r in bad.checks if r.id == "node.rocm"]
    assert result.status == Status.FAIL and result.observed == "ROCm 6.4.1-103"
    assert result.fix is not None and result.fix.id == "rocm.upgrade"
    assert set(statuses(report_of(root, "healthy"), "node.rocm").values()) == {Status.PASS}


def test_node_rccl_gfx1151_fails_without_gfx1151_code(root: Path) -> None:
    (result,) = [r for r in report_of(root, "platform").checks if r.id == "node.rccl_gfx1151"]
    assert result.status == Status.FAIL
    assert "gfx942" in result.observed and "gfx1151" not in result.observed
    assert set(statuses(report_of(root, "healthy"), "node.rccl_gfx1151").values()) == {Status.PASS}


def test_node_rccl_gfx1151_with_compressed_bundles_is_unknown_not_fail(tmp_path: Path) -> None:
    from strixwizard.demo.scenarios import strix_halo_node
    from tests.support.scenarios import run_site

    node = strix_halo_node("strix-z")
    node.rocm(compressed=True)
    report = run_site(tmp_path, {"strix-z": node})
    (result,) = [r for r in report.checks if r.id == "node.rccl_gfx1151"]
    assert result.status == Status.SKIP and "compressed" in result.detail


def test_node_iommu_warns_on_default_translation(root: Path) -> None:
    assert statuses(report_of(root, "platform"), "node.iommu") == {"strix-c": Status.WARN}
    assert set(statuses(report_of(root, "healthy"), "node.iommu").values()) == {Status.PASS}


def test_node_memlock_warns_on_8_mib(root: Path) -> None:
    (result,) = [r for r in report_of(root, "platform").checks if r.id == "node.memlock"]
    assert result.status == Status.WARN and result.observed == "8192 KiB (soft)"
    assert result.fix is not None and result.fix.id == "limits.memlock"
    assert set(statuses(report_of(root, "healthy"), "node.memlock").values()) == {Status.PASS}


def test_node_ttm_limit_warns_when_ttm_caps_gtt(tmp_path: Path) -> None:
    from strixwizard.demo.scenarios import strix_halo_node
    from tests.support.scenarios import run_site

    node = strix_halo_node("strix-t")
    node.file("/sys/module/ttm/parameters/pages_limit", "16441649\n")  # 62.7 GiB < 124 GiB GTT
    (result,) = [r for r in run_site(tmp_path, {"strix-t": node}).checks
                 if r.id == "node.ttm_limit"]
    assert result.status == Status.WARN and "62.7 GiB" in result.observed
    assert set(statuses(report_of(tmp_path.parent, "healthy"), "node.ttm_limit").values()) == {
        Status.PASS}


def test_rocm_checks_skip_on_a_non_strix_machine(root: Path) -> None:
    report = report_of(root, "non_strix")
    assert statuses(report, "node.strix_halo") == {"xeon-1": Status.FAIL}
    assert statuses(report, "node.rocm") == {"xeon-1": Status.SKIP}
    assert statuses(report, "node.rccl_gfx1151") == {"xeon-1": Status.SKIP}

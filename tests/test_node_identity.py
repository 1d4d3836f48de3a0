"""DiscoveredNode identity: CPU, iGPU, kernel and memory facts, and the checks that judge them."""

from __future__ import annotations

import pytest

import fixes
from checks import BY_ID
from strixwizard.checking.engine import run_doctor
from strixwizard.demo.builder import FakeNode
from strixwizard.demo.scenarios import strix_halo_node
from strixwizard.discovery import Discovery, reached_node
from strixwizard.facts import NodeFacts
from strixwizard.facts.cpu import parse_cpuinfo
from strixwizard.facts.gpu import gfx_name
from strixwizard.facts.kernel import KernelInfo, parse_os_release
from strixwizard.facts.memory import parse_meminfo
from strixwizard.model import Status
from strixwizard.probe.snapshot import SnapshotProbe
from strixwizard.site import Site

EPYC = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 17
model name\t: AMD EPYC 9554 64-Core Processor
cpu cores\t: 64

processor\t: 1
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 17
model name\t: AMD EPYC 9554 64-Core Processor
"""


@pytest.mark.parametrize(
    ("model_name", "sku", "igpu"),
    [
        ("AMD RYZEN AI MAX+ 395 w/ Radeon 8060S", "Ryzen AI Max+ 395", "Radeon 8060S"),
        ("AMD Ryzen AI Max 390 w/ Radeon 8050S", "Ryzen AI Max 390", "Radeon 8050S"),
        ("AMD RYZEN AI MAX+ PRO 395 w/ Radeon 8060S", "Ryzen AI Max+ PRO 395", "Radeon 8060S"),
        ("AMD Ryzen AI Max 385 w/ Radeon 8050S", "Ryzen AI Max 385", "Radeon 8050S"),
        ("AMD Ryzen AI 9 HX 470 w/ Radeon 890M", None, None),
    ],
)
def test_sku_and_igpu_from_the_model_name(model_name: str, sku: str | None, igpu: str | None
                                          ) -> None:
    text = EPYC.replace("AMD EPYC 9554 64-Core Processor", model_name)
    cpu = parse_cpuinfo(text)
    assert cpu is not None
    assert cpu.sku == sku
    assert cpu.igpu_name == igpu


def test_cpuinfo_counts_threads_and_reads_family_and_model() -> None:
    cpu = parse_cpuinfo(EPYC)
    assert cpu is not None
    assert (cpu.family, cpu.model, cpu.threads, cpu.cores) == (25, 17, 2, 64)
    assert not cpu.is_strix_halo
    assert parse_cpuinfo("garbage without entries\n") is None


def test_strix_halo_is_family_26_model_112_whatever_the_name_says() -> None:
    renamed = EPYC.replace("25", "26").replace("17", "112")
    cpu = parse_cpuinfo(renamed)
    assert cpu is not None and cpu.is_strix_halo


@pytest.mark.parametrize(("version", "name"), [(110501, "gfx1151"), (90010, "gfx90a"),
                                               (110000, "gfx1100"), (120001, "gfx1201")])
def test_gfx_names(version: int, name: str) -> None:
    assert gfx_name(version) == name


def test_kernel_parameters_and_version() -> None:
    kernel = KernelInfo("6.18.5-200.fc43.x86_64",
                        ("ro", "iommu=pt", "amdgpu.gttsize=1", "amdgpu.gttsize=126976", "quiet"),
                        None)
    assert kernel.version == (6, 18, 5)
    assert kernel.param("amdgpu.gttsize") == "126976"
    assert kernel.param("quiet") == ""
    assert kernel.param("absent") is None
    assert parse_os_release('PRETTY_NAME="Fedora Linux 43"\n# c\nID=fedora\n') == {
        "PRETTY_NAME": "Fedora Linux 43", "ID": "fedora"}


def test_meminfo_in_bytes() -> None:
    values = parse_meminfo("MemTotal:       131533192 kB\nHugePages_Total:       0\n")
    assert values == {"MemTotal": 131533192 * 1024, "HugePages_Total": 0}


def _facts(snapshot_of, node: FakeNode) -> NodeFacts:
    return NodeFacts(node.hostname, SnapshotProbe.load(snapshot_of(node)))


def test_facts_of_a_demo_style_node(snapshot_of) -> None:
    facts = _facts(snapshot_of, strix_halo_node("strix-a"))
    assert facts.cpu is not None and facts.cpu.sku == "Ryzen AI Max+ 395"
    assert facts.gpu.pci is not None and facts.gpu.pci.driver == "amdgpu"
    assert facts.gpu.gfx_target == "gfx1151"
    assert facts.kernel.param("ttm.pages_limit") == "32505856"
    assert facts.memory.gtt_bytes == 126976 * 1024**2
    assert facts.memory.vram_bytes == 512 * 1024**2


def _statuses(snapshot_of, node: FakeNode, check_id: str) -> list[tuple[Status, str]]:
    probe = SnapshotProbe.load(snapshot_of(node))
    report = run_doctor(Discovery.of(Site("t"), [reached_node(node.hostname, probe, "x", "snapshot")]),
                        (BY_ID[check_id],), fixes.BY_ID)
    return [(r.status, r.observed + " " + r.detail) for r in report.checks]


def _epyc_node() -> FakeNode:
    node = FakeNode("epyc")
    node.cpu("AMD EPYC 9554 64-Core Processor", family=25, model=17, threads=4)
    node.memory(64 * 1024 * 1024)
    node.kernel()
    node.pci_device("0000:00:01.0", 0x1022, 0x14DA, 0x060000, None)
    return node


def test_strix_halo_check_passes_with_the_sku_and_fails_elsewhere(snapshot_of) -> None:
    [(status, text)] = _statuses(snapshot_of, strix_halo_node("a"), "node.strix_halo")
    assert status is Status.PASS and "Ryzen AI Max+ 395" in text
    [(status, text)] = _statuses(snapshot_of, _epyc_node(), "node.strix_halo")
    assert status is Status.FAIL and "AMD EPYC 9554" in text and "Not a Strix Halo" in text
    [(status, text)] = _statuses(snapshot_of, FakeNode("empty"), "node.strix_halo")
    assert status is Status.SKIP and "not captured" in text


def test_igpu_check(snapshot_of) -> None:
    [(status, text)] = _statuses(snapshot_of, strix_halo_node("a"), "node.igpu")
    assert status is Status.PASS and "gfx1151" in text

    unbound = FakeNode("unbound")
    unbound.cpu()
    unbound.igpu(driver=None)
    [(status, text)] = _statuses(snapshot_of, unbound, "node.igpu")
    assert status is Status.FAIL and "driver none" in text

    no_kfd = FakeNode("nokfd")
    no_kfd.cpu()
    no_kfd.igpu(kfd=False)
    [(status, text)] = _statuses(snapshot_of, no_kfd, "node.igpu")
    assert status is Status.FAIL and "no GPU node in the KFD topology" in text

    [(status, text)] = _statuses(snapshot_of, _epyc_node(), "node.igpu")
    assert status is Status.SKIP and "not a Strix Halo CPU" in text


def test_gtt_check(snapshot_of) -> None:
    [(status, text)] = _statuses(snapshot_of, strix_halo_node("a"), "node.gtt")
    assert status is Status.PASS and "GTT 124.0 GiB" in text
    [(status, text)] = _statuses(snapshot_of, strix_halo_node("b", tuned_gtt=False), "node.gtt")
    assert status is Status.WARN and "= 50% of 125.4 GiB RAM" in text
    [(status, text)] = _statuses(snapshot_of, _epyc_node(), "node.gtt")
    assert status is Status.SKIP and "no amdgpu GTT size" in text

"""Fact helpers beyond the parsers. The parsers themselves run on the table of recorded
texts in tests/data/fact_cases (tests/test_fact_cases.py)."""

from __future__ import annotations

import pytest

from strixwizard.facts.iommu import iommu_mode
from strixwizard.facts.kernel import KernelInfo
from strixwizard.facts.nic import PcieLink, parse_link_speed
from strixwizard.facts.rdma import Gid
from strixwizard.facts.rocm import RcclInfo, parse_rccl_grep


def test_gid_ipv4_mapping_and_type() -> None:
    gid = Gid(3, "0000:0000:0000:0000:0000:ffff:c0a8:6402", "RoCE v2", "enp194s0np0")
    assert gid.ipv4 == "192.168.100.2" and gid.is_roce_v2
    assert Gid(0, "fe80:0000:0000:0000:b696:91ff:fe9c:3a10", "RoCE v2", None).ipv4 is None


def test_rccl_targets_say_yes_no_or_cannot_tell() -> None:
    targets, compressed = parse_rccl_grep("amdgcn-amd-amdhsa--gfx1151\namdgcn-amd-amdhsa--gfx942\n")
    assert RcclInfo("/opt/rocm/lib/librccl.so.1", targets, compressed, "").has_gfx1151 is True
    assert RcclInfo("/x", ("gfx942",), False, "").has_gfx1151 is False
    targets, compressed = parse_rccl_grep("CCOB\nCCOB\n")
    assert RcclInfo("/x", targets, compressed, "").has_gfx1151 is None  # cannot tell, never "no"


@pytest.mark.parametrize(("text", "gts"), [("16.0 GT/s PCIe", 16.0), ("8 GT/s", 8.0),
                                          ("2.5 GT/s", 2.5), ("Unknown", None)])
def test_pcie_speed_new_and_old_formats(text: str, gts: float | None) -> None:
    assert parse_link_speed(text) == gts


def test_pcie_x4_gen4_cannot_carry_100g() -> None:
    link = PcieLink(16.0, 4, 16.0, 16)
    assert link.downgraded
    assert link.gbps is not None and 60 < link.gbps < 100


@pytest.mark.parametrize(("cmdline", "mode"), [
    ("ro iommu=pt", "passthrough"), ("ro amd_iommu=off", "off"), ("ro quiet", "translated"),
])
def test_iommu_mode_from_cmdline(cmdline: str, mode: str) -> None:
    found = iommu_mode(KernelInfo("6.18.5", tuple(cmdline.split()), None))
    assert found is not None and found.mode == mode

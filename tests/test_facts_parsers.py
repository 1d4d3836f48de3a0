"""Fact helpers beyond the parsers, what `ip -j addr` parsing drops of a node's words (an address
whose scope would inject YAML, an interface name Linux cannot have), and exit 127 read as the
missing program it names. The parsers themselves run on the table of recorded texts in
tests/data/fact_cases (tests/test_fact_cases.py)."""

from __future__ import annotations

import json

import pytest

from strixwizard.facts.iommu import iommu_mode
from strixwizard.facts.kernel import KernelInfo
from strixwizard.facts.netdev import ifname_problem, parse_ip_addr_json
from strixwizard.facts.nic import PcieLink, parse_link_speed
from strixwizard.facts.rdma import Gid
from strixwizard.facts.rocm import RcclInfo, parse_rccl_grep
from strixwizard.site import address_problem
from tests.support.hostile import strings


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


def _ip_addr(name: str, *addresses: tuple[str, str]) -> str:
    return json.dumps([{"ifname": name, "mtu": 1500, "operstate": "UP", "addr_info": [
        {"family": family, "local": local, "prefixlen": 64 if family == "inet6" else 24,
         "scope": "global"} for family, local in addresses]}])


@pytest.mark.parametrize("address", strings.IPV6_SCOPES)
def test_an_address_with_a_hostile_scope_is_dropped_with_a_note(address: str) -> None:
    for family in ("inet", "inet6"):
        (link,) = parse_ip_addr_json(_ip_addr("fab0", (family, address))).values()
        assert link.addresses == () and len(link.notes) == 1 and "dropped" in link.notes[0]
    assert address_problem(address) is not None


def test_inet_is_ipv4_and_inet6_ipv6() -> None:
    (link,) = parse_ip_addr_json(_ip_addr(
        "fab0", ("inet", "10.99.8.1"), ("inet", "fe80::1"), ("inet6", "10.99.8.2"),
        *[("inet6", a) for a in strings.GOOD_IPV6_SCOPES])).values()
    assert [a.address for a in link.addresses] == ["10.99.8.1", *strings.GOOD_IPV6_SCOPES]
    assert len(link.notes) == 2


def test_interface_names_are_what_linux_allows() -> None:
    """`dev_valid_name`: ESC and BEL are allowed (shown escaped), `/`, `:` and white space not."""
    assert ifname_problem("e\x1b]0;PWND\x07") is None
    for bad in ("a:b", "a b", "x\n  - name: ghost", "a/b", ".", "", "x" * 16):
        assert ifname_problem(bad) is not None
        assert parse_ip_addr_json(_ip_addr(bad, ("inet", "10.0.0.1"))) == {}


def test_exit_127_names_the_program_that_is_missing() -> None:
    """`sh -c '... exec ray ...'` ending with 127 means `ray` is missing, not `sh`."""
    from strixwizard.facts.source import why_unknown
    from strixwizard.probe import RC_NOT_FOUND, CmdResult

    argv = ("sh", "-c", "set -e; export X=1; exec ray status", "sw")
    missing = CmdResult(argv, RC_NOT_FOUND, "", "sh: 1: exec: ray: not found")
    assert why_unknown(argv, missing) == "`ray` is not installed on the node"
    assert why_unknown(("ethtool", "-i", "x"), CmdResult(("ethtool",), RC_NOT_FOUND, "", "")) == (
        "`ethtool` is not installed on the node")

"""Fact parsers on real tool outputs, including stray lines and older layouts."""

from __future__ import annotations

import pytest

from strixwizard.facts.dcb import parse_app_dscp, parse_apptrust, parse_ets_prio_tc, parse_pfc
from strixwizard.facts.devlink import parse_devlink_params
from strixwizard.facts.ethtool import parse_driver_info, parse_pause, parse_priv_flags
from strixwizard.facts.iommu import iommu_mode
from strixwizard.facts.kernel import KernelInfo
from strixwizard.facts.limits import parse_limits_memlock
from strixwizard.facts.netdev import parse_ip_addr_json
from strixwizard.facts.nic import PcieLink, parse_link_speed
from strixwizard.facts.rdma import Gid, parse_ibv_devinfo
from strixwizard.facts.rocm import RcclInfo, parse_rccl_grep

IP_ADDR = """Warning: stray line printed before the JSON
[{"ifindex":1,"ifname":"lo","flags":["LOOPBACK","UP"],"mtu":65536,"operstate":"UNKNOWN",
"addr_info":[{"family":"inet","local":"127.0.0.1","prefixlen":8,"scope":"host","label":"lo"}]},
{"ifindex":4,"ifname":"thunderbolt0","flags":["UP"],"mtu":65520,"operstate":"UP",
"altnames":["enx025d3a718c01"],"addr_info":[{"family":"inet","local":"10.0.0.1","prefixlen":30,
"scope":"global"},{"family":"inet6","local":"fe80::5d:3aff:fe71:8c01","prefixlen":64,"scope":"link"}]}]
"""


def test_ip_addr_json_gives_addresses_and_altnames_despite_a_stray_line() -> None:
    links = parse_ip_addr_json(IP_ADDR)
    tb = links["thunderbolt0"]
    assert tb.altnames == ("enx025d3a718c01",)
    assert [a.cidr for a in tb.addresses if a.family == "inet"] == ["10.0.0.1/30"]
    assert tb.mtu == 65520 and tb.operstate == "up"


def test_ip_addr_json_without_json_is_an_error() -> None:
    with pytest.raises(ValueError):
        parse_ip_addr_json("Cannot open netlink socket: Permission denied\n")


def test_ethtool_i_of_kyuz0s_e810() -> None:
    info = parse_driver_info(
        "driver: ice\nversion: 6.18.5-200.fc43.x86_64\nfirmware-version: 4.91 0x800214b5 "
        "1.3909.0\nexpansion-rom-version: \nbus-info: 0000:c2:00.0\nsupports-statistics: yes\n")
    assert info.driver == "ice"
    assert info.firmware == "4.91 0x800214b5 1.3909.0"
    assert info.bus_info == "0000:c2:00.0"


def test_ethtool_a_old_and_new_layouts() -> None:
    old = parse_pause("Pause parameters for eth0:\nAutonegotiate:\toff\nRX:\t\ton\nTX:\t\toff\n")
    assert (old.autoneg, old.rx, old.tx) == (False, True, False)
    new = parse_pause("Pause parameters for eth0:\nAutonegotiate:\ton\nRX:\t\toff\nTX:\t\toff\n"
                      "RX negotiated: on\nTX negotiated: on\n")
    assert (new.rx, new.tx, new.any_on) == (False, False, False)


def test_priv_flags_reads_fw_lldp_agent_and_skips_the_header() -> None:
    flags = parse_priv_flags("Private flags for enp194s0np0:\nlink-down-on-close     : off\n"
                             "fw-lldp-agent          : on\nvf-true-promisc-support: off\n")
    assert flags == {"link-down-on-close": False, "fw-lldp-agent": True,
                     "vf-true-promisc-support": False}


def test_dcb_json_outputs() -> None:
    assert parse_pfc('{"pfc_cap":8,"macsec_bypass":false,"delay":4096,"prio_pfc":'
                     '[false,false,false,true,false,false,false,false]}') == (3,)
    assert parse_pfc('{"pfc_cap":8,"prio_pfc":[false,false,false,false,false,false,false,false]}') == ()
    assert parse_ets_prio_tc('{"willing":false,"prio_tc":[0,0,0,1,0,0,0,0]}') == (0, 0, 0, 1, 0, 0, 0, 0)
    assert parse_app_dscp('{"dscp_prio":[[24,3],[26,3]]}') == ((24, 3), (26, 3))
    assert parse_app_dscp("{}") == ()
    assert parse_apptrust('{"order":["dscp","pcp"]}') == ("dscp", "pcp")
    with pytest.raises(ValueError):
        parse_pfc("Error: Operation not supported.")


def test_devlink_prefers_runtime_value() -> None:
    text = ('{"param":{"pci/0000:c2:00.0":[{"name":"enable_roce","type":"generic","values":'
            '[{"cmode":"driverinit","value":false},{"cmode":"runtime","value":true}]}]}}')
    assert parse_devlink_params(text) == {"0000:c2:00.0": {"enable_roce": True}}


IBV_DEVINFO = """hca_id:\trocep194s0
\ttransport:\t\t\tInfiniBand (0)
\tfw_ver:\t\t\t\t1.70
\tphys_port_cnt:\t\t\t1
\t\tport:\t1
\t\t\tstate:\t\t\tPORT_ACTIVE (4)
\t\t\tmax_mtu:\t\t4096 (5)
\t\t\tactive_mtu:\t\t1024 (3)
\t\t\tlink_layer:\t\tEthernet
\t\t\tGID[  1]:\t\t::ffff:192.168.100.2, RoCE v2

libibverbs: Warning: couldn't load driver 'libvmw_pvrdma-rdmav34.so'
hca_id:\tmlx4_0
\t\tport:\t2
\t\t\tstate:\t\t\tPORT_DOWN (1)
\t\t\tactive_mtu:\t\t4096 (5)
"""


def test_ibv_devinfo_active_mtu_per_port_with_verbose_and_warning_lines() -> None:
    ports = parse_ibv_devinfo(IBV_DEVINFO)
    assert ports[("rocep194s0", 1)].active_mtu == 1024
    assert ports[("rocep194s0", 1)].max_mtu == 4096
    assert ports[("rocep194s0", 1)].state == "ACTIVE"
    assert ports[("mlx4_0", 2)].state == "DOWN"


def test_gid_ipv4_mapping_and_type() -> None:
    gid = Gid(3, "0000:0000:0000:0000:0000:ffff:c0a8:6402", "RoCE v2", "enp194s0np0")
    assert gid.ipv4 == "192.168.100.2" and gid.is_roce_v2
    assert Gid(0, "fe80:0000:0000:0000:b696:91ff:fe9c:3a10", "RoCE v2", None).ipv4 is None


def test_limits_memlock() -> None:
    limits = ("Limit                     Soft Limit           Hard Limit           Units     \n"
              "Max locked memory         8388608              8388608              bytes     \n")
    lock = parse_limits_memlock(limits)
    assert lock is not None and lock.soft == 8388608 and not lock.unlimited
    unlimited = parse_limits_memlock(limits.replace("8388608              8388608",
                                                    "unlimited            unlimited"))
    assert unlimited is not None and unlimited.unlimited


def test_rccl_grep_targets_and_compressed_bundles() -> None:
    targets, compressed = parse_rccl_grep("amdgcn-amd-amdhsa--gfx1151\namdgcn-amd-amdhsa--gfx942\n"
                                          "amdgcn-amd-amdhsa--gfx1151\n")
    assert targets == ("gfx1151", "gfx942") and not compressed
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

"""Fabric health counters in doctor (fabric.counters), rdma link against sysfs
(rdma.link_cross_check) and ConnectX trust judged from what the node exposes (dcb.trust)."""

from __future__ import annotations

from pathlib import Path

from strixwizard.demo.builder import FakeNode
from strixwizard.demo.hardware import RoceSetup, connectx, e810, usb4_routers
from strixwizard.demo.scenarios import strix_halo_node
from strixwizard.facts.counters import counter_kind
from strixwizard.model import CheckResult, Status
from tests.support import scenarios

REAL = Path(__file__).parent / "data" / "real"
ICE_HEALTHY = {"cnpSent": 0, "cnpHandled": 4, "RxECNMrkd": 4, "ip4InDiscards": 0,
               "tcpRetransSegs": 0, "lifespan": 10}
PFC = {"rx_priority_3_xoff.nic": 7, "tx_priority_3_xoff.nic": 2, "rx_bytes.nic": 123}


def one(tmp_path: Path, nodes: dict[str, FakeNode], check_id: str) -> CheckResult:
    (result,) = scenarios.results(scenarios.run_site(tmp_path, nodes), check_id)
    return result


def ice_node(counters: dict[str, int], statistics: dict[str, int] | None = None) -> dict[str, FakeNode]:
    node = strix_halo_node("strix-k")
    e810(node, "192.168.100.1/30", "b4:96:91:9c:3a:10", counters=counters, statistics=statistics)
    return {"strix-k": node}


def test_counter_kinds_cover_the_names_of_every_driver() -> None:
    kinds = {name: counter_kind(name) for name in (
        "rx_priority_3_xoff.nic", "tx_priority_0_xon", "link_xoff_rx.nic", "rx_prio3_pause",
        "rx_prio3_pause_duration", "rx_pause_ctrl_phy", "tx_pause_ctrl_phy", "cnpHandled",
        "np_cnp_sent", "rp_cnp_handled", "RxECNMrkd", "np_ecn_marked_roce_packets",
        "tcpRetransSegs", "RetransSegs", "local_ack_timeout_err", "retry_exceeded_err",
        "out_of_sequence", "packet_seq_err", "Nak Sequence Error", "out_of_seq_request",
        "rcvd_seq_err", "ip4InDiscards", "out_of_buffer", "port_xmit_discards", "rx_bytes",
        "sent_pkts", "rcvd_pkts", "port_xmit_packets", "port_rcv_packets", "rx_packets")}
    assert kinds == {
        "rx_priority_3_xoff.nic": "pause", "tx_priority_0_xon": "pause", "link_xoff_rx.nic": "pause",
        "rx_prio3_pause": "pause", "rx_prio3_pause_duration": "pause", "rx_pause_ctrl_phy": "pause",
        "tx_pause_ctrl_phy": "pause", "cnpHandled": "cnp", "np_cnp_sent": "cnp",
        "rp_cnp_handled": "cnp", "RxECNMrkd": "ecn", "np_ecn_marked_roce_packets": "ecn",
        "tcpRetransSegs": "retransmit", "RetransSegs": "retransmit",
        "local_ack_timeout_err": "retransmit", "retry_exceeded_err": "retransmit",
        "out_of_sequence": "sequence", "packet_seq_err": "sequence", "Nak Sequence Error": "sequence",
        "out_of_seq_request": "sequence", "rcvd_seq_err": "sequence", "ip4InDiscards": "discard",
        "out_of_buffer": "discard", "port_xmit_discards": "discard", "rx_bytes": "other",
        # the RDMA port's own packets (rxe hw_counters, IB port counters); a netdev's are not
        "sent_pkts": "packets", "rcvd_pkts": "packets", "port_xmit_packets": "packets",
        "port_rcv_packets": "packets", "rx_packets": "other"}


# -- fabric.counters -------------------------------------------------------------------------

def test_fabric_counters_pass_with_totals_of_the_flow_control_at_work(tmp_path: Path) -> None:
    result = one(tmp_path, ice_node(ICE_HEALTHY, PFC), "fabric.counters")
    assert result.status is Status.PASS, result
    assert result.observed.startswith("no error counter above 0 (3 from ethtool -S of enp194s0np0,")
    assert "5 from hw_counters of rocep194s0/1" in result.observed  # lifespan is not a counter
    assert "pause: rx_priority_3_xoff.nic 7 (ethtool -S), tx_priority_3_xoff.nic 2" in result.detail
    assert "cnp: cnpHandled 4 (hw_counters)" in result.detail and "ecn: RxECNMrkd 4" in result.detail


def test_fabric_counters_warn_naming_retransmits_and_sequence_errors(tmp_path: Path) -> None:
    grown = {**ICE_HEALTHY, "tcpRetransSegs": 12, "Nak Sequence Error": 3}
    result = one(tmp_path, ice_node(grown), "fabric.counters")
    assert result.status is Status.WARN, result
    assert result.observed == ("retransmit: tcpRetransSegs 12 (hw_counters); "
                               "sequence: Nak Sequence Error 3 (hw_counters)")
    assert "strixwizard test" in result.detail and "dcb pfc show dev enp194s0np0" in result.detail


def test_fabric_counters_of_a_connectx_name_out_of_buffer(tmp_path: Path) -> None:
    node = strix_halo_node("cx-c")
    connectx(node, "10.10.0.1/24", "0c:42:a1:11:22:01",
             counters={"out_of_buffer": 5, "out_of_sequence": 0, "np_cnp_sent": 0})
    result = one(tmp_path, {"cx-c": node}, "fabric.counters")
    assert result.status is Status.WARN and result.observed == "discard: out_of_buffer 5 (hw_counters)"
    assert "mlnx_qos -i enp194s0f0np0" in result.detail


def test_fabric_counters_name_the_rdma_packets_since_boot_never_judged(tmp_path: Path) -> None:
    node = strix_halo_node("cx-p")
    connectx(node, "10.10.0.1/24", "0c:42:a1:11:22:01",
             counters={"out_of_sequence": 0, "np_cnp_sent": 0, "sent_pkts": 0, "rcvd_pkts": 7})
    result = one(tmp_path, {"cx-p": node}, "fabric.counters")
    assert result.status is Status.PASS, result
    assert "over RDMA since boot: rcvd_pkts 7 (hw_counters)" in result.detail


def test_fabric_counters_skip_when_nothing_is_readable(tmp_path: Path) -> None:
    node = strix_halo_node("strix-z")
    e810(node, "192.168.100.1/30", "b4:96:91:9c:3a:10", counters={})
    result = one(tmp_path, {"strix-z": node}, "fabric.counters")
    assert result.status is Status.SKIP and "counters unknown" in result.detail
    assert "ethtool" in result.detail and "no hw_counters" in result.detail


# -- rdma.link_cross_check -------------------------------------------------------------------

def _link(state: str = "ACTIVE", netdev: str | None = "enp194s0np0") -> dict[str, object]:
    link: dict[str, object] = {"ifindex": 0, "ifname": "rocep194s0", "port": 1, "state": state,
                               "physical_state": "LINK_UP"}
    if netdev:
        link.update(netdev=netdev, netdev_index=3)
    return link


def test_rdma_link_that_agrees_with_sysfs_passes(tmp_path: Path) -> None:
    nodes = ice_node(ICE_HEALTHY)
    nodes["strix-k"].rdma_links([_link()])
    result = one(tmp_path, nodes, "rdma.link_cross_check")
    assert result.status is Status.PASS and result.observed == "rdma link: rocep194s0/1 ACTIVE enp194s0np0"


def test_rdma_link_that_disagrees_with_sysfs_warns(tmp_path: Path) -> None:
    nodes = ice_node(ICE_HEALTHY)
    nodes["strix-k"].rdma_links([_link(state="DOWN", netdev="eth9")])
    result = one(tmp_path, nodes, "rdma.link_cross_check")
    assert result.status is Status.WARN, result
    assert result.observed == ("rocep194s0/1: rdma link says DOWN, sysfs ACTIVE; "
                               "rocep194s0/1: rdma link says netdev eth9, sysfs enp194s0np0")


def test_rdma_link_without_netdev_is_noted_and_a_missing_port_warns(tmp_path: Path) -> None:
    nodes = ice_node(ICE_HEALTHY)
    nodes["strix-k"].rdma_links([_link(netdev=None)])
    result = one(tmp_path, nodes, "rdma.link_cross_check")
    assert result.status is Status.PASS and "no netdev (not visible from here" in result.detail
    nodes = ice_node(ICE_HEALTHY)
    nodes["strix-k"].rdma_links([])
    result = one(tmp_path / "empty", nodes, "rdma.link_cross_check")
    assert result.status is Status.WARN
    assert result.observed == "rocep194s0/1 is in sysfs but not listed by rdma link"


def test_rdma_link_not_captured_skips(tmp_path: Path) -> None:
    result = one(tmp_path, ice_node(ICE_HEALTHY), "rdma.link_cross_check")
    assert result.status is Status.SKIP and "rdma link unknown" in result.detail


# -- dcb.trust on ConnectX: judged from what the node exposes ---------------------------------

NO_APPTRUST = RoceSetup(trust=None)


def cx(tmp_path: Path, setup: RoceSetup, **kwargs: object) -> CheckResult:
    node = strix_halo_node("cx-t")
    connectx(node, "10.10.0.1/24", "0c:42:a1:11:22:01", setup=setup, **kwargs)  # type: ignore[arg-type]
    return one(tmp_path, {"cx-t": node}, "dcb.trust")


def test_connectx_trust_from_mlnx_qos_passes_and_shows_the_traffic_class(tmp_path: Path) -> None:
    text = (REAL / "mlnx_qos_connectx_trust_dscp_pfc3_netarbiter.txt").read_text()
    result = cx(tmp_path, RoceSetup(trust=None, dscp_prio=()), mlnx_qos=text, traffic_class=106)
    assert result.status is Status.PASS, result
    assert result.observed == ("order dscp (mlnx_qos: Priority trust state); "
                               "RoCE traffic class 106 (DSCP 26)")


def test_connectx_pcp_trust_from_mlnx_qos_warns(tmp_path: Path) -> None:
    text = (REAL / "mlnx_qos_connectx_trust_dscp_pfc3_netarbiter.txt").read_text().replace(
        "Priority trust state: dscp", "Priority trust state: pcp")
    result = cx(tmp_path, NO_APPTRUST, mlnx_qos=text)
    assert result.status is Status.WARN and result.observed == "order pcp (mlnx_qos: Priority trust state)"


def test_connectx_without_apptrust_trusts_dscp_while_dscp_entries_exist(tmp_path: Path) -> None:
    result = cx(tmp_path, NO_APPTRUST)
    assert result.status is Status.PASS, result
    assert result.observed == "order dscp (ConnectX L3 mode: dscp-prio entries present)"


def test_connectx_without_apptrust_or_dscp_entries_is_pcp_and_warns(tmp_path: Path) -> None:
    result = cx(tmp_path, RoceSetup(trust=None, dscp_prio=()))
    assert result.status is Status.WARN, result
    assert result.observed == "order pcp (ConnectX L2 mode: no dscp-prio entries)"


# -- netdev statistics: thunderbolt-net and every fabric interface -----------------------------

def tb_pair(statistics: dict[str, int]) -> dict[str, FakeNode]:
    a, b = strix_halo_node("tb-a"), strix_halo_node("tb-b")
    usb4_routers(a, "tb-b", ipv4="10.0.0.1/30", mac="02:5d:3a:71:8c:01", statistics=statistics)
    usb4_routers(b, "tb-a", ipv4="10.0.0.2/30", mac="02:5d:3a:71:8c:02")
    return {"tb-a": a, "tb-b": b}


TB_CLEAN = {"rx_bytes": 91234567, "rx_packets": 70001, "rx_crc_errors": 0, "rx_frame_errors": 0,
            "rx_length_errors": 0, "rx_over_errors": 0, "rx_missed_errors": 0, "rx_errors": 0,
            "tx_errors": 0, "rx_dropped": 3}


def test_netdev_statistics_kinds() -> None:
    assert {n: counter_kind(n) for n in ("rx_crc_errors", "rx_frame_errors", "rx_length_errors",
                                         "rx_over_errors", "rx_missed_errors", "tx_errors",
                                         "rx_dropped", "rx_bytes")} == {
        "rx_crc_errors": "corrupt", "rx_frame_errors": "corrupt", "rx_length_errors": "corrupt",
        "rx_over_errors": "discard", "rx_missed_errors": "discard", "tx_errors": "discard",
        "rx_dropped": "dropped", "rx_bytes": "other"}


def test_thunderbolt_net_statistics_pass_when_clean(tmp_path: Path) -> None:
    results = {r.entity: r for r in scenarios.results(scenarios.run_site(tmp_path, tb_pair(TB_CLEAN)),
                                                      "fabric.counters")}
    clean = results["tb-a:thunderbolt0"]
    assert clean.status is Status.PASS, clean
    assert clean.observed == "no error counter above 0 (8 from statistics of thunderbolt0)"
    assert "not judged (the stack did not take them" in clean.detail
    assert "dropped: rx_dropped 3 (statistics)" in clean.detail
    # no statistics captured (and thunderbolt-net has no `ethtool -S`): unknown, not passed
    assert results["tb-b:thunderbolt0"].status is Status.SKIP


def test_thunderbolt_net_crc_errors_warn_naming_the_cable(tmp_path: Path) -> None:
    grown = {**TB_CLEAN, "rx_crc_errors": 17, "rx_errors": 17, "rx_frame_errors": 2}
    (result, _) = scenarios.results(scenarios.run_site(tmp_path, tb_pair(grown)), "fabric.counters")
    assert result.entity == "tb-a:thunderbolt0" and result.status is Status.WARN, result
    assert result.observed == ("discard: rx_errors 17 (statistics); "
                               "corrupt: rx_crc_errors 17 (statistics), rx_frame_errors 2 (statistics)")
    assert "tbnet_check_frame" in result.detail and "odinlink/RESULTS.md" in result.detail
    assert "replace the cable" in result.detail and "PFC" not in result.detail


def test_statistics_of_a_rdma_nic_join_its_ethtool_counters(tmp_path: Path) -> None:
    nodes = ice_node(ICE_HEALTHY, PFC)
    nodes["strix-k"].netdev_statistics("enp194s0np0", {"rx_missed_errors": 9, "rx_bytes": 5})
    result = one(tmp_path, nodes, "fabric.counters")
    assert result.status is Status.WARN and result.observed == "discard: rx_missed_errors 9 (statistics)"
    assert "dcb pfc show dev enp194s0np0" in result.detail

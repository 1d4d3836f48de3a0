"""Pairing fabric interfaces into links, transports, both-end link checks, the RDMA path verdict."""

from __future__ import annotations

from pathlib import Path

import pytest

from strixwizard.model import Status
from strixwizard.topology import build_topology
from tests.support import scenarios
from tests.support.scenarios import report_of, results, statuses

E810_LINK = "node-a:enp194s0np0 <-> node-b:enp194s0np0"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("links")


def test_back_to_back_e810_pairs_into_one_roce_v2_link(tmp_path: Path) -> None:
    facts = scenarios.facts_of(tmp_path, scenarios.healthy_e810_pair())
    topology = build_topology(list(facts.values()))
    (link,) = topology.links  # the onboard 2.5 GbE LAN (same /24) is not a fabric link
    assert link.id == E810_LINK
    assert (link.transport, link.rdma, link.evidence) == ("roce-v2", True,
                                                         "same subnet 192.168.100.0/30")


@pytest.mark.parametrize(("name", "transport", "rdma"), [
    ("connectx", "roce-v2", True), ("infiniband", "infiniband", True),
    ("thunderbolt", "thunderbolt-net", False),
])
def test_transport_classification(root: Path, name: str, transport: str, rdma: bool) -> None:
    (link,) = report_of(root, name).to_json()["links"]
    assert (link["transport"], link["rdma"]) == (transport, rdma)
    assert [end["host"] for end in link["ends"]] == sorted(end["host"] for end in link["ends"])


def test_link_json_carries_both_ends(root: Path) -> None:
    (link,) = report_of(root, "healthy").to_json()["links"]
    a, b = link["ends"]
    assert a == {**a, "host": "node-a", "netdev": "enp194s0np0", "address": "192.168.100.1/30",
                 "rdma_device": "rocep194s0", "port": 1, "gid_index": 1, "mtu": 9000,
                 "speed_mbps": 100000, "active_mtu": 4096}
    assert b["address"] == "192.168.100.2/30"
    assert link["status"] == "pass"
    assert {c["host"] for c in link["checks"]} == {None}


def test_link_checks_run_once_per_link_with_no_host(root: Path) -> None:
    report = report_of(root, "healthy")
    for check_id in ("link.transport", "link.mtu", "link.speed", "link.pfc", "link.trust",
                     "link.roce_version"):
        (result,) = results(report, check_id)
        assert result.host is None and result.entity == E810_LINK
        assert result.status == Status.PASS, (check_id, result.detail)


def test_link_mtu_and_pfc_fail_on_mismatched_ends(root: Path) -> None:
    report = report_of(root, "misconfigured")
    (mtu,) = results(report, "link.mtu")
    assert mtu.status == Status.FAIL
    assert mtu.observed == ("node-a:enp194s0np0 9000 vs node-b:enp194s0np0 1500 "
                            "(active_mtu 4096/1024)")
    (pfc,) = results(report, "link.pfc")
    assert pfc.status == Status.FAIL and pfc.observed.endswith("vs node-b:enp194s0np0 off")
    (link,) = report.to_json()["links"]
    assert link["status"] == "fail"


def test_link_speed_warns_on_mismatch(tmp_path: Path) -> None:
    nodes = scenarios.healthy_e810_pair()
    path = "/sys/devices/pci0000:00/0000:00:01.1/0000:c2:00.0/net/enp194s0np0/speed"
    nodes["node-b"].files[path] = "25000\n"
    (result,) = results(scenarios.run_site(tmp_path, nodes), "link.speed")
    assert result.status == Status.WARN and "25000 Mb/s" in result.observed


def test_link_trust_warns_on_mismatch(tmp_path: Path) -> None:
    from strixwizard.demo.hardware import RoceSetup, connectx

    nodes = scenarios.connectx6dx_pair()
    from strixwizard.demo.scenarios import strix_halo_node

    b = strix_halo_node("cx-b")
    connectx(b, "10.10.0.2/24", "0c:42:a1:11:22:02", setup=RoceSetup(trust=("pcp",)))
    nodes["cx-b"] = b
    (result,) = results(scenarios.run_site(tmp_path, nodes), "link.trust")
    assert result.status == Status.WARN and result.observed.endswith("vs cx-b:enp194s0f0np0 pcp")


def test_link_roce_version_fails_when_one_end_lacks_v2(tmp_path: Path) -> None:
    nodes = scenarios.connectx6dx_pair()
    base = "/sys/devices/pci0000:00/0000:00:01.1/0000:c2:00.0/infiniband/mlx5_0/ports/1/gid_attrs"
    for index in (1, 3):
        nodes["cx-b"].files[f"{base}/types/{index}"] = "IB/RoCE v1\n"
    (result,) = results(scenarios.run_site(tmp_path, nodes), "link.roce_version")
    assert result.status == Status.FAIL
    assert result.observed == "cx-a:enp194s0f0np0 v2 GID 3 vs cx-b:enp194s0f0np0 no v2 GID"


def test_non_roce_link_checks_skip_on_infiniband(root: Path) -> None:
    report = report_of(root, "infiniband")
    for check_id in ("link.pfc", "link.trust", "link.roce_version"):
        (result,) = results(report, check_id)
        assert result.status == Status.SKIP and "not a RoCE link (infiniband)" in result.detail
    (link,) = report.to_json()["links"]
    assert link["status"] == "pass"  # inapplicable checks do not make the link "skip"


def test_thunderbolt_link_is_flagged_tcp_only(root: Path) -> None:
    (result,) = results(report_of(root, "thunderbolt"), "link.transport")
    assert result.status == Status.WARN
    assert result.observed == "thunderbolt-net (same subnet 10.0.0.0/30)"
    assert "TCP only" in result.detail


def test_site_rdma_path_fails_when_only_thunderbolt_joins_the_nodes(root: Path) -> None:
    (result,) = results(report_of(root, "thunderbolt"), "site.rdma_path")
    assert result.status == Status.FAIL and result.host is None
    assert result.observed == "only thunderbolt-net (USB4) joins these nodes"
    assert "NET/Socket" in result.detail


def test_site_rdma_path_passes_with_roce_even_next_to_thunderbolt(tmp_path: Path) -> None:
    from strixwizard.demo.scenarios import demo_nodes

    report = scenarios.run_site(tmp_path, demo_nodes())
    assert statuses(report, "site.rdma_path") == {"node-a <-> node-b": Status.PASS}
    assert {link["transport"] for link in report.to_json()["links"]} == {"roce-v2", "thunderbolt-net"}


def test_site_rdma_path_fails_when_ib_ports_are_down(root: Path) -> None:
    (result,) = results(report_of(root, "infiniband_no_sm"), "site.rdma_path")
    assert result.status == Status.FAIL and "not ACTIVE" in result.observed


def test_site_rdma_path_skips_for_one_node(root: Path) -> None:
    assert set(statuses(report_of(root, "non_strix"), "site.rdma_path").values()) == {Status.SKIP}


# -- which stacks a link carries: iWARP and a link-layer mismatch ------------------------------

def test_an_iwarp_pair_fails_at_the_link_with_the_roce_cure_named(root: Path) -> None:
    report = report_of(root, "iwarp")
    (link,) = report.to_json()["links"]
    assert (link["transport"], link["rdma"], link["status"]) == ("iwarp", False, "fail")
    assert link["stacks"] == ["rdma_cm"]
    (transport,) = results(report, "link.transport")
    assert transport.status == Status.FAIL and "carries: rdma_cm programs" in transport.observed
    assert "roce-v2 or infiniband" in transport.expected
    assert ("devlink dev param set pci/0000:c2:00.0 name enable_iwarp value false cmode runtime"
            in transport.detail)
    assert "name enable_roce value true cmode runtime" in transport.detail
    assert "https://docs.kernel.org/networking/devlink/ice.html" in transport.detail
    assert transport.fix is not None and transport.fix.id == "roce.enable"
    (path,) = results(report, "site.rdma_path")
    assert path.status == Status.FAIL and "iwarp" in path.observed
    # the E810 rule names the same cure on each node
    assert set(statuses(report, "roce.enabled").values()) == {Status.FAIL}
    # no RoCE-only rule judges an iWARP port as if it were RoCE
    assert statuses(report, "link.pfc") == {E810_LINK: Status.SKIP}


def test_iwarp_snapshot_has_the_real_layout(tmp_path: Path) -> None:
    facts = scenarios.facts_of(tmp_path, scenarios.iwarp_e810_pair())["node-a"]
    (device,) = [d for d in facts.rdma if d.is_hardware]
    assert (device.name, device.node_type, device.is_iwarp) == ("iwp194s0", "RNIC", True)
    (port,) = device.ports
    assert [g.gid for g in port.gids] == ["b496:919c:3a10:0000:0000:0000:0000:0000"]
    assert port.roce_v2_ipv4_gid() is None and port.link_layer == "Ethernet"


def test_deploy_refuses_an_iwarp_link_naming_what_it_carries(tmp_path: Path) -> None:
    from strixwizard.deploy.env import DeployRefused, generate_env

    facts = list(scenarios.facts_of(tmp_path, scenarios.iwarp_e810_pair()).values())
    with pytest.raises(DeployRefused, match="carries rdma_cm programs"):
        generate_env("t", facts, build_topology(facts))


def test_an_infiniband_port_cabled_to_ethernet_fails_naming_mlxconfig(root: Path) -> None:
    report = report_of(root, "ib_vs_eth")
    (link,) = report.to_json()["links"]
    assert (link["transport"], link["rdma"], link["status"]) == ("link-layer-mismatch", False,
                                                                 "fail")
    assert [end["link_layer"] for end in link["ends"]] == ["InfiniBand", "Ethernet"]
    (layer,) = results(report, "link.link_layer")
    assert layer.status == Status.FAIL
    assert layer.observed == "node-a:ib0 InfiniBand vs node-b:enp194s0np0 Ethernet"
    assert "mlxconfig -d 0000:c2:00.0 set LINK_TYPE_P1=2" in layer.detail
    assert "mlxfwreset" in layer.detail and "reboot" in layer.detail
    (transport,) = results(report, "link.transport")
    assert transport.status == Status.FAIL and transport.fix is None
    # the MTU and speed of two ends that cannot talk are not compared
    assert set(statuses(report, "link.mtu").values()) == {Status.SKIP}
    (path,) = results(report, "site.rdma_path")
    assert path.status == Status.FAIL and "link-layer-mismatch" in path.observed


def test_ipoib_snapshot_is_an_infiniband_netdev_in_datagram_mode(tmp_path: Path) -> None:
    facts = scenarios.facts_of(tmp_path, scenarios.ib_vs_ethernet_pair())["node-a"]
    (ib0,) = [n for n in facts.netdevs if n.name == "ib0"]
    assert (ib0.arp_type, ib0.is_infiniband, ib0.ipoib_mode, ib0.max_mtu) == (32, True,
                                                                              "datagram", 4092)


def test_same_link_layer_passes_on_a_roce_pair(root: Path) -> None:
    assert statuses(report_of(root, "healthy"), "link.link_layer") == {E810_LINK: Status.PASS}


@pytest.mark.parametrize("name", ["iwarp", "ib_vs_eth", "healthy"])
def test_link_json_of_every_transport_validates_against_the_shipped_schema(
        root: Path, name: str, report_schema: dict[str, object]) -> None:
    from tests.support.cli import validate_report

    document = report_of(root, name).to_json()
    validate_report(document, report_schema)
    (link,) = document["links"]
    assert link["stacks"] == {"iwarp": ["rdma_cm"], "ib_vs_eth": [],
                              "healthy": ["rccl", "llama-rdma", "perftest", "rdma_cm"]}[name]

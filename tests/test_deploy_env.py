"""The deploy environment on the snapshot scenarios: every value read from the facts."""

from __future__ import annotations

from pathlib import Path

import pytest

from strixwizard.demo.builder import FakeNode
from strixwizard.demo.hardware import connectx
from strixwizard.demo.scenarios import strix_halo_node
from strixwizard.deploy.env import ClusterEnv, DeployRefused, generate_env, hca_selects
from strixwizard.topology import build_topology
from tests.support.scenarios import (
    connectx6dx_pair,
    facts_of,
    healthy_e810_pair,
    infiniband_cx3_pair,
    thunderbolt_only_pair,
)


def env_of(tmp_path: Path, nodes: dict[str, FakeNode], profile: str = "rdma") -> ClusterEnv:
    facts = list(facts_of(tmp_path, nodes).values())
    return generate_env("test", facts, build_topology(facts), profile)


def values(env: ClusterEnv, node: str) -> dict[str, str]:
    return {v.name: v.value for v in env.node(node).variables}


def test_e810_pair_gid_index_1_from_sysfs_and_exact_hca(tmp_path: Path) -> None:
    env = env_of(tmp_path, healthy_e810_pair())
    a = values(env, "node-a")
    assert a["NCCL_IB_HCA"] == "=rocep194s0:1"
    assert a["NCCL_IB_GID_INDEX"] == "1"
    assert a["NCCL_SOCKET_IFNAME"] == "=enp194s0np0" and a["GLOO_SOCKET_IFNAME"] == "enp194s0np0"
    assert a["NCCL_IB_DISABLE"] == "0" and a["NCCL_NET_GDR_LEVEL"] == "0"
    assert a["RAY_EXPERIMENTAL_NOSET_ROCR_VISIBLE_DEVICES"] == "1"
    assert (a["VLLM_HOST_IP"], values(env, "node-b")["VLLM_HOST_IP"]) == (
        "192.168.100.1", "192.168.100.2")
    gid = env.node("node-b").get("NCCL_IB_GID_INDEX")
    assert gid is not None and gid.source == (
        "node-b: /sys/class/infiniband/rocep194s0/ports/1/gid_attrs/types/1 = RoCE v2, "
        "/sys/class/infiniband/rocep194s0/ports/1/gids/1 = ::ffff:192.168.100.2")
    assert env.transport == "roce-v2" and env.warnings == ()


def test_same_file_on_both_ends_except_the_node_ip(tmp_path: Path) -> None:
    env = env_of(tmp_path, healthy_e810_pair())
    a, b = env.file_text("node-a").splitlines(), env.file_text("node-b").splitlines()
    differ = [(x, y) for x, y in zip(a, b, strict=True) if x != y]
    assert differ == [("# This node only (node-a)", "# This node only (node-b)"),
                      ("VLLM_HOST_IP=192.168.100.1", "VLLM_HOST_IP=192.168.100.2")]


def test_connectx_gid_index_3_never_assumed(tmp_path: Path) -> None:
    env = env_of(tmp_path, connectx6dx_pair())
    for node in ("cx-a", "cx-b"):
        v = values(env, node)
        assert (v["NCCL_IB_HCA"], v["NCCL_IB_GID_INDEX"]) == ("=mlx5_0:1", "3")
        assert v["NCCL_SOCKET_IFNAME"] == "=enp194s0f0np0"


def test_infiniband_uses_the_port_and_no_roce_gid(tmp_path: Path) -> None:
    env = env_of(tmp_path, infiniband_cx3_pair())
    v = values(env, "ib-a")
    assert env.transport == "infiniband"
    assert v["NCCL_IB_HCA"] == "=mlx4_0:1" and "NCCL_IB_GID_INDEX" not in v
    assert v["NCCL_SOCKET_IFNAME"] == "=ibp195s0" and v["VLLM_HOST_IP"] == "10.20.0.1"


def test_infiniband_without_subnet_manager_is_refused(tmp_path: Path) -> None:
    with pytest.raises(DeployRefused, match=r"mlx4_0/1 is INIT .*opensm"):
        env_of(tmp_path, infiniband_cx3_pair(subnet_manager=False))


def _two_connectx(name: str, last: int) -> FakeNode:
    node = strix_halo_node(name)
    connectx(node, f"10.10.0.{last}/24", f"0c:42:a1:11:22:0{last}", rdmadev="mlx5_1")
    connectx(node, f"10.30.0.{last}/24", f"0c:42:a1:11:33:0{last}", address="0000:c3:00.0",
             bridge="0000:00:01.2", netdev="enp195s0f0np0", rdmadev="mlx5_10")
    return node


def test_two_devices_where_a_prefix_would_be_ambiguous(tmp_path: Path) -> None:
    env = env_of(tmp_path, {"cx-a": _two_connectx("cx-a", 1), "cx-b": _two_connectx("cx-b", 2)})
    v = values(env, "cx-a")
    assert v["NCCL_IB_HCA"] == "=mlx5_1:1" and v["NCCL_SOCKET_IFNAME"] == "=enp194s0f0np0"
    ports = [("mlx5_1", 1), ("mlx5_10", 1)]
    assert hca_selects("mlx5_1:1", ports) == ports  # what a bare prefix would select
    assert hca_selects(v["NCCL_IB_HCA"], ports) == [("mlx5_1", 1)]
    assert hca_selects("^=mlx5_1", ports) == [("mlx5_10", 1)]


def test_thunderbolt_only_pair_refuses_an_rdma_profile(tmp_path: Path) -> None:
    with pytest.raises(DeployRefused) as refused:
        env_of(tmp_path, thunderbolt_only_pair())
    message = str(refused.value)
    assert message.startswith(
        "no RDMA profile: tb-a and tb-b share only a USB4/Thunderbolt networking link "
        "(tb-a:thunderbolt0 ↔ tb-b:thunderbolt0) that carries TCP only, no RDMA: deploy over "
        "TCP with --transport tcp, or fix the RDMA NIC first (`strixwizard doctor`")
    assert "--transport tcp" in message


def test_thunderbolt_pair_gets_a_tcp_profile_only_when_asked(tmp_path: Path) -> None:
    env = env_of(tmp_path, thunderbolt_only_pair(), profile="tcp")
    v = values(env, "tb-a")
    assert env.profile == "tcp" and v["NCCL_IB_DISABLE"] == "1"
    assert "NCCL_IB_HCA" not in v and "NCCL_IB_GID_INDEX" not in v
    assert v["NCCL_SOCKET_IFNAME"] == "=thunderbolt0" and v["VLLM_HOST_IP"] == "10.0.0.1"


def test_one_node_is_not_a_cluster(tmp_path: Path) -> None:
    nodes = healthy_e810_pair()
    del nodes["node-b"]
    with pytest.raises(DeployRefused, match="at least two reachable nodes"):
        env_of(tmp_path, nodes)

"""The deploy environment on the snapshot scenarios: every value read from the facts, and each
value stays data in the env file and the generated scripts (a real `sh` sources them, nothing
runs, every value comes back exactly)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from strixwizard.demo.builder import FakeNode
from strixwizard.demo.hardware import RoceSetup, connectx, e810
from strixwizard.demo.scenarios import strix_halo_node
from strixwizard.deploy.env import ClusterEnv, DeployRefused, generate_env, hca_selects
from strixwizard.deploy.plan import WITH_ENV, DeploySettings
from strixwizard.deploy.stacks.ray.plan import container_script, vllm_script
from strixwizard.facts.netdev import ifname_problem
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


HOSTILE_NETDEV = "f;id>PWNED0"


HOSTILE_SITE = "lab\nid>PWNED1\n$(id>PWNED2)"


def hostile_pair(netdev: str = HOSTILE_NETDEV) -> dict[str, FakeNode]:
    nodes = {}
    for name, last, mac in (("node-a", 1, "b4:96:91:9c:3a:10"), ("node-b", 2, "b4:96:91:9c:41:d8")):
        node = strix_halo_node(name)
        e810(node, f"192.168.100.{last}/30", mac, setup=RoceSetup(roce_mode="RoCE v2"),
             netdev=netdev)
        nodes[name] = node
    return nodes


def hostile_env(tmp_path: Path, profile: str) -> ClusterEnv:
    facts = list(facts_of(tmp_path / "facts", hostile_pair()).values())
    return generate_env(HOSTILE_SITE, facts, build_topology(facts), profile)


def sourced(env_file: Path, cwd: Path) -> dict[str, str]:
    """The environment a command sees under the Ray step's `sh -ac WITH_ENV FILE CMD`."""
    done = subprocess.run(
        ["sh", "-ac", WITH_ENV, str(env_file), sys.executable, "-c",
         "import json, os; print(json.dumps(dict(os.environ)))"],
        cwd=cwd, capture_output=True, text=True, timeout=30, check=True)
    return json.loads(done.stdout)  # type: ignore[no-any-return]


@pytest.mark.parametrize("profile", ["rdma", "tcp"])
def test_hostile_interface_and_site_names_stay_data_when_sourced(tmp_path: Path,
                                                                 profile: str) -> None:
    env = hostile_env(tmp_path, profile)
    work = tmp_path / "work"
    work.mkdir()
    for node in ("node-a", "node-b"):
        env_file = tmp_path / f"{node}.env"
        env_file.write_text(env.file_text(node))
        seen = sourced(env_file, work)
        assert list(work.iterdir()) == [], "sourcing the env file ran a command"
        expected = {v.name: v.value for v in env.node(node).variables}
        assert {name: seen.get(name) for name in expected} == expected
        assert seen["GLOO_SOCKET_IFNAME"] == HOSTILE_NETDEV
        assert seen["NCCL_SOCKET_IFNAME"] == "=" + HOSTILE_NETDEV


def test_generated_scripts_source_the_file_and_pass_values_by_name(tmp_path: Path) -> None:
    env = hostile_env(tmp_path, "tcp")
    settings = DeploySettings(target_dir=str(tmp_path / "etc dir;id>PWNED3"), model="m")
    Path(settings.target_dir).mkdir()
    Path(settings.env_file).write_text(env.file_text("node-a"))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "podman"  # prints what podman would get: argv and the named variables
    fake.write_text(f"#!{sys.executable}\nimport json, os, sys\nprint(json.dumps("
                    "{'argv': sys.argv[1:], 'env': dict(os.environ)}))\n")
    fake.chmod(0o755)
    (bin_dir / "vllm").write_text(fake.read_text())
    (bin_dir / "vllm").chmod(0o755)
    work = tmp_path / "work"
    work.mkdir()
    argvs = []
    for script in (container_script(env, settings), vllm_script(env, ("vllm", "serve", "m"),
                                                                 settings)):
        path = tmp_path / "script.sh"
        path.write_text(script)
        done = subprocess.run(["sh", str(path), "image"], cwd=work, capture_output=True,
                              text=True, timeout=30, check=True,
                              env={"PATH": f"{bin_dir}:/usr/bin:/bin"})
        assert list(work.iterdir()) == []
        seen = json.loads(done.stdout)
        assert seen["env"]["GLOO_SOCKET_IFNAME"] == HOSTILE_NETDEV
        argvs.append(seen["argv"])
    assert "--env=GLOO_SOCKET_IFNAME" in argvs[0] and argvs[0][-1] == "image"
    assert argvs[1] == ["serve", "m"]


def test_env_file_comments_stay_single_lines(tmp_path: Path) -> None:
    text = hostile_env(tmp_path, "tcp").file_text("node-a")
    for line in text.splitlines():
        assert line == "" or line.startswith("# ") or "=" in line.split("#")[0]
    assert "PWNED1" in text.splitlines()[0]  # kept visible, on the comment line


@pytest.mark.parametrize("netdev", ["a,b", "a b", "a/b", "a:b", "x" * 16])
def test_interface_names_linux_or_nccl_cannot_take_are_refused(tmp_path: Path,
                                                               netdev: str) -> None:
    facts = list(facts_of(tmp_path, hostile_pair(netdev.replace("/", "_"))).values())
    if ifname_problem(netdev) is not None:
        # No kernel makes such an interface: a forged snapshot's is dropped where facts are
        # parsed (issue 22), so the deploy never meets it; its refusal still holds, directly.
        from strixwizard.deploy.env import check_netdev_name
        stored = netdev.replace("/", "_")  # a snapshot's directory cannot hold "/"
        assert ifname_problem(stored) is None or stored not in {d.name for f in facts for d in f.netdevs}
        with pytest.raises(DeployRefused, match="cannot be used"):
            check_netdev_name("node-a", netdev)
        return
    with pytest.raises(DeployRefused, match="cannot be used"):
        generate_env("site", facts, build_topology(facts), "tcp")

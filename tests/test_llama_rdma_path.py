"""The smoke test's read of each end's RDMA path (deploy/stacks/llama_rpc/path.py), judged on the kernel's
own sysfs words: GID type strings from drivers/infiniband/core/cache.c `gid_type_str`
("IB/RoCE v1", "RoCE v2"), GIDs as sysfs prints them (the rxe table recorded in
tests/data/vm/vm0.tar.gz: index 0 the link-local IPv6 GID, index 1 ::ffff:192.168.77.1, the
rest zero). The same read runs for real in tests/test_llama_rdma_vm.py."""

from __future__ import annotations

import subprocess

from strixwizard.deploy.stacks.llama_rpc.path import READ, EndPath, judge_path

V4_GID = "0000:0000:0000:0000:0000:ffff:c0a8:4d01"  # ::ffff:192.168.77.1
LINK_LOCAL = "fe80:0000:0000:0000:5054:00ff:fe77:0001"
EMPTY = "0000:0000:0000:0000:0000:0000:0000:0000"


def end(node: str = "vm0", gid_index: int | None = 1, *, device: str = "present",
        gid: str = V4_GID, kind: str = "RoCE v2", mtu: str = "1500",
        address: str = "192.168.77.1") -> EndPath:
    text = f"device={device}\nstate=4: ACTIVE\ngid={gid}\ntype={kind}\nmtu={mtu}\n"
    return EndPath.parse(node, "rxe0", 1, "eth0", address, gid_index, text)


def test_both_ends_ready_pass_with_the_mtu() -> None:
    check = judge_path([end(), end("vm1", gid="0000:0000:0000:0000:0000:ffff:c0a8:4d02",
                                   address="192.168.77.2")])
    assert (check.status, check.observed) == ("pass", "2 end(s) ready, MTU 1500")
    assert check.evidence[0] == ("vm0: rxe0 present, port 1 4: ACTIVE, GID 1 = "
                                 f"{V4_GID} RoCE v2, eth0 MTU 1500")


def test_each_broken_path_names_its_cause() -> None:
    gone = judge_path([end(), end("vm1", device="absent", gid="", kind="")])
    assert gone.status == "fail" and "vm1: RDMA device rxe0 is gone" in gone.observed
    assert "rdma link add rxe0 type rxe netdev eth0" in gone.observed
    missing = judge_path([end(gid_index=2, gid=EMPTY, kind="")])
    assert "vm0: GGML_RDMA_GID=2 is a missing GID" in missing.observed
    v1 = judge_path([end(gid_index=0, kind="IB/RoCE v1")])
    assert "vm0: GGML_RDMA_GID=0 is a GID of type IB/RoCE v1" in v1.observed and "not RoCE v2" in v1.observed
    other = judge_path([end(gid_index=0, gid=LINK_LOCAL)])
    assert f"GGML_RDMA_GID=0 is the GID of {LINK_LOCAL}" in other.observed
    assert "not of the fabric address 192.168.77.1" in other.observed
    mtu = judge_path([end(), end("vm1", mtu="4200", address="192.168.77.1")])
    assert "fabric MTU differs between the ends (vm0 1500, vm1 4200)" in mtu.observed


def test_no_forced_index_checks_device_and_mtu_only() -> None:
    assert judge_path([end(gid_index=None, gid="", kind="")]).status == "pass"
    argv = end(gid_index=None).read_argv()
    assert argv == ("sh", "-c", READ, "strixwizard-rdma-path", "rxe0", "1", "", "eth0")  # data
    done = subprocess.run((*argv[:4], "no-such-device", "1", "0", "no-such-netdev"),
                          capture_output=True, text=True, timeout=30, check=True)
    assert done.stdout == "device=absent\nstate=\ngid=\ntype=\nmtu=\n"  # $1.. are the values

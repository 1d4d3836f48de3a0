"""`deploy --stack llama-rpc --allow-soft-rdma` with REAL llama.cpp over REAL verbs: soft-RoCE
(rxe0) between two qemu VMs (tests/support/vmlab.py), RDMA negotiated by ggml-rpc's own transport.

`ggml-rpc-server` and `llama-server` come from `scripts/build_llama.sh 0.3.36 rdma`
(GGML_RPC_RDMA=ON against libibverbs; cached in ~/.cache/strixwizard-llama/0.3.36-rdma; the
namespace lab runs the same build, which stays on TCP there), staged into each VM's own share
(`/vmlab/bin`: the VM's /root and /tmp are its own tmpfs) by the session's `llama_pair`
(tests/conftest.py); the model is the tiny random GGUF of tests/support/llama_parts.py at
`/vmlab/tiny.gguf` on the head. vm0 is the head (llama-server),
vm1 the worker (ggml-rpc-server). The smoke test passes only when both logs say
`RDMA activated`; the negative cases break the RDMA path for real and the smoke test must
FAIL naming the cause, never pass over TCP:
- the peer's fabric MTU changed (4200 on vm1, 1500 on vm0) before the deploy;
- the worker's rxe device removed, and
- the worker's GID table changed so the planned GGML_RDMA_GID is a missing GID,
  both after the plan was made (the wizard's order: Discover, then Deploy later), through the
  same services the wizard calls.
The same deploy also runs through a login that is not root (`become: sudo`: the VMs' SUDO_USER,
whose key root does not accept), and still negotiates RDMA.
rxe registers RoCE v2 GIDs only, so "a GID of the wrong RoCE version" is judged on a
recorded ConnectX table (tests/test_llama_rdma_path.py), not here.
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.llama_vm import (
    BIN_DIR,
    HEALTH_TIMEOUT_S,
    MODEL,
    PROGRAMS,
    RUN_DIR,
    SSH_DEADLINE,
    TARGET,
    checks_of,
    deploy,
    roce_v2_gid_index,
    running,
    sh,
)
from tests.support.vmlab import FABRIC_NETDEV, RDMA_DEVICE, SUDO_USER, VmLab


@pytest.fixture
def lab(llama_pair: VmLab) -> Iterator[VmLab]:
    """After each test: nothing of ours running, the fabric as the lab made it."""
    cluster = llama_pair
    yield cluster
    for vm in cluster.vms:
        # the pid files name exactly the processes the deploy started in this VM
        cluster.run(vm, f"for f in {RUN_DIR}/*.pid; do [ -f \"$f\" ] && kill -9 $(head -n 1 \"$f\");"
                        f" rm -f \"$f\"; done; rm -rf {TARGET}", timeout=30)
        cluster.run(vm, f"ip link set dev {FABRIC_NETDEV} mtu 1500", timeout=30)
        if cluster.run(vm, f"test -d /sys/class/infiniband/{RDMA_DEVICE}", timeout=30).returncode:
            cluster.run(vm, f"rdma link add {RDMA_DEVICE} type rxe netdev {FABRIC_NETDEV}", timeout=60)


def rollback_leaves_nothing(lab: VmLab, site: Path, tmp: Path, run_id: str) -> None:
    rolled = deploy(site, tmp, "--rollback", run_id, "--yes", "--json")
    assert rolled.rc == 0, rolled.stdout[-3000:] + rolled.stderr[-3000:]
    for vm in lab.vms:
        for program in PROGRAMS:
            assert not running(lab, vm, program), f"{program} left running on {vm.name}"
        assert lab.run(vm, "test", "-e", TARGET).returncode != 0
        assert lab.run(vm, f"ls {RUN_DIR}/*.pid").returncode != 0  # no pid file left


def test_llama_rpc_negotiates_rdma_on_both_ends_over_soft_roce(lab: VmLab, tmp_path: Path) -> None:
    head, worker = lab.vms
    gids = {vm.name: roce_v2_gid_index(lab, vm) for vm in lab.vms}
    site = lab.write_site_yaml(tmp_path / "site.yaml", deadline=SSH_DEADLINE)
    begun = time.monotonic()
    applied = deploy(site, tmp_path, "--gguf", MODEL, "--apply", "--yes", "--json")
    took = time.monotonic() - begun
    assert applied.rc == 0, applied.stdout[-4000:] + applied.stderr[-3000:]
    doc = applied.json()
    smoke = checks_of(doc)
    assert doc["smoke"]["status"] == "pass", smoke
    assert smoke["llama.completion"]["status"] == "pass"
    transport = smoke["llama.transport"]
    assert (transport["status"], transport["observed"]) == ("pass", f"RDMA on {RDMA_DEVICE}")
    quoted = transport["evidence"]
    assert any(line.startswith("vm0 (llama-server): ") and "RDMA activated: qpn=" in line
               for line in quoted), quoted
    assert any(line.startswith("vm1 (ggml-rpc-server): ") and "RDMA activated: qpn=" in line
               for line in quoted), quoted
    assert smoke["llama.rdma_path"]["status"] == "pass", smoke["llama.rdma_path"]
    print(f"\nllama-rpc over soft-RoCE: deploy --apply to a smoke-tested cluster in {took:.1f} s; "
          f"completion: {smoke['llama.completion']['observed']}")
    print("\n".join(quoted))

    # the worker's RPC server: its fabric address only, the device and GID index of the real table
    listening = sh(lab, worker, "ss -Hltn").split()
    assert [a for a in listening if a.endswith(":50052")] == [f"{worker.fabric_addr}:50052"]
    pid = sh(lab, worker, f"head -n 1 {RUN_DIR}/ggml-rpc-server.pid").strip()
    environ = sh(lab, worker, f"cat /proc/{pid}/environ").split("\0")
    assert f"GGML_RDMA_DEV={RDMA_DEVICE}" in environ
    assert f"GGML_RDMA_GID={gids['vm1']}" in environ
    # the real logs of both ends, as llama.cpp wrote them (transport.cpp:345, :410)
    rpc_log = sh(lab, worker, f"cat {RUN_DIR}/ggml-rpc-server.log")
    assert "transport      : TCP (RDMA auto-negotiate enabled)" in rpc_log
    assert f"RDMA probed: dev={RDMA_DEVICE} gid={gids['vm1']} RoCEv2" in rpc_log
    assert "RDMA activated: qpn=" in rpc_log and "RDMA activate failed" not in rpc_log
    server_log = sh(lab, head, f"cat {RUN_DIR}/llama-server.log")
    assert f"RDMA probed: dev={RDMA_DEVICE} gid={gids['vm0']} RoCEv2" in server_log
    assert "RDMA activated: qpn=" in server_log

    rollback_leaves_nothing(lab, site, tmp_path, doc["apply"]["run_id"])


def _fingerprint(public_key: Path) -> str:
    """`SHA256:...` of an OpenSSH public key file, as sshd logs the key that logged in."""
    blob = base64.b64decode(public_key.read_text().split()[1])
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


def test_llama_rpc_negotiates_rdma_through_a_sudo_login_with_no_root_login(
        lab: VmLab, tmp_path: Path) -> None:
    site = lab.write_site_yaml(tmp_path / "site.yaml", deadline=SSH_DEADLINE, login=SUDO_USER)
    seen = {vm.name: len(vm.console_log.read_text(errors="replace")) for vm in lab.vms}
    applied = deploy(site, tmp_path, "--gguf", MODEL, "--apply", "--yes", "--json")
    assert applied.rc == 0, applied.stdout[-4000:] + applied.stderr[-3000:]
    doc = applied.json()
    smoke = checks_of(doc)
    assert doc["smoke"]["status"] == "pass", smoke
    assert (smoke["llama.transport"]["status"], smoke["llama.transport"]["observed"]) == (
        "pass", f"RDMA on {RDMA_DEVICE}")
    print(f"\nllama-rpc over soft-RoCE through sudo: {smoke['llama.completion']['observed']}")
    for vm in lab.vms:  # what the deploy started runs as root: it went through sudo
        program = "llama-server" if vm is lab.vms[0] else "ggml-rpc-server"
        pid = sh(lab, vm, f"head -n 1 {RUN_DIR}/{program}.pid").strip()
        assert sh(lab, vm, f"stat -c %u /proc/{pid}").strip() == "0"
    key = _fingerprint(lab.user_key.with_name(lab.user_key.name + ".pub"))
    for vm in lab.vms:  # sshd's own log (its stderr is the console): the user's key, never root
        logged = vm.console_log.read_text(errors="replace")[seen[vm.name]:]
        accepted = [line for line in logged.splitlines() if "Accepted publickey for" in line]
        assert any(f"for {SUDO_USER} " in line and key in line for line in accepted), accepted
        assert not any(f"for {SUDO_USER} " not in line and key in line for line in accepted)
    rollback_leaves_nothing(lab, site, tmp_path, doc["apply"]["run_id"])


def test_a_peer_with_another_fabric_mtu_fails_the_smoke_naming_the_mtu(
        lab: VmLab, tmp_path: Path) -> None:
    worker = lab.vms[1]
    sh(lab, worker, f"ip link set dev {FABRIC_NETDEV} mtu 4200")
    site = lab.write_site_yaml(tmp_path / "site.yaml", deadline=SSH_DEADLINE)
    applied = deploy(site, tmp_path, "--gguf", MODEL, "--apply", "--yes", "--json")
    doc = applied.json()
    assert applied.rc == 1, applied.stdout[-4000:] + applied.stderr[-3000:]
    path = checks_of(doc)["llama.rdma_path"]
    assert path["status"] == "fail"
    assert "fabric MTU differs between the ends (vm0 1500, vm1 4200)" in path["observed"]
    print(f"\nMTU case: {json.dumps(checks_of(doc), indent=1)[:4000]}")
    rollback_leaves_nothing(lab, site, tmp_path, doc["apply"]["run_id"])


def _deploy_with_a_plan_made_before(lab: VmLab, tmp_path: Path, change: Callable[[], None]
                                    ) -> tuple[Any, Any]:
    """Plan (the wizard's Discover and Deploy screens), then `change` a node, then apply with
    that plan through the services the wizard calls; returns (Deployed, DeployOptions)."""
    from strixwizard.deploy.plan import DeploySettings
    from strixwizard.deploy.stacks.llama_rpc.llama import LlamaSettings
    from strixwizard.services import deploy as services
    from strixwizard.services.discover import check, read_nodes
    from strixwizard.services.nodes import RunRequest

    site_file = lab.write_site_yaml(tmp_path / "site.yaml", deadline=SSH_DEADLINE)
    found = read_nodes(RunRequest(site_file=site_file, allow_soft_rdma=True))
    site = found.site
    settings = DeploySettings(stack="llama-rpc", options=(LlamaSettings(
        model=MODEL, bin_dir=BIN_DIR, health_timeout_s=HEALTH_TIMEOUT_S),))
    preview = services.plan(found, check(found), settings, "rdma")
    assert preview.plan is not None, preview.refused
    change()
    options = services.DeployOptions(journal_dir=tmp_path / "journal")
    with services.opened(site, preview.plan, options) as opened:
        deployed = services.apply_on(opened, site, lambda question: True, options)
    return deployed, options


def _roll_back(lab: VmLab, deployed: Any, options: Any) -> None:
    from strixwizard.services import deploy as services

    assert deployed.report is not None
    rolled = services.rollback(deployed.report.run_id, lambda question: True, options)
    assert rolled.ok, rolled
    for vm in lab.vms:
        for program in PROGRAMS:
            assert not running(lab, vm, program), f"{program} left running on {vm.name}"


def test_the_workers_rxe_device_removed_after_the_plan_fails_the_smoke_naming_it(
        lab: VmLab, tmp_path: Path) -> None:
    worker = lab.vms[1]
    deployed, options = _deploy_with_a_plan_made_before(
        lab, tmp_path, lambda: sh(lab, worker, f"rdma link delete {RDMA_DEVICE}"))
    try:
        assert deployed.smoke is not None and deployed.smoke.status == "fail", deployed
        checks = {c.id: c for c in deployed.smoke.checks}
        print(f"\nrxe removed: {[(c.id, c.status, c.observed) for c in deployed.smoke.checks]}")
        path = checks["llama.rdma_path"]
        assert path.status == "fail"
        assert f"vm1: RDMA device {RDMA_DEVICE} is gone" in path.observed
        transport = checks["llama.transport"]  # ggml-rpc's own fallback, from the real logs
        assert (transport.status, transport.observed) == ("fail", "TCP FALLBACK")
        assert "vm1 (ggml-rpc-server): no `RDMA probed` line" in transport.detail
    finally:
        _roll_back(lab, deployed, options)


def test_a_planned_gid_index_that_went_missing_fails_the_smoke_naming_it(
        lab: VmLab, tmp_path: Path) -> None:
    worker = lab.vms[1]
    address = f"{worker.fabric_addr}/24"
    planned_gid = roce_v2_gid_index(lab, worker)

    def shift_the_gid_table() -> None:
        # the fabric address leaves its GID slot to another address (another subnet, so it is
        # no secondary of it), comes back in the next slot, and the other address goes away
        sh(lab, worker, f"ip addr del {address} dev {FABRIC_NETDEV} && "
                         f"ip addr add 10.77.0.2/24 dev {FABRIC_NETDEV} && sleep 1 && "
                         f"ip addr add {address} dev {FABRIC_NETDEV} && sleep 1 && "
                         f"ip addr del 10.77.0.2/24 dev {FABRIC_NETDEV} && sleep 1")
        assert roce_v2_gid_index(lab, worker) != planned_gid

    try:
        deployed, options = _deploy_with_a_plan_made_before(lab, tmp_path, shift_the_gid_table)
        try:
            assert deployed.report is not None
            smoked = deployed.smoke.checks if deployed.smoke else []
            print(f"\nmissing GID: apply {deployed.report.status}; smoke "
                  f"{[(c.id, c.status, c.observed) for c in smoked]}")
            assert deployed.smoke is not None and deployed.smoke.status != "pass"
            checks = {c.id: c for c in deployed.smoke.checks}
            path = checks["llama.rdma_path"]
            assert path.status == "fail"
            assert f"vm1: GGML_RDMA_GID={planned_gid} is a missing GID" in path.observed
        finally:
            _roll_back(lab, deployed, options)
    finally:  # the address back in its first slot
        lab.run(worker, f"ip addr del {address} dev {FABRIC_NETDEV}; "
                        f"ip addr del 10.77.0.2/24 dev {FABRIC_NETDEV}; "
                        f"ip addr add {address} dev {FABRIC_NETDEV}", timeout=30)

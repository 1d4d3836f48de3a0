"""strixwizard against a real kernel RDMA stack: soft-RoCE (rxe0) between two qemu VMs.

The VM lab (tests/support/vmlab.py) boots Debian's kernel under TCG; sysfs, the GID
table, configfs rdma_cm and ``ibv_devinfo`` are the kernel's own.  Timings are
not meaningful under emulation, so nothing here asserts a speed.  The tests
skip, with the reason, only when the VM lab cannot run on this machine (no
qemu, not root, the kernel package cannot be downloaded).

The replay tests at the end run everywhere: they read the snapshot captured
from such a VM (tests/data/vm/).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from strixwizard.facts import NodeFacts
from strixwizard.facts.rdma import RdmaPort, parse_ibv_devinfo, rdma_devices, roce_active_mtu
from strixwizard.probe.snapshot import SnapshotProbe
from tests.support.cli import run_cli
from tests.support.vm_records import SNAPSHOT, replay_site
from tests.support.vmlab import FABRIC_NETDEV, RDMA_DEVICE, VmLab

CLI_TIMEOUT = 240.0



@pytest.fixture(scope="module")
def pair(soft_roce_pair: VmLab) -> VmLab:
    """The session's shared soft-RoCE pair (tests/conftest.py), reset around this module."""
    return soft_roce_pair


def _rxe_port(probe: SnapshotProbe) -> RdmaPort:
    devices = {d.name: d for d in rdma_devices(probe)}
    assert list(devices) == [RDMA_DEVICE]
    device = devices[RDMA_DEVICE]
    assert device.kind == "rxe"
    assert not device.is_hardware
    assert device.parent_netdev == FABRIC_NETDEV
    assert len(device.ports) == 1
    return device.ports[0]


def _assert_rxe_port(port: RdmaPort, fabric_addr: str) -> None:
    """What the real kernel shows for rxe0 on a 1500-byte eth0 with one IPv4 address."""
    assert port.number == 1
    assert port.state == "ACTIVE"
    assert port.phys_state == "LinkUp"
    assert port.link_layer == "Ethernet"
    assert port.netdev == FABRIC_NETDEV
    gid = port.roce_v2_ipv4_gid(FABRIC_NETDEV)
    assert gid is not None
    assert (gid.index, gid.type, gid.ipv4) == (1, "RoCE v2", fabric_addr)
    assert "RoCE v2" in port.roce_versions
    assert (port.active_mtu, port.max_mtu) == (1024, 4096)
    assert port.active_mtu == roce_active_mtu(1500, port.max_mtu)[0]


def _release(lab: VmLab) -> str:
    assert lab.kernel is not None
    return lab.kernel.release


def _active_mtu(lab: VmLab, vm_name: str) -> tuple[int, int | None]:
    out = lab.run(lab.vm(vm_name), "ibv_devinfo", "-v", "-d", RDMA_DEVICE).stdout
    info = parse_ibv_devinfo(out)[(RDMA_DEVICE, 1)]
    assert info.active_mtu is not None
    return info.active_mtu, info.max_mtu


def test_vms_boot_to_sshd_with_rxe0_on_the_fabric(pair: VmLab) -> None:
    for vm in pair.vms:
        assert vm.boot_seconds is not None and vm.boot_seconds < 60
        done = pair.run(vm, "rdma", "-j", "link", "show")
        assert done.returncode == 0, done.stderr
        links = json.loads(done.stdout)
        assert [(lk["ifname"], lk["state"], lk["netdev"]) for lk in links] == [
            (RDMA_DEVICE, "ACTIVE", FABRIC_NETDEV)
        ]
    vm0, vm1 = pair.vms
    ping = pair.run(vm0, "ping", "-c", "1", "-W", "5", vm1.fabric_addr or "")
    assert ping.returncode == 0, ping.stdout + ping.stderr


def test_doctor_over_two_vms_judges_rxe_as_software_rdma(pair: VmLab, tmp_path: Path) -> None:
    site = pair.write_site_yaml(tmp_path / "site.yaml")
    started = time.monotonic()
    result = run_cli("doctor", "--site", str(site), "--json", timeout=CLI_TIMEOUT)
    print(f"doctor --site over 2 VMs: {time.monotonic() - started:.1f} s")
    report = result.json()
    hosts = {h["name"]: h for h in report["hosts"]}
    assert set(hosts) == {"vm0", "vm1"}
    for host in hosts.values():
        assert host["reachable"], host["error"]
        assert host["facts"]["rdma_devices"] == [RDMA_DEVICE]
        assert host["facts"]["kernel"] == _release(pair)
    checks = {(c["id"], c["host"]): c for c in report["checks"]}
    for name in hosts:
        soft = checks[("usb4.soft_rdma", name)]
        assert soft["status"] == "warn"
        assert soft["observed"] == f"{RDMA_DEVICE}: software rxe over {FABRIC_NETDEV}"
        capable = checks[("nic.rdma_capable", name)]
        assert capable["status"] == "fail"
        assert RDMA_DEVICE in capable["observed"]
    [link] = report["links"]
    assert link["transport"] == "ethernet" and link["rdma"] is False
    assert {end["mtu"] for end in link["ends"]} == {1500}


def test_capture_of_a_vm_reads_the_real_gid_table(pair: VmLab, tmp_path: Path) -> None:
    site = pair.write_site_yaml(tmp_path / "site.yaml")
    out = tmp_path / "captured"
    result = run_cli("capture", "--site", str(site), "--out", str(out), timeout=CLI_TIMEOUT)
    assert result.rc == 0, result.stderr
    for vm in pair.vms:
        probe = SnapshotProbe.load(out / f"{vm.name}.tar.gz")
        _assert_rxe_port(_rxe_port(probe), vm.fabric_addr or "")
        assert NodeFacts(vm.name, probe).kernel.release == _release(pair)


def test_netdev_mtu_moves_rxe_active_mtu_as_the_model_says(pair: VmLab) -> None:
    """The kernel's RoCE MTU rule against strixwizard.facts.rdma.roce_active_mtu."""
    vm = pair.vms[0]
    seen = {}
    try:
        for mtu in (1500, 4200, 9000):
            done = pair.run(vm, "ip", "link", "set", "dev", FABRIC_NETDEV, "mtu", str(mtu))
            assert done.returncode == 0, done.stderr
            active, max_mtu = _active_mtu(pair, vm.name)
            seen[mtu] = active
            assert active == roce_active_mtu(mtu, max_mtu)[0], (mtu, active, max_mtu)
    finally:
        pair.run(vm, "ip", "link", "set", "dev", FABRIC_NETDEV, "mtu", "1500")
    assert seen == {1500: 1024, 4200: 4096, 9000: 4096}


def _fix(*args: str) -> dict[str, Any]:
    result = run_cli("fix", *args, "--yes", "--json", timeout=CLI_TIMEOUT)
    assert result.rc == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.json()  # type: ignore[no-any-return]


def test_mtu_fix_on_the_fabric_netdev_moves_active_mtu_and_rolls_back(pair: VmLab, tmp_path: Path) -> None:
    site = pair.write_site_yaml(tmp_path / "site.yaml", fabric_mtu=9000)
    journals = str(tmp_path / "journal")
    try:
        applied = _fix("--site", str(site), "--only", "net.mtu", "--apply", "--journal-dir", journals)
        report = applied["apply"]
        assert report["status"] == "applied"
        assert {(n["node"], n["status"]) for n in report["nodes"]} == {("vm0", "applied"), ("vm1", "applied")}
        # both ends at 1500, below the site's 9000: link.mtu warned before and passes now
        assert {(v["node"], v["status"]) for v in report["verification"]} == {
            ("vm0", "cured"),
            ("vm1", "cured"),
        }
        for vm in pair.vms:
            assert pair.run(vm, "cat", f"/sys/class/net/{FABRIC_NETDEV}/mtu").stdout.strip() == "9000"
            assert _active_mtu(pair, vm.name) == (4096, 4096) == (roce_active_mtu(9000, 4096)[0], 4096)
        rolled = _fix("--rollback", "--journal-dir", journals, "--site", str(site))["rollback"]
        assert rolled["ok"]
        for vm in pair.vms:
            assert pair.run(vm, "cat", f"/sys/class/net/{FABRIC_NETDEV}/mtu").stdout.strip() == "1500"
            assert _active_mtu(pair, vm.name)[0] == 1024
    finally:
        for vm in pair.vms:
            pair.run(vm, "ip", "link", "set", "dev", FABRIC_NETDEV, "mtu", "1500")


RDMA_CM_DIR = f"/sys/kernel/config/rdma_cm/{RDMA_DEVICE}"
RDMA_CM_PORT = f"{RDMA_CM_DIR}/ports/1"
#: the site's PFC priority 3 -> DSCP 26 -> ToS 104
ROCE_TOS = "104"
#: what a rolled-back, removed rdma_cm directory shows when created again (see below)


def _configfs(lab: VmLab, vm_name: str) -> tuple[str, str] | None:
    """(default_roce_mode, default_roce_tos) of rxe0 port 1, None when the directory is absent."""
    done = lab.run(
        lab.vm(vm_name), "cat", f"{RDMA_CM_PORT}/default_roce_mode", f"{RDMA_CM_PORT}/default_roce_tos"
    )
    if done.returncode != 0:
        return None
    mode, tos = done.stdout.splitlines()
    return mode, tos


def test_doctor_with_allow_soft_rdma_judges_the_rxe_link_from_the_real_sysfs(
    pair: VmLab, tmp_path: Path
) -> None:
    site = pair.write_site_yaml(tmp_path / "site.yaml", allow_soft_rdma=True)
    report = run_cli("doctor", "--site", str(site), "--json", timeout=CLI_TIMEOUT).json()
    checks = {(c["id"], c["host"]): c for c in report["checks"]}
    for vm in pair.vms:
        assert checks[("rdma.port_active", vm.name)]["observed"] == "ACTIVE / LinkUp"
        gid = checks[("rdma.roce_v2_gid", vm.name)]
        assert (gid["status"], gid["observed"]) == ("pass", f"GID index 1 = ::ffff:{vm.fabric_addr} RoCE v2")
        mtu = checks[("rdma.active_mtu", vm.name)]
        assert (mtu["status"], mtu["observed"]) == ("warn", "active_mtu 1024, eth0 MTU 1500")
        assert checks[("nic.rdma_capable", vm.name)]["status"] == "fail"  # still not hardware
    [link] = report["links"]
    assert (link["transport"], link["rdma"]) == ("roce-v2", True)
    assert "software RDMA: tests the setup and the tool, not production speed" in link["evidence"]
    assert [(e["rdma_device"], e["port"], e["gid_index"], e["active_mtu"]) for e in link["ends"]] == [
        (RDMA_DEVICE, 1, 1, 1024)
    ] * 2


def test_roce_v2_default_fix_writes_real_configfs_and_rolls_back(pair: VmLab, tmp_path: Path) -> None:
    vm0, vm1 = pair.vms
    plain = pair.write_site_yaml(tmp_path / "plain.yaml")
    refused = _fix("--site", str(plain), "--only", "rdma.roce_v2_default")
    assert refused["plans"] == []  # without the opt-in rxe is not the fabric's RDMA
    site = pair.write_site_yaml(tmp_path / "site.yaml", allow_soft_rdma=True)
    journals = str(tmp_path / "journal")
    # vm0: an rdma_cm directory someone made earlier, with their own ToS; vm1: none yet
    made = pair.run(vm0, f"mkdir {RDMA_CM_DIR} && echo 32 > {RDMA_CM_PORT}/default_roce_tos")
    assert made.returncode == 0, made.stderr
    assert _configfs(pair, vm0.name) == ("RoCE v2", "32")
    assert _configfs(pair, vm1.name) is None
    try:
        report = _fix(
            "--site", str(site), "--only", "rdma.roce_v2_default", "--apply", "--journal-dir", journals
        )
        applied = report["apply"]
        steps = {n["node"]: [s["summary"] for s in n["steps"]] for n in applied["nodes"]}
        assert len(steps["vm0"]) == 1 and "ToS 104" in steps["vm0"][0]
        assert len(steps["vm1"]) == 3  # mkdir, mode, ToS
        # vm1 had no rdma_cm directory: its check could not judge it before (a skip), so the
        # fix is "passing" there, not "cured"; vm0's ToS 32 failed and is cured
        assert {(v["node"], v["status"]) for v in applied["verification"]} == {
            ("vm0", "cured"),
            ("vm1", "passing"),
        }
        assert _configfs(pair, vm0.name) == ("RoCE v2", ROCE_TOS)
        assert _configfs(pair, vm1.name) == ("RoCE v2", ROCE_TOS)
        rolled = _fix("--rollback", "--journal-dir", journals, "--site", str(site))["rollback"]
        assert rolled["ok"], rolled
        assert _configfs(pair, vm0.name) == ("RoCE v2", "32")  # the earlier value, back
        assert _configfs(pair, vm1.name) is None  # the directory the fix made, gone
        # the kernel keeps rdma_cm's values in the device, not in the directory: the rollback
        # wrote back what the device had (read right after the fix's mkdir) before removing it
        again = pair.run(vm1, f"mkdir {RDMA_CM_DIR} && cat {RDMA_CM_PORT}/default_roce_tos")
        assert again.stdout.strip() == "0", again.stdout
    finally:
        for vm in pair.vms:
            pair.run(vm, "rmdir", RDMA_CM_DIR)


SOFT_LABEL = "software RDMA: tests the setup and the tool, not production speed"


def test_latency_with_allow_soft_rdma_runs_real_ib_write_lat_beside_the_verbs_ping_pong(
    pair: VmLab, tmp_path: Path
) -> None:
    site = pair.write_site_yaml(tmp_path / "site.yaml")
    argv = ("test", "latency", "--site", str(site), "--no-history", "--no-references", "--seconds", "5")
    started = time.monotonic()
    report = run_cli(*argv, "--allow-soft-rdma", "--json", timeout=CLI_TIMEOUT).json()
    print(f"test latency --allow-soft-rdma over 2 VMs: {time.monotonic() - started:.1f} s")
    results = {r["tool"]: r for r in report["results"]}
    perftest = results["ib_write_lat"]
    assert perftest["source"] == "measured"
    assert perftest["figure"] is not None and 0 < perftest["figure"] < 1e6, perftest["summary"]
    assert perftest["status"] == "fail"  # emulated rxe is far over the 8 µs of hardware RDMA
    assert perftest["detail"]["note"] == SOFT_LABEL
    server = perftest["detail"]["server_argv"]
    assert server[server.index("-d") + 1 :][:3] == [RDMA_DEVICE, "-i", "1"]
    assert server[server.index("-x") + 1] == "1" and server[server.index("-m") + 1] == "1024"
    verbs = results["strixwizard verbs ping-pong"]  # beside it, on the same link
    assert verbs["path"] == perftest["path"]
    assert verbs["detail"]["note"] == SOFT_LABEL and verbs["detail"]["perftest_tool"] == "ib_write_lat"
    assert verbs["status"] == "fail" and verbs["figure"] > 0, verbs["summary"]  # a real figure
    ratio = verbs["detail"]["ratio_to_perftest"]
    assert ratio > 0 and f"{ratio:.2f}x ib_write_lat's median" in verbs["summary"]
    print(
        f"verbs ping-pong / ib_write_lat: {ratio:.2f} ({verbs['figure']:.0f} / {perftest['figure']:.0f} µs)"
    )
    [pair] = report["like_for_like"]
    assert pair["rdma"]["tool"] == "ib_write_lat" and pair["ratio"] > 0
    assert {(c["device"], c["counter"]) for c in report["counters"]} >= {  # the kernel's rxe counters
        (f"{RDMA_DEVICE}/1", "rcvd_seq_err"), (f"{RDMA_DEVICE}/1", "out_of_seq_request")}, report["counters"]
    plain = run_cli(*argv, "--json", timeout=CLI_TIMEOUT).json()
    rdma = next(r for r in plain["results"] if r["transport"] == "rdma")
    assert rdma["status"] == "skip" and "no hardware RDMA" in rdma["summary"]


def test_decode_with_allow_soft_rdma_measures_the_all_reduce_over_real_verbs_beside_tcp(
    pair: VmLab, tmp_path: Path
) -> None:
    """`test decode`: RCCL is absent on the VMs, so the RDMA all-reduce is the pyverbs
    program's 2-rank ring over rxe0 at each decode size (measured), beside TCP on the same
    pair (estimated from its ping-pong); the tok/s table's RDMA rows say measured."""
    site = pair.write_site_yaml(tmp_path / "site.yaml")
    started = time.monotonic()
    done = run_cli("test", "decode", "--site", str(site), "--no-history", "--model", "Llama-3.1-8B",
                   "--allow-soft-rdma", "--json", timeout=CLI_TIMEOUT)
    took = time.monotonic() - started
    report = done.json()
    results = {r["tool"]: r for r in report["results"]}
    verbs = results["strixwizard verbs all-reduce"]
    assert verbs["status"] == "pass", verbs["summary"]
    assert verbs["source"] == "measured" and "software RDMA" in verbs["summary"]
    assert verbs["path"].startswith(f"vm0:{RDMA_DEVICE}") and f"vm1:{RDMA_DEVICE}" in verbs["path"]
    points = verbs["detail"]["collectives"]
    assert [p["size_bytes"] for p in points] == [4096, 8192, 16384]  # 8B: 4096 x bf16 at batch 1
    assert all((p["transport"], p["source"]) == ("rdma", "measured") and p["allreduce_us"] > 0
               for p in points), points
    assert "ib_write_lat" not in results  # measured, so nothing estimated for RDMA
    tcp = next(r for r in report["results"] if r["transport"] == "tcp" and r["kind"] == "decode")
    assert tcp["status"] == "pass" and "192.168.77.2" in tcp["path"], tcp  # the same pair's fabric
    rows = {(p["transport"], p["tp"]): p for p in report["decode"]["predictions"]}
    assert rows[("rdma", 2)]["source"] == "measured", rows[("rdma", 2)]
    assert rows[("tcp", 2)]["source"] == "estimated"
    print(f"\ntest decode --allow-soft-rdma over 2 VMs: {took:.1f} s")
    for p in points:
        tcp_at = next(q["allreduce_us"] for q in tcp["detail"]["collectives"]
                      if q["size_bytes"] == p["size_bytes"])
        print(f"  all-reduce {p['size_bytes']} B: RDMA (verbs, soft-RoCE) {p['allreduce_us']:.0f} µs,"
              f" TCP (estimated) {tcp_at:.0f} µs")
    for key in (("rdma", 2), ("tcp", 2)):
        print(f"  Llama-3.1-8B TP=2 over {key[0]}: {rows[key]['tokens_per_s']:.2f} tok/s "
              f"({rows[key]['comm_share']:.0%} comm, {rows[key]['source']})")


# -- replay of the recorded VM (runs everywhere) ----------------------------------------------


def test_bandwidth_with_allow_soft_rdma_runs_real_ib_write_bw(pair: VmLab, tmp_path: Path) -> None:
    site = pair.write_site_yaml(tmp_path / "site.yaml", allow_soft_rdma=True)
    started = time.monotonic()
    report = run_cli("test", "bandwidth", "--site", str(site), "--no-history", "--seconds", "5",
                     "--allow-soft-rdma", "--json", timeout=CLI_TIMEOUT).json()
    print(f"test bandwidth --allow-soft-rdma over 2 VMs: {time.monotonic() - started:.1f} s")
    [bandwidth] = [r for r in report["results"] if r["tool"] == "ib_write_bw"]
    assert bandwidth["source"] == "measured", bandwidth["summary"]
    assert bandwidth["figure"] is not None and bandwidth["figure"] > 0, bandwidth["summary"]
    assert bandwidth["detail"]["note"] == SOFT_LABEL
    server = bandwidth["detail"]["server_argv"]
    assert server[server.index("-d") + 1] == RDMA_DEVICE and server[server.index("-x") + 1] == "1"


def _running(lab: VmLab, vm_name: str, program: str) -> bool:
    """Whether `program` runs on the VM (pgrep inside the VM's own kernel: a read, no signal)."""
    return lab.run(lab.vm(vm_name), "pgrep", "-x", program, timeout=20).returncode == 0


def test_a_vm_killed_mid_test_is_reported_lost_and_leaves_nothing_on_its_peer(
    pair: VmLab, tmp_path: Path
) -> None:
    """It kills vm1: the shared pair boots it again before the next module."""
    vm0, vm1 = pair.vms
    site = pair.write_site_yaml(tmp_path / "site.yaml", allow_soft_rdma=True)
    argv = [sys.executable, "-m", "strixwizard", "test", "latency", "--site", str(site),
            "--no-history", "--no-references", "--seconds", "30", "--json"]
    run = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 180
        while not any(_running(pair, vm.name, "ib_write_lat") for vm in (vm0, vm1)):
            assert run.poll() is None, "the test ended before ib_write_lat started"
            assert time.monotonic() < deadline, "ib_write_lat never started on either VM"
            time.sleep(0.5)
        pair.kill(vm1)
        out, err = run.communicate(timeout=CLI_TIMEOUT)
    finally:
        if run.poll() is None:
            run.kill()
            run.communicate(timeout=30)
    assert "Traceback" not in err
    report = json.loads(out)
    lost = [r for r in report["results"] if r["transport"] == "rdma" and r["status"] == "error"]
    assert lost, report["results"]
    assert any("vm1" in r["summary"] for r in lost), [r["summary"] for r in lost]
    deadline = time.monotonic() + 30  # the supervisor ends what the run started on vm0
    while _running(pair, vm0.name, "ib_write_lat") and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not _running(pair, vm0.name, "ib_write_lat"), "ib_write_lat left running on vm0"


def test_recorded_vm_snapshot_holds_the_real_rxe_port() -> None:
    probe = SnapshotProbe.load(SNAPSHOT)
    _assert_rxe_port(_rxe_port(probe), "192.168.77.1")


def test_doctor_replays_the_recorded_vm() -> None:
    result = run_cli("doctor", "--snapshot", str(SNAPSHOT), "--json")
    report = result.json()
    [host] = report["hosts"]
    assert host["facts"]["rdma_devices"] == [RDMA_DEVICE]
    soft = next(c for c in report["checks"] if c["id"] == "usb4.soft_rdma")
    assert (soft["status"], soft["observed"]) == ("warn", "rxe0: software rxe over eth0")


def test_recorded_vms_replayed_with_allow_soft_rdma_form_a_roce_v2_link(tmp_path: Path) -> None:
    site = replay_site(tmp_path / "soft.yaml", allow_soft_rdma=True)
    [link] = run_cli("doctor", "--site", str(site), "--json").json()["links"]
    assert (link["transport"], link["rdma"]) == ("roce-v2", True)
    assert "software RDMA" in link["evidence"]
    assert [(e["rdma_device"], e["gid_index"], e["active_mtu"]) for e in link["ends"]] == [
        (RDMA_DEVICE, 1, 1024)
    ] * 2
    plain = replay_site(tmp_path / "plain.yaml", allow_soft_rdma=False)
    [link] = run_cli("doctor", "--site", str(plain), "--json").json()["links"]
    assert (link["transport"], link["rdma"], link["ends"][0]["rdma_device"]) == ("ethernet", False, None)
    [flagged] = run_cli("doctor", "--site", str(plain), "--allow-soft-rdma", "--json").json()["links"]
    assert flagged == run_cli("doctor", "--site", str(site), "--json").json()["links"][0]


def test_allow_soft_rdma_in_the_site_file_must_be_true_or_false(tmp_path: Path) -> None:
    from strixwizard.site import SiteError, parse_site

    nodes = "nodes:\n  - name: a\n    host: local\n"
    assert parse_site(f"site: s\nallow_soft_rdma: true\n{nodes}", "s.yaml").allow_soft_rdma
    assert not parse_site(f"site: s\n{nodes}", "s.yaml").allow_soft_rdma
    with pytest.raises(SiteError, match=r"s.yaml:2: allow_soft_rdma must be a bool"):
        parse_site(f"site: s\nallow_soft_rdma: 3\n{nodes}", "s.yaml")


def test_side_by_side_labels_both_and_gives_the_ratio_ours_to_perftest() -> None:
    from strixwizard.live.results import LatencyStats, Measurement
    from strixwizard.live.soft_rdma import side_by_side
    from strixwizard.model import Status

    def latency(tool: str, median: float | None) -> Measurement:
        stats = LatencyStats(None, median, None, None, None, None) if median else None
        return Measurement("latency", "rdma", tool, ("a", "b"), Status.FAIL, "RDMA: ...", latency=stats)

    perftest, verbs = side_by_side(latency("ib_write_lat", 200.0), latency("verbs", 500.0))
    assert perftest.detail["note"] == verbs.detail["note"] == SOFT_LABEL
    assert verbs.detail["ratio_to_perftest"] == 2.5
    assert verbs.summary.endswith("(2.50x ib_write_lat's median 200.00 µs)")
    _, missing = side_by_side(latency("ib_write_lat", None), latency("verbs", 500.0))
    assert missing.detail["ratio_to_perftest"] is None and missing.summary == "RDMA: ..."

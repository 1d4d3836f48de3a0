"""Fixes that claim to survive a reboot, through a REAL reboot: two VMs with systemd as PID 1
and a persistent ext4 disk as their overlay's upper layer (tests/support/vmlab.py, init="systemd"), so
the VM's /etc and /var survive `systemctl reboot`.

The boot's kernel command line: qemu runs with -no-reboot, so a guest reboot ends it; the
lab's boot step then reads /etc/kernel/cmdline from the disk image (debugfs, nothing mounted
here) and starts qemu with those words appended (`VmLab.reboot`). That is the file the GTT and
IOMMU plans tell a node without grubby to edit; the fixes themselves cannot run in a VM (no
grubby on Debian, no Strix Halo iGPU: their plans only say what to edit), so the test writes
the file in the VM as a user following that note would.

What runs for real: `fix --apply` of net.mtu (9000; no NetworkManager or networkd in the VM,
so the plan's systemd unit replays it at boot), rdma.roce_v2_default (configfs rdma_cm: a
tmpfiles.d file and a unit replaying it at boot; soft-RoCE opted in) and limits.memlock (a
limits.d file; the lab's sshd uses PAM here, as Debian's does); reboot both VMs; `doctor`
passes what the fixes cured, read from the kernel after the boot; `fix --rollback`; reboot;
every value back to what it was before.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.cli import run_cli
from tests.support.llama_parts import build
from tests.support.vmlab import FABRIC_NETDEV, RDMA_DEVICE, Vm, VmLab, persisted_bytecode, vm_lab_fixture
from tests.test_llama_rdma_vm import (
    MODEL,
    PROGRAMS,
    RUN_DIR,
    _sh,
    checks_of,
    deploy,
    running,
    stage_llama,
)

bootvms = vm_lab_fixture(2, name="bootvms", init="systemd")
CLI_TIMEOUT = 900.0
SSH_DEADLINE = 400.0  # per node: TCG VMs on 2 busy cores collect in 1-4 minutes
FIXES = ("net.mtu", "rdma.roce_v2_default", "limits.memlock")
RDMA_CM_PORT = f"/sys/kernel/config/rdma_cm/{RDMA_DEVICE}/ports/1"


def observed(lab: VmLab, vm: Vm) -> dict[str, str]:
    """What the fixes change, read in the VM's kernel and a new login session."""
    script = (f"echo mtu=$(cat /sys/class/net/{FABRIC_NETDEV}/mtu); echo memlock=$(ulimit -l);"
              f" echo tos=$(cat {RDMA_CM_PORT}/default_roce_tos 2>/dev/null || echo absent);"
              " echo units=$(systemctl list-unit-files 'strixwizard*' --no-legend | sort |"
              " tr -s ' ' | tr '\\n' ','); echo init=$(cat /proc/1/comm)")
    done = lab.run(vm, script, timeout=60)
    assert done.returncode == 0, done.stderr
    return dict(line.partition("=")[::2] for line in done.stdout.splitlines())


def fix(*args: str) -> dict[str, Any]:
    """`fix ... --yes --json`; exit 1 is a verdict here (limits.memlock is "not-verified" until
    a new session, which the reboot gives)."""
    done = run_cli("fix", *args, "--yes", "--json", timeout=CLI_TIMEOUT)
    assert done.rc in (0, 1), done.stdout[-3000:] + done.stderr[-3000:]
    return done.json()  # type: ignore[no-any-return]


def doctor(site: Path) -> dict[tuple[str, str], dict[str, Any]]:
    report = run_cli("doctor", "--site", str(site), "--json", timeout=CLI_TIMEOUT).json()
    return {(c["id"], c["host"]): c for c in report["checks"]}


#: what the GTT plan says to add to the kernel command line; `init=` is the lab's own, dropped
GTT_WORDS = "ttm.pages_limit=3145728 amdgpu.gttsize=122880"


def persist_kernel_cmdline(lab: VmLab, vm: Vm) -> None:
    """/etc/kernel/cmdline written in the VM as a user following the GTT plan's note would, and a
    marker on the persistent disk."""
    done = lab.run(vm, f"mkdir -p /etc/kernel && echo '{GTT_WORDS} init=/bin/false' "
                       "> /etc/kernel/cmdline && echo kept > /var/lib/vmlab-marker && sync")
    assert done.returncode == 0, done.stderr


def assert_booted_with_the_persisted_cmdline(lab: VmLab, vm: Vm) -> None:
    after = lab.run(vm, "cat /proc/cmdline /var/lib/vmlab-marker; cat /proc/1/comm").stdout
    cmdline, marker, init = after.splitlines()
    assert cmdline.endswith(f" {GTT_WORDS}") and "init=/bin/false" not in cmdline  # reserved
    assert (marker, init) == ("kept", "systemd")


def test_fixes_survive_a_reboot_and_their_rollback_survives_the_next(
        bootvms: VmLab, tmp_path: Path) -> None:
    site = bootvms.write_site_yaml(tmp_path / "site.yaml", fabric_mtu=9000, allow_soft_rdma=True,
                                   deadline=SSH_DEADLINE)
    journals = str(tmp_path / "journal")
    before = {vm.name: observed(bootvms, vm) for vm in bootvms.vms}
    for state in before.values():
        assert (state["mtu"], state["tos"], state["units"], state["init"]) == (
            "1500", "absent", "", "systemd")
        assert state["memlock"] != "unlimited"
    only = [arg for fix_id in FIXES for arg in ("--only", fix_id)]
    document = fix("--site", str(site), *only, "--apply", "--journal-dir", journals)
    applied = document["apply"]
    assert applied["status"] == "applied", applied
    assert {(n["node"], n["status"]) for n in applied["nodes"]} == {("vm0", "applied"),
                                                                   ("vm1", "applied")}, document
    verdicts = {(v["fix"], v["node"]): v["status"] for v in applied["verification"]}
    for vm in bootvms.vms:
        assert verdicts[("net.mtu", vm.name)] == "cured"  # rxe's active_mtu 1024 warned before
        # no rdma_cm directory before: the check could not judge it (a skip), so not "cured"
        assert verdicts[("rdma.roce_v2_default", vm.name)] == "passing"
        assert verdicts[("limits.memlock", vm.name)] == "not-verified"  # until a new session
    planned = {(n["node"], s["target"]) for n in applied["nodes"] for s in n["steps"]}
    assert ("vm0", "/etc/security/limits.d/90-strixwizard-memlock.conf") in planned
    # the same reboots carry the lab's own promise: a boot reads /etc/kernel/cmdline from the disk
    persist_kernel_cmdline(bootvms, bootvms.vms[1])

    begun = time.monotonic()
    bootvms.reboot_all()
    print(f"\nboth systemd VMs rebooted to sshd in {time.monotonic() - begun:.1f} s")
    assert_booted_with_the_persisted_cmdline(bootvms, bootvms.vms[1])
    for vm in bootvms.vms:
        state = observed(bootvms, vm)
        assert (state["mtu"], state["memlock"]) == ("9000", "unlimited"), state
        assert state["tos"] == "104", state  # the site's PFC priority 3 -> DSCP 26 -> ToS 104
        assert "enabled" in state["units"], state
    checks = doctor(site)
    for vm in bootvms.vms:
        for check in ("rdma.roce_v2_default", "node.memlock"):
            assert checks[(check, vm.name)]["status"] == "pass", checks[(check, vm.name)]
    mtu = [c for (cid, _host), c in checks.items() if cid == "link.mtu"]
    assert mtu and all(c["status"] == "pass" for c in mtu), mtu

    rolled = fix("--rollback", "--journal-dir", journals, "--site", str(site))["rollback"]
    assert rolled["ok"], rolled
    bootvms.run(bootvms.vms[1], "rm /etc/kernel/cmdline /var/lib/vmlab-marker && sync")
    bootvms.reboot_all()
    for vm in bootvms.vms:
        assert observed(bootvms, vm) == before[vm.name]
    assert "ttm.pages_limit" not in bootvms.run(bootvms.vms[1], "cat /proc/cmdline").stdout


TIMER_SITE = "/etc/strixwizard/timer-site.yaml"
TEXTFILE = "/var/lib/node_exporter/textfile_collector/strixwizard.prom"
TIMER = "strixwizard-doctor-vmtimer.timer"
TIMER_SERVICE = "strixwizard-doctor-vmtimer.service"
PROBE = "vmlab-online-probe.service"
PROBE_OUT = "/var/lib/vmlab-online-probe"
#: the timer's first run is 2 min after boot (OnBootSec); doctor under TCG then takes 0.5-3 min
TIMER_RUN_TIMEOUT = 480.0


def unit_state(lab: VmLab, vm: Vm, *units: str) -> dict[str, str]:
    """`systemctl show` LoadState/UnitFileState/ActiveState of each unit, as `unit.Prop` keys."""
    out = {}
    for unit in units:
        done = lab.run(vm, "systemctl", "show", "-p", "LoadState,UnitFileState,ActiveState", unit,
                       timeout=60)
        assert done.returncode == 0, done.stderr
        for line in done.stdout.splitlines():
            key, _, value = line.partition("=")
            out[f"{unit}.{key}"] = value
    return out


def boot_epoch(lab: VmLab, vm: Vm) -> float:
    """When this boot began, in the VM's wall clock (qemu's RTC is this machine's clock)."""
    done = lab.run(vm, "echo $(date +%s.%N) $(cut -d' ' -f1 /proc/uptime)", timeout=30)
    now, uptime = map(float, done.stdout.split())
    return now - uptime


def prom_after_boot(lab: VmLab, vm: Vm, booted: float) -> str:
    """The timer's textfile once a doctor run of this boot has written it (bounded wait)."""
    deadline = time.monotonic() + TIMER_RUN_TIMEOUT
    while True:
        done = lab.run(vm, f"stat -c %Y {TEXTFILE} 2>/dev/null && cat {TEXTFILE}", timeout=60)
        if done.returncode == 0:
            mtime, _, text = done.stdout.partition("\n")
            if float(mtime) >= booted:
                return text
        if time.monotonic() > deadline:
            journal = lab.run(vm, "journalctl", "-b", "-u", TIMER_SERVICE, "--no-pager", timeout=60)
            raise AssertionError(f"{TEXTFILE} not written by a doctor run of this boot within "
                                 f"{TIMER_RUN_TIMEOUT:g} s: {journal.stdout[-3000:]}")
        time.sleep(5)


def test_init_timer_units_start_at_boot_and_their_removal_survives_the_next(
        bootvms: VmLab, tmp_path: Path) -> None:
    """`init --timer` run in vm0 (this machine's tree is the VM's lower layer, so the same
    interpreter and package are there) for a one-node site (`host: local`); enabled as the
    command prints; through a reboot the timer is active and its doctor run of the new boot
    rewrites the textfile; removed as README "Monitoring" says, it is gone after the next."""
    vm = bootvms.vms[0]
    units = (TIMER, TIMER_SERVICE)
    before = unit_state(bootvms, vm, *units)
    assert before[f"{TIMER}.LoadState"] == "not-found", before
    site = (f"site: vmtimer\\nallow_soft_rdma: true\\nnodes:\\n  - name: {vm.name}\\n"
            f"    host: local\\n    fabric_address: {vm.fabric_addr}\\n")
    script = (f"mkdir -p /etc/strixwizard {Path(TEXTFILE).parent} && printf '{site}' > {TIMER_SITE}"
              f" && cd /tmp && {sys.executable} -m strixwizard init --timer --site {TIMER_SITE}"
              f" --prometheus {TEXTFILE} --unit-dir /etc/systemd/system")
    done = bootvms.run(vm, script, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    start = next(line for line in done.stdout.splitlines() if line.startswith("start it: "))
    assert start.endswith(f"sudo systemctl daemon-reload && sudo systemctl enable --now {TIMER}")
    done = bootvms.run(vm, f"systemctl daemon-reload && systemctl enable --now {TIMER} && sync",
                       timeout=120)
    assert done.returncode == 0, done.stderr
    # the ordering every unit that needs the fabric address gets (the timer's service, the
    # persisted llama.cpp units): After= and Wants=network-online.target; the lab's fabric unit
    # must come before that target as a node's network manager does
    probe = "\n".join(["[Unit]", "After=network-online.target", "Wants=network-online.target",
                       "[Service]", "Type=oneshot",
                       f'ExecStart=/bin/sh -c "ip -4 -o addr show dev {FABRIC_NETDEV} > {PROBE_OUT}"',
                       "[Install]", "WantedBy=multi-user.target", ""])
    done = bootvms.run(vm, f"printf '{probe}' > /etc/systemd/system/{PROBE} && systemctl "
                           f"daemon-reload && systemctl enable {PROBE} && rm -f {PROBE_OUT} && sync",
                       timeout=120)
    assert done.returncode == 0, done.stderr

    begun = time.monotonic()
    bootvms.reboot(vm)
    booted = boot_epoch(bootvms, vm)
    state = unit_state(bootvms, vm, *units)
    assert (state[f"{TIMER}.UnitFileState"], state[f"{TIMER}.ActiveState"]) == (
        "enabled", "active"), state
    seen = bootvms.run(vm, f"cat {PROBE_OUT}", timeout=30).stdout
    assert f" {vm.fabric_addr}/24 " in seen, seen  # up before network-online.target
    text = prom_after_boot(bootvms, vm, booted)
    # the doctor runs imported the package in the VM; it wrote no bytecode of its own
    assert persisted_bytecode(vm.disk, tmp_path / "upper") == []
    print(f"\ninit --timer: reboot, then the timer's first doctor run wrote {TEXTFILE} "
          f"{time.monotonic() - begun:.1f} s after `systemctl reboot`")
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for family in text_string_to_metric_families(text) for s in family.samples}
    assert samples[("strixwizard_host_reachable", (("host", vm.name), ("site", "vmtimer")))] == 1, text
    assert samples[("strixwizard_doctor_exit_code", (("site", "vmtimer"),))] in (0, 1), text

    removed = bootvms.run(vm, f"systemctl disable --now {TIMER} {PROBE} && rm -f /etc/systemd/system/"
                              f"{TIMER} /etc/systemd/system/{TIMER_SERVICE} /etc/systemd/system/"
                              f"{PROBE} {PROBE_OUT} {TIMER_SITE} {TEXTFILE}"
                              " && systemctl daemon-reload && sync", timeout=120)
    assert removed.returncode == 0, removed.stderr
    bootvms.reboot(vm)
    assert unit_state(bootvms, vm, *units) == before
    assert bootvms.run(vm, f"test -e {TEXTFILE}", timeout=30).returncode == 1


RPC_UNIT = "strixwizard-llama-rpc.service"
SERVER_UNIT = "strixwizard-llama-server.service"


@pytest.fixture(scope="module")
def rdma_bin() -> Path:
    """The RDMA build of tests/test_llama_rdma_vm.py (built once, then cached)."""
    return build("rdma")


def wait_active(lab: VmLab, vm: Vm, unit: str, timeout: float = 300.0) -> dict[str, str]:
    """The unit's state once active, or as it is when `timeout` ran out (bounded)."""
    deadline = time.monotonic() + timeout
    while True:
        state = unit_state(lab, vm, unit)
        if state[f"{unit}.ActiveState"] == "active" or time.monotonic() > deadline:
            return state
        time.sleep(2)


def _monotonic(lab: VmLab, vm: Vm, prop: str, unit: str) -> int:
    done = lab.run(vm, "systemctl", "show", "-p", prop, "--value", unit, timeout=60)
    assert done.returncode == 0, done.stderr
    return int(done.stdout.strip() or 0)


def test_persisted_llama_units_start_after_the_fabric_at_boot_answer_over_rdma_and_roll_back(
        bootvms: VmLab, rdma_bin: Path, tmp_path: Path) -> None:
    """`deploy --stack llama-rpc --persist` on the systemd VMs: the units run the cluster now
    and after a reboot of both VMs — the worker's first start comes after the lab's fabric
    address (vmlab-fabric.service before network-online.target, the units after it), the
    smoke test passes again with `RDMA activated` from this boot's logs (the units empty the
    log at every start); `deploy --rollback` disables and removes the units and ends with
    `systemctl daemon-reload` (systemd no longer knows them, before any reboot), and after the
    next reboot nothing of it starts."""
    head, worker = bootvms.vms
    stage_llama(bootvms, rdma_bin)
    units = {head.name: SERVER_UNIT, worker.name: RPC_UNIT}
    before = {vm.name: unit_state(bootvms, vm, units[vm.name]) for vm in bootvms.vms}
    assert all(s[f"{units[n]}.LoadState"] == "not-found" for n, s in before.items()), before
    site = bootvms.write_site_yaml(tmp_path / "site.yaml", deadline=SSH_DEADLINE)
    plan_args = ("--gguf", MODEL, "--persist")
    applied = deploy(site, tmp_path, *plan_args, "--apply", "--yes", "--json")
    assert applied.rc == 0, applied.stdout[-4000:] + applied.stderr[-3000:]
    doc = applied.json()
    assert doc["smoke"]["status"] == "pass", checks_of(doc)

    begun = time.monotonic()
    bootvms.reboot_all()
    rebooted = time.monotonic() - begun
    for vm in bootvms.vms:
        # the head's llama-server may be between restarts ("activating"): it exits when the
        # worker's RPC server (another machine, no ordering across them) is not up yet
        state = wait_active(bootvms, vm, units[vm.name])
        assert (state[f"{units[vm.name]}.UnitFileState"],
                state[f"{units[vm.name]}.ActiveState"]) == ("enabled", "active"), state
    fabric_up = _monotonic(bootvms, worker, "ActiveEnterTimestampMonotonic", "vmlab-fabric.service")
    online = _monotonic(bootvms, worker, "ActiveEnterTimestampMonotonic", "network-online.target")
    started = _monotonic(bootvms, worker, "ExecMainStartTimestampMonotonic", RPC_UNIT)
    assert 0 < fabric_up <= online <= started, (fabric_up, online, started)
    assert _monotonic(bootvms, worker, "NRestarts", RPC_UNIT) == 0  # bound at its first start
    smoked = deploy(site, tmp_path, *plan_args, "--smoke", "--json")
    took = time.monotonic() - begun
    assert smoked.rc == 0, smoked.stdout[-4000:] + smoked.stderr[-3000:]
    smoke = checks_of(smoked.json())
    assert smoke["llama.transport"]["status"] == "pass", smoke["llama.transport"]
    assert smoke["llama.completion"]["status"] == "pass", smoke["llama.completion"]
    for vm in bootvms.vms:  # this boot's log only: one negotiation per end, not the last boot's too
        log = _sh(bootvms, vm, f"cat {RUN_DIR}/{'llama-server' if vm is head else 'ggml-rpc-server'}.log")
        assert "RDMA activated: qpn=" in log and "Failed to create server socket" not in log
    print(f"\ndeploy --persist: both VMs rebooted in {rebooted:.1f} s; the persisted cluster "
          f"answered the smoke test over RDMA {took:.1f} s after `systemctl reboot`")

    rolled = deploy(site, tmp_path, "--rollback", doc["apply"]["run_id"], "--yes", "--json")
    assert rolled.rc == 0, rolled.stdout[-3000:] + rolled.stderr[-3000:]
    for vm in bootvms.vms:  # daemon-reload ran: without it the removed unit stays loaded
        assert unit_state(bootvms, vm, units[vm.name]) == before[vm.name]
        assert not any(running(bootvms, vm, p) for p in PROGRAMS)
    bootvms.reboot_all()
    for vm in bootvms.vms:
        assert unit_state(bootvms, vm, units[vm.name]) == before[vm.name]
        assert not any(running(bootvms, vm, p) for p in PROGRAMS)
        assert bootvms.run(vm, f"ls /etc/systemd/system/{units[vm.name]}").returncode != 0

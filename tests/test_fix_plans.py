"""Planning on snapshot scenarios: each fix plans the right steps on a failing node and
nothing on a converged one; every registered fix has a plan function; each plan says how it
survives a reboot (the demo's nodes run systemd and their network managers)."""

from __future__ import annotations

from pathlib import Path

import pytest

import fixes
from fixes import PLANS
from strixwizard.demo.hardware import RoceSetup, connectx
from strixwizard.demo.scenarios import strix_halo_node
from strixwizard.fixing.model import Kind
from tests.support import scenarios
from tests.support.cli import invoke
from tests.support.fixplans import pair, plan_of, steps_of

GOOD = RoceSetup(roce_mode="RoCE v2")


def test_every_fix_in_the_registry_has_a_plan_function() -> None:
    assert sorted(PLANS) == sorted(f.id for f in fixes.ALL)


def test_a_converged_pair_plans_nothing(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, pair(GOOD))
    assert plan.changes == 0, [(p.fix, p.node, [s.summary for s in p.steps]) for p in plan.plans]


def test_mtu_is_planned_on_both_ends_of_the_link_as_one_group(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, pair(RoceSetup(mtu=1500, roce_mode="RoCE v2"),
                                  RoceSetup(mtu=4000, roce_mode="RoCE v2")), ("net.mtu",))
    mtu = steps_of(plan, "net.mtu")
    assert [p.node for p in mtu] == ["node-a", "node-b"]
    assert {p.group for p in mtu} == {"node-a:enp194s0np0 <-> node-b:enp194s0np0"}
    first = next(s for s in mtu[1].steps if s.kind is Kind.MTU)
    assert (first.target, first.before, first.after) == ("enp194s0np0", "1500", "9000")
    # no NetworkManager or networkd on these nodes, but systemd: a unit keeps it
    unit = next(s for s in mtu[1].steps if s.kind is Kind.FILE)
    assert unit.target == "/etc/systemd/system/strixwizard-net-mtu-enp194s0np0.service"
    assert "ExecStart=ip link set dev enp194s0np0 mtu 9000" in (unit.after or "")
    assert mtu[1].steps[-1].argv == ("systemctl", "enable",
                                     "strixwizard-net-mtu-enp194s0np0.service")


def test_mtu_persistence_follows_networkmanager_when_it_manages_the_interface(tmp_path: Path
                                                                              ) -> None:
    nodes = pair(RoceSetup(mtu=1500, roce_mode="RoCE v2"))
    nodes["node-b"].command(["nmcli", "-t", "-f", "DEVICE,TYPE,STATE,CONNECTION", "device",
                             "status"], "enp194s0np0:ethernet:connected:fabric 100G\n"
                            "lo:loopback:connected (externally):lo\n")
    plan = plan_of(tmp_path, nodes, ("net.mtu",))
    (mtu,) = steps_of(plan, "net.mtu", "node-b")
    nm = mtu.steps[1]
    assert nm.argv == ("nmcli", "connection", "modify", "id", "fabric 100G", "802-3-ethernet.mtu",
                       "9000")
    assert nm.persistence == "networkmanager" and not nm.before_known
    assert "NetworkManager connection 'fabric 100G'" in mtu.persistence


def test_runtime_only_plans_no_persistence_and_no_systemd_says_so(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, pair(RoceSetup(mtu=1500, roce_mode="RoCE v2")), ("net.mtu",),
                   persist=False)
    assert [s.kind for p in steps_of(plan, "net.mtu") for s in p.steps] == [Kind.MTU]
    plan = plan_of(tmp_path / "x", pair(RoceSetup(mtu=1500, roce_mode="RoCE v2"), init=False),
                   ("net.mtu",))
    (mtu,) = steps_of(plan, "net.mtu", "node-b")
    assert mtu.persistence.startswith("runtime only: the node does not run systemd")


def test_pfc_plans_the_site_priority_only_and_its_own_traffic_class(tmp_path: Path) -> None:
    bad = RoceSetup(pfc=(0, 3), prio_tc=(0,) * 8, roce_mode="RoCE v2")
    plan = plan_of(tmp_path, pair(bad), ("dcb.pfc",))
    (pfc,) = steps_of(plan, "dcb.pfc")
    pfc_step, ets_step = pfc.steps[0], pfc.steps[1]
    assert pfc_step.argv == ("dcb", "pfc", "set", "dev", "enp194s0np0", "prio-pfc", "all:off", "3:on")
    assert pfc_step.undo_argv == ("dcb", "pfc", "set", "dev", "enp194s0np0", "prio-pfc", "all:off",
                                  "0:on", "3:on")
    assert ets_step.argv[:6] == ("dcb", "ets", "set", "dev", "enp194s0np0", "prio-tc")
    assert ets_step.after == "0:0 1:0 2:0 3:1 4:0 5:0 6:0 7:0"
    assert ets_step.before == "0:0 1:0 2:0 3:0 4:0 5:0 6:0 7:0"
    assert pfc.group and "E810 allows one PFC traffic class" in " ".join(pfc.notes)


def test_pfc_unknown_because_the_driver_has_no_dcb_is_not_automated(tmp_path: Path) -> None:
    nodes = pair(GOOD)
    nodes["node-b"].dcb("enp194s0np0", supported=False)
    plan = plan_of(tmp_path, nodes, ("dcb.pfc",))
    (note,) = [p for p in plan.plans if p.fix == "dcb.pfc"]
    assert not note.steps and "not automated" in note.notes[0]
    assert "Operation not supported" in note.notes[0]


def test_fw_lldp_and_pause_are_planned_where_they_are_on(tmp_path: Path) -> None:
    bad = RoceSetup(fw_lldp=True, pause=(True, True), roce_mode="RoCE v2")
    plan = plan_of(tmp_path, pair(bad), ("dcb.fw_lldp_off", "ethtool.pause_off"))
    (lldp,) = steps_of(plan, "dcb.fw_lldp_off")
    assert lldp.steps[0].argv == ("ethtool", "--set-priv-flags", "enp194s0np0", "fw-lldp-agent", "off")
    assert "NVM" in lldp.persistence and len(lldp.steps) == 1
    (pause,) = steps_of(plan, "ethtool.pause_off")
    assert pause.steps[0].argv == ("ethtool", "-A", "enp194s0np0", "rx", "off", "tx", "off")
    assert pause.steps[0].undo_argv == ("ethtool", "-A", "enp194s0np0", "rx", "on", "tx", "on")
    assert [p.node for p in steps_of(plan, "ethtool.pause_off")] == ["node-b"]


def test_trust_and_app_mapping_on_connectx(tmp_path: Path) -> None:
    bad = RoceSetup(trust=("pcp",), dscp_prio=(), roce_mode="RoCE v2")
    plan = plan_of(tmp_path, pair(bad, nic=connectx), ("dcb.trust_dscp",))
    (trust,) = steps_of(plan, "dcb.trust_dscp")
    assert trust.steps[0].argv == ("dcb", "apptrust", "set", "dev", "enp194s0f0np0", "order", "dscp")
    assert trust.steps[0].undo_argv[-2:] == ("order", "pcp")
    app = trust.steps[1]
    assert app.argv == ("dcb", "app", "replace", "dev", "enp194s0f0np0", "dscp-prio", "26:3")
    assert app.undo_argv == ("dcb", "app", "del", "dev", "enp194s0f0np0", "dscp-prio", "26:3")


def test_roce_v2_default_creates_configfs_and_sets_mode_and_tos(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, pair(RoceSetup(roce_mode=None)), ("rdma.roce_v2_default",))
    (cm,) = steps_of(plan, "rdma.roce_v2_default")
    assert [(s.kind, s.target, s.after) for s in cm.steps[:3]] == [
        (Kind.MKDIR, "/sys/kernel/config/rdma_cm/rocep194s0", "present"),
        (Kind.WRITE, "/sys/kernel/config/rdma_cm/rocep194s0/ports/1/default_roce_mode", "RoCE v2"),
        (Kind.WRITE, "/sys/kernel/config/rdma_cm/rocep194s0/ports/1/default_roce_tos", "104"),
    ]
    tmpfiles = cm.steps[3]
    assert tmpfiles.target == "/etc/strixwizard/strixwizard-rdma_cm-rocep194s0.conf"
    assert "w /sys/kernel/config/rdma_cm/rocep194s0/ports/1/default_roce_mode - - - - RoCE v2" in (
        tmpfiles.after or "")


def test_e810_in_iwarp_gets_devlink_enable_roce(tmp_path: Path) -> None:
    nodes = scenarios.platform_faults_node()
    nodes["strix-c"].file("/proc/1/comm", "systemd\n")  # so the plan persists it with a unit
    plan = plan_of(tmp_path, nodes, ("roce.enable",))
    (roce,) = steps_of(plan, "roce.enable")
    assert [s.argv[-5:-2] for s in roce.steps[:2]] == [("enable_iwarp", "value", "false"),
                                                       ("enable_roce", "value", "true")]
    assert roce.steps[1].undo_argv[-3] == "false"
    (unit,) = [s for s in roce.steps if s.kind is Kind.FILE]
    exec_lines = [line for line in (unit.after or "").splitlines() if line.startswith("ExecStart=")]
    # the driver binds (and registers its devlink parameters) at its own pace during boot: the
    # unit waits for it, bounded, then replays the two devlink steps
    assert exec_lines[0].endswith(f"sh /sys/bus/pci/devices/{roce.entity.split('/')[1]}/driver 90")
    assert [line.split()[-3] for line in exec_lines[1:]] == ["false", "true"]
    assert "Before=network.target" not in (unit.after or "")


def test_memlock_plans_a_limits_file_and_says_what_is_not_automated(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, scenarios.platform_faults_node(), ("limits.memlock",))
    (memlock,) = steps_of(plan, "limits.memlock")
    step = memlock.steps[0]
    assert step.target == "/etc/security/limits.d/90-strixwizard-memlock.conf" and step.before is None
    assert "root hard memlock unlimited" in (step.after or "")
    assert any("LimitMEMLOCK=infinity" in n for n in memlock.notes)
    healthy = plan_of(tmp_path / "h", pair(GOOD), ("limits.memlock",))
    assert healthy.changes == 0
    # the summary doctor shows names the file the plan writes
    assert step.target in fixes.BY_ID["limits.memlock"].summary


def test_fix_metadata_is_declared_with_its_plan_function() -> None:
    assert [f.ref for f in fixes.FIXES] == list(fixes.ALL)
    assert all(PLANS[ref.id].ref is ref for ref in fixes.ALL)
    manual = sorted(f.id for f in fixes.FIXES if not f.automated)
    assert manual == ["net.fabric_address", "rccl.gfx1151", "rdma.load_driver", "rocm.upgrade"]
    reboot = sorted(ref.id for ref in fixes.ALL if ref.reboot)
    assert reboot == ["kernel.gtt_size", "kernel.iommu_pt"]


def test_kernel_cmdline_is_a_reboot_step_with_grubby_and_a_note_without(tmp_path: Path) -> None:
    node = scenarios.platform_faults_node()
    node["strix-c"].command(["grubby", "--info=DEFAULT"], 'index=0\nkernel="/boot/vmlinuz"\n'
                            'args="ro rhgb quiet amdgpu.gttsize=126976 ttm.pages_limit=32505856"\n')
    plan = plan_of(tmp_path, node, ("kernel.iommu_pt",))
    (iommu,) = steps_of(plan, "kernel.iommu_pt")
    step = iommu.steps[0]
    assert step.kind is Kind.CMDLINE and step.reboot and iommu.reboot
    assert step.argv == ("grubby", "--update-kernel=ALL", "--args=iommu=pt")
    assert step.undo_argv == ("grubby", "--update-kernel=ALL", "--remove-args=iommu")
    without = plan_of(tmp_path / "n", scenarios.platform_faults_node(), ("kernel.iommu_pt",))
    (note,) = [p for p in without.plans if p.fix == "kernel.iommu_pt"]
    assert not note.steps and "not automated (no grubby" in note.notes[0]


def test_gtt_size_plans_ttm_and_gttsize_from_ram(tmp_path: Path) -> None:
    node = strix_halo_node("strix-b", tuned_gtt=False)
    node.command(["grubby", "--info=DEFAULT"], 'args="ro quiet iommu=pt"\n')
    plan = plan_of(tmp_path, {"node-b": node}, ("kernel.gtt_size",))
    (gtt,) = steps_of(plan, "kernel.gtt_size")
    assert [s.argv[-1] for s in gtt.steps] == ["--args=ttm.pages_limit=32505856",
                                               "--args=amdgpu.gttsize=126976"]
    tuned = plan_of(tmp_path / "t", {"node-a": strix_halo_node("strix-a")}, ("kernel.gtt_size",))
    assert tuned.plans == []


def test_manual_fixes_say_what_to_do_and_carry_no_steps(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, scenarios.platform_faults_node(), ("rocm.upgrade", "rccl.gfx1151"))
    assert {p.fix for p in plan.plans} == {"rocm.upgrade", "rccl.gfx1151"}
    assert all(not p.steps and p.notes[0].startswith("not automated") for p in plan.plans)


def test_only_rejects_an_unknown_fix_with_a_suggestion(tmp_path: Path) -> None:
    from strixwizard.errors import UsageError

    with pytest.raises(UsageError, match=r"did you mean net\.mtu"):
        plan_of(tmp_path, pair(GOOD), ("net.mtuu",))


def test_thunderbolt_links_keep_their_mtu(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, scenarios.thunderbolt_only_pair(), ("net.mtu",))
    assert plan.changes == 0


@pytest.mark.parametrize("scenario", ["healthy_e810_pair", "connectx6dx_pair", "infiniband_cx3_pair"])
def test_detection_scenarios_without_network_faults_plan_no_network_change(tmp_path: Path,
                                                                          scenario: str) -> None:
    network = ("net.mtu", "dcb", "ethtool", "roce")
    plan = plan_of(tmp_path, getattr(scenarios, scenario)(), network)
    assert plan.changes == 0, [(p.fix, p.node, [s.summary for s in p.steps]) for p in plan.plans]


def test_the_misconfigured_scenario_plans_a_fix_for_every_failing_network_check(tmp_path: Path
                                                                               ) -> None:
    nodes = scenarios.misconfigured_e810_pair()
    report = scenarios.run_site(tmp_path / "doctor", nodes)
    named = {r.fix.id for r in scenarios.bad(report) if r.fix is not None
             and r.id.split(".")[0] in ("link", "dcb", "roce", "rdma")}
    plan = plan_of(tmp_path / "plan", scenarios.misconfigured_e810_pair())
    planned = {p.fix for p in plan.plans if p.steps}
    assert named and named <= planned, named - planned


def test_the_demo_nodes_run_systemd_and_their_network_managers() -> None:
    from strixwizard.facts import NodeFacts
    from strixwizard.probe.snapshot import SnapshotProbe
    from strixwizard.services.nodes import demo_site

    site = demo_site()
    facts = {spec.name: NodeFacts(spec.name, SnapshotProbe.load(site.resolve(str(spec.snapshot))))
             for spec in site.nodes}
    a, b = facts["node-a"].persistence, facts["node-b"].persistence
    assert a.systemd and b.systemd
    assert (a.nm_connections or {}).get("enp194s0np0") == "fabric"  # Fedora 43: NetworkManager
    assert b.networkd_files["enp194s0np0"] == "/run/systemd/network/10-netplan-enp194s0np0.network"


def test_the_demo_plans_show_how_each_fix_survives_a_reboot(tmp_path: Path) -> None:
    text = invoke("fix", "--demo", env={"XDG_STATE_HOME": str(tmp_path)}).stdout
    assert "does not run systemd" not in text and "runtime only" not in text
    assert ("systemd-networkd drop-in for 10-netplan-enp194s0np0.network: MTUBytes=9000  "
            "[persistence: networkd]") in text
    assert "+++ /etc/systemd/network/10-netplan-enp194s0np0.network.d/90-strixwizard-mtu.conf" in text
    assert "write systemd unit strixwizard-ethtool-pause-off-enp194s0np0.service" in text
    applied = invoke("fix", "--demo", "--apply", "--yes", env={"XDG_STATE_HOME": str(tmp_path)})
    assert applied.rc == 0, applied.stdout + applied.stderr
    assert "✓ applied     enable strixwizard-ethtool-pause-off-enp194s0np0.service at boot" in applied.stdout


def test_runtime_only_persistence_says_what_is_true_in_plain_words() -> None:
    from fixes.steps import no_systemd

    assert no_systemd("process_api") == "the node does not run systemd (its first process is process_api)"
    assert "could not be read" in no_systemd(None)

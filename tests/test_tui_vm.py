"""The wizard end to end on two soft-RoCE VMs (tests/support/vmlab.py): Site → Discover → Links → Fix
(apply, confirmed in the modal) → Deploy (llama.cpp RPC over RDMA, confirmed) → Test (latency
over real verbs, the kernel's rxe counters) → Report, then the deploy and the fix rolled back
from the wizard; every step's verdict is checked against what the VMs are (read over SSH
here, not by strixwizard).

The site file says `allow_soft_rdma: true` (the wizard's way of `--allow-soft-rdma`) and a
fabric MTU of 9000 where the VMs run 1500, so the fix engine has a change that its checks can
see cured (net.mtu; limits.memlock is planned too and verified only by a new login). The
llama.cpp binaries are the RDMA build staged by the session's `llama_pair` (tests/conftest.py); the wizard's
Deploy step has no binary-directory picker (it starts them from PATH, as a user installs
them), so each VM gets links to them in its own /usr/bin (the VM's overlay, never this
machine's). Every wait polls the app, bounded: the VMs run under TCG on 2 busy cores.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable, Input, Select

from strixwizard.live.tcp import TcpSettings
from strixwizard.model import Status
from strixwizard.services.deploy import DeployOptions
from strixwizard.services.facade import Services
from strixwizard.services.fix import FixOptions
from strixwizard.tui.app import WizardApp
from strixwizard.tui.screens.deploy import DeployState
from strixwizard.tui.screens.discover import DiscoverState
from strixwizard.tui.screens.fix import FixState
from strixwizard.tui.screens.links import LinkCard
from strixwizard.tui.steps import key_of
from strixwizard.tui.widgets.confirm import ConfirmationModal
from tests.support.llama_vm import MODEL, PROGRAMS, RUN_DIR, SSH_DEADLINE, TARGET, running
from tests.support.vm_records import replay_site
from tests.support.vmlab import FABRIC_NETDEV, RDMA_DEVICE, VmLab
from tests.support.wizard import cells, live_state, notice_text, panel, settle, sync

SITE_MTU = 9000
LIMITS_FILE_GLOB = "/etc/security/limits.d/*strixwizard*"
SOFT_LABEL = "software RDMA: tests the setup and the tool, not production speed"
#: short TCP loops (the defaults run several seconds per pair and reference tool)
SHORT_TCP = TcpSettings(seconds=2.0, round_trips=2000, warmup=100, references=False)


@pytest.fixture
def vms(llama_pair: VmLab) -> Iterator[VmLab]:
    """The VMs with the RDMA build on their PATH and the model on the head; afterwards (pass
    or fail) nothing of the deploy running and the fabric as the lab made it."""
    walkvms = llama_pair
    for vm in walkvms.vms:
        links = " && ".join(f"ln -sf /vmlab/bin/{p} /usr/bin/{p}" for p in PROGRAMS)
        done = walkvms.run(vm, links, timeout=60)
        assert done.returncode == 0, done.stderr
    yield walkvms
    for vm in walkvms.vms:
        walkvms.run(vm, f"for f in {RUN_DIR}/*.pid; do [ -f \"$f\" ] && kill -9 $(head -n 1 \"$f\");"
                        f" rm -f \"$f\"; done; rm -rf {TARGET} {LIMITS_FILE_GLOB}; "
                        f"ip link set dev {FABRIC_NETDEV} mtu 1500; "
                        + "; ".join(f"rm -f /usr/bin/{p}" for p in PROGRAMS), timeout=60)


def mtu_of(lab: VmLab, name: str) -> str:
    return lab.run(lab.vm(name), "cat", f"/sys/class/net/{FABRIC_NETDEV}/mtu", timeout=30).stdout.strip()


async def until(app: WizardApp, pilot: Pilot[int], done: Callable[[], bool], seconds: float,
                what: str) -> None:
    """Poll the app (never `settle` while a run may wait on its modal) until `done()`."""
    deadline = time.monotonic() + seconds
    while not done():
        assert time.monotonic() < deadline, f"{what}: not within {seconds:g} s (at {app.screen.id})"
        await pilot.pause(0.2)
    await pilot.pause()


async def confirm(app: WizardApp, pilot: Pilot[int], key: str, title: str) -> str:
    """Press `key` (apply or roll back), wait for the service's question, answer yes."""
    await pilot.press(key)
    await until(app, pilot, lambda: isinstance(app.screen, ConfirmationModal), 120, f"the {title} question")
    modal = app.screen
    assert isinstance(modal, ConfirmationModal)
    question = modal.question
    await pilot.press("y")
    await until(app, pilot, lambda: not isinstance(app.screen, ConfirmationModal), 30, "the modal closing")
    return question


async def open_step(app: WizardApp, pilot: Pilot[int], step_id: str) -> None:
    await pilot.press(key_of(step_id))
    await until(app, pilot, lambda: app.screen.id == f"step-{step_id}", 30, f"step {step_id}")


@sync
async def test_the_wizard_walks_two_soft_roce_vms_from_site_to_report_and_rolls_back(
        vms: VmLab, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    head, worker = vms.vms
    site = vms.write_site_yaml(tmp_path / "site.yaml", deadline=SSH_DEADLINE, fabric_mtu=SITE_MTU,
                               allow_soft_rdma=True)
    services = Services(tcp=SHORT_TCP, fix_options=FixOptions(journal_dir=tmp_path / "fix-journal"),
                        deploy_options=DeployOptions(journal_dir=tmp_path / "deploy-journal"))
    app = WizardApp(site_file=site, services=services, resume=False)
    began = time.monotonic()
    async with app.run_test(size=(120, 40)) as pilot:
        # -- Site, then Discover: both VMs read over SSH, rxe0 on the fabric ------------------
        assert app.screen.id == "step-site"
        await open_step(app, pilot, "discover")
        await until(app, pilot, lambda: app.session.of(DiscoverState).discovery is not None
                    and not app.busy("discover"), 2 * SSH_DEADLINE, "discovery")
        await settle(app, pilot)
        discovery = app.session.of(DiscoverState).discovery
        assert discovery is not None and discovery.site.allow_soft_rdma
        rows = cells(app.screen.query_one("#nodes", DataTable))
        assert [r[0] for r in rows] == ["vm0", "vm1"]
        assert all(r[1].startswith("✓") for r in rows), rows
        assert [h.reachable for h in discovery.report.hosts] == [True, True]
        assert all(h.facts["rdma_devices"] == [RDMA_DEVICE] for h in discovery.report.hosts)
        ports = cells(app.screen.query_one("#ports", DataTable))
        assert sum(RDMA_DEVICE in " ".join(r) for r in ports) == 2, ports

        # -- Links: the soft-RoCE link, judged as what it is ----------------------------------
        await open_step(app, pilot, "links")
        [link] = discovery.report.links
        assert (link.transport, link.rdma) == ("roce-v2", True)
        assert [(e.rdma_device, e.gid_index, e.active_mtu) for e in link.ends] == [(RDMA_DEVICE, 1, 1024)] * 2
        [card] = list(app.screen.query(LinkCard))
        shown = str(card.render())
        print(f"\nLinks card:\n{shown}")
        assert "roce-v2 · software RDMA · same subnet 192.168.77.0/24" in shown and SOFT_LABEL in shown
        assert "hardware RDMA" not in shown.replace("no hardware RDMA path", ""), shown
        assert card.has_class("warning")
        for vm in vms.vms:  # each end as the VM has it: rxe0 port 1, the RoCE v2 GID, eth0's MTU
            assert f"{vm.name} eth0  {vm.fabric_addr}/24  {RDMA_DEVICE}/1 gid 1  MTU 1500" in shown
        assert "WARN link.mtu" in shown  # 1500 on both ends, the site wants 9000
        assert "1 link, 0 with hardware RDMA, 1 with software RDMA" in notice_text(app, "#links-status")

        # -- Fix: the planned changes applied (confirmed), MTU cured on both VMs --------------
        await open_step(app, pilot, "fix")
        assert discovery.plan is not None and discovery.plan.changes > 0
        assert "a applies them (you confirm first)" in notice_text(app, "#fix-status")
        question = await confirm(app, pilot, "a", "fix")
        assert "vm0" in question and "vm1" in question, question
        await until(app, pilot, lambda: app.session.of(FixState).applied is not None
                    and not app.busy("fix"), 600, "the fix apply")
        await settle(app, pilot)
        applied = app.session.of(FixState).applied
        assert applied is not None and applied.report.status == "applied", applied.report
        verified = {(v.fix, v.node): v.status for v in applied.report.verification}
        assert verified[("net.mtu", "vm0")] == verified[("net.mtu", "vm1")] == "cured", verified
        assert {mtu_of(vms, vm.name) for vm in vms.vms} == {str(SITE_MTU)}
        run_text = notice_text(app, "#fix-run")
        assert "net.mtu on vm0: cured" in run_text and "net.mtu on vm1: cured" in run_text, run_text
        fix_run = applied.report.run_id

        # -- Deploy: llama.cpp RPC over RDMA, applied (confirmed), smoke passes on both ends ---
        await open_step(app, pilot, "deploy")
        await until(app, pilot, lambda: app.session.of(DeployState).preview is not None
                    and not app.busy("deploy-plan"), 120, "the first deploy plan")
        app.screen.query_one("#deploy-stack", Select).value = "llama-rpc"
        await until(app, pilot, lambda: app.session.of(DeployState).choice.stack == "llama-rpc", 30,
                    "the stack pick")
        app.screen.query_one("#deploy-model", Input).value = MODEL

        def planned() -> bool:
            preview = app.session.of(DeployState).preview
            return (not app.busy("deploy-plan") and preview is not None and preview.plan is not None
                    and preview.plan.settings.stack == "llama-rpc"
                    and getattr(preview.plan, "llama", None) is not None
                    and preview.plan.llama.model == MODEL)  # type: ignore[attr-defined]

        await until(app, pilot, planned, 120, "the llama-rpc plan with the model")
        assert "llama.cpp RPC: rdma profile" in notice_text(app, "#deploy-status")
        await confirm(app, pilot, "a", "deploy")
        await until(app, pilot, lambda: app.session.of(DeployState).deployed is not None
                    and not app.busy("deploy"), 900, "the deploy and its smoke test")
        await settle(app, pilot)
        deployed = app.session.of(DeployState).deployed
        assert deployed is not None and deployed.report is not None, deployed
        assert deployed.smoke is not None, deployed
        smoke = {c.id: c for c in deployed.smoke.checks}
        print(f"\nsmoke: {[(c.id, c.status, c.observed) for c in deployed.smoke.checks]}")
        assert deployed.smoke.status == "pass", smoke
        assert (smoke["llama.transport"].status, smoke["llama.transport"].observed) == (
            "pass", f"RDMA on {RDMA_DEVICE}")
        quoted = smoke["llama.transport"].evidence
        for end in ("vm0 (llama-server): ", "vm1 (ggml-rpc-server): "):
            assert any(line.startswith(end) and "RDMA activated: qpn=" in line for line in quoted), quoted
        assert smoke["llama.rdma_path"].status == "pass" and smoke["llama.completion"].status == "pass"
        assert "Smoke test: PASS" in notice_text(app, "#deploy-run")
        assert running(vms, worker, "ggml-rpc-server") and running(vms, head, "llama-server")
        assert not running(vms, head, "ggml-rpc-server")

        # -- Test: latency over real verbs beside perftest, the kernel's rxe counters ---------
        await open_step(app, pilot, "test")
        await pilot.press("r")
        await until(app, pilot, lambda: app.busy("tests"), 30, "the tests starting")
        await until(app, pilot, lambda: not app.busy("tests"), 900, "the live tests")
        await settle(app, pilot)
        state = live_state(app)
        assert state.outcome == "done", state.error
        results = {(m.transport, m.kind, m.tool): m for m in state.results}
        print("\nTest step:\n" + "\n".join(f"{k}: {m.status} {m.summary}" for k, m in results.items()))
        perftest = results[("rdma", "latency", "ib_write_lat")]
        assert perftest.source == "measured" and perftest.latency is not None
        assert perftest.detail["note"] == SOFT_LABEL
        verbs = results[("rdma", "latency", "strixwizard verbs ping-pong")]
        assert verbs.source == "measured" and verbs.detail["ratio_to_perftest"] > 0
        # emulated rxe is far over the 8 µs of hardware RDMA: judged so, labelled software RDMA
        assert perftest.status is verbs.status is Status.FAIL, (perftest.summary, verbs.summary)
        assert panel(app, "vm0-vm1:latency:rdma").view.status is Status.FAIL
        counters = [m for m in state.results if m.kind == "counters"]  # around the matrix, RCCL
        assert counters, [m.kind for m in state.results]
        read = {(c["host"], c["device"], c["counter"]) for m in counters for c in m.detail["counters"]}
        for vm in vms.vms:  # the kernel's rxe counters, read around the run on both ends
            assert {(vm.name, f"{RDMA_DEVICE}/1", "rcvd_seq_err"),
                    (vm.name, f"{RDMA_DEVICE}/1", "out_of_seq_request")} <= read, read
        packets = [p for m in counters for p in m.detail.get("rdma_packets", [])]
        for vm in vms.vms:  # rxe's sent_pkts/rcvd_pkts: the latency runs crossed over RDMA
            assert any(p["host"] == vm.name and p["device"] == f"{RDMA_DEVICE}/1" and p["sent"]
                       and p["received"] for p in packets), packets
        counter_text = str(panel(app, "counters").query_one(".details").render())
        assert "read on 2 node(s) before and after" in counter_text, counter_text
        assert "over RDMA: " in counter_text, counter_text

        # -- Report: the deploy and the live tests in the saved document ----------------------
        await open_step(app, pilot, "report")
        await until(app, pilot, lambda: "json" in app.session.saved, 60, "the saved report")
        import json

        document = json.loads(app.session.saved["json"].read_text())
        assert document["deploy"]["status"] == "deployed", document["deploy"]
        assert document["deploy"]["smoke"]["status"] == "pass"
        tools = {r["tool"] for r in document["live_tests"]["results"]}
        assert {"ib_write_lat", "strixwizard verbs ping-pong"} <= tools, tools
        assert {h["name"] for h in document["hosts"]} == {"vm0", "vm1"}
        body = str(app.screen.query_one("#report-body").render())
        assert all(w in body for w in ("deployed", "RDMA latency", "(roce-v2)")), body

        # -- Roll back from the wizard: the deploy, then the fix (each confirmed) -------------
        await open_step(app, pilot, "deploy")
        question = await confirm(app, pilot, "u", "deploy rollback")
        assert deployed.report.run_id in question, question
        await until(app, pilot, lambda: app.session.of(DeployState).rolled_back is not None
                    and not app.busy("deploy"), 300, "the deploy rollback")
        for vm in vms.vms:
            for program in PROGRAMS:
                assert not running(vms, vm, program), f"{program} left running on {vm.name}"
            assert vms.run(vm, "test", "-e", TARGET, timeout=30).returncode != 0
            assert vms.run(vm, f"ls {RUN_DIR}/*.pid", timeout=30).returncode != 0

        await open_step(app, pilot, "fix")
        question = await confirm(app, pilot, "u", "fix rollback")
        assert fix_run in question, question
        await until(app, pilot, lambda: app.session.of(FixState).rolled_back is not None
                    and not app.busy("fix"), 300, "the fix rollback")
        rolled = app.session.of(FixState).rolled_back or ""
        assert rolled.startswith("rolled back"), rolled
        assert {mtu_of(vms, vm.name) for vm in vms.vms} == {"1500"}
        for vm in vms.vms:
            assert vms.run(vm, f"ls {LIMITS_FILE_GLOB}", timeout=30).returncode != 0
    print(f"\nwizard walk on two soft-RoCE VMs: {time.monotonic() - began:.0f} s")


@sync
async def test_a_soft_roce_link_is_shown_as_software_rdma_never_hardware(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch
                                                                        ) -> None:
    """The Links step on the recorded VMs (runs everywhere): with the opt-in the rxe link is
    RDMA, and the card says software RDMA — not "hardware RDMA … the ~5 µs path RCCL should
    use", which it said before the walk above ran on the VMs."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    app = WizardApp(site_file=replay_site(tmp_path / "soft.yaml", allow_soft_rdma=True), resume=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_step(app, pilot, "discover")
        await until(app, pilot, lambda: app.session.of(DiscoverState).discovery is not None
                    and not app.busy("discover"), 60, "discovery")
        await open_step(app, pilot, "links")
        [card] = list(app.screen.query(LinkCard))
        shown = str(card.render())
        assert "roce-v2 · software RDMA · same subnet 192.168.77.0/24" in shown, shown
        assert "the ~5 µs path RCCL should use" not in shown and card.has_class("warning")
        assert "no hardware RDMA path" in shown
        assert "1 link, 0 with hardware RDMA, 1 with software RDMA" in notice_text(app, "#links-status")

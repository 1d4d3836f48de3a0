"""`deploy --serve` on the namespace lab with a STAND-IN `vllm` (tests/support/standin_openai.py, an
OpenAI-compatible stdlib server, NOT vLLM) and the STAND-IN `ray` and `mpirun` the Ray deploy
tests use: the real SSH executor and journal start it on the head through the launcher, the
smoke test waits for /health and times one streamed completion, and the rollback stops exactly
that process. What is proved: the orchestration (start, environment, health wait, completion,
rollback). Not proved here: vLLM itself, which needs a GPU."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from strixwizard.tui.steps import key_of
from tests.support.cli import CliResult, run_cli
from tests.support.lab import Lab, LabHost, _kill_in_netns, lab_fixture

servelab2 = lab_fixture(2, name="servelab2")
DATA = Path(__file__).parent / "data"
STAND_IN = Path(__file__).parent / "support" / "standin_openai.py"
TARGET = "/root/strixwizard-etc"
RAY_TEMP = "/root/strixwizard-ray"  # in the node's home: never this machine's /var/lib
NODE_JOURNAL = "/root/strixwizard-journal"
RUN_DIR = "/root/strixwizard-vllm"
MODEL = "stand-in/tiny-model"
MPIRUN_STAND_IN = f"""#!/bin/sh
# STAND-IN for mpirun: the all_reduce_perf log RCCL prints over TCP sockets (NET/Socket).
cat {DATA / "live" / "all_reduce_perf_gfx1151_net_socket.txt"}
"""


def run_dir(host: LabHost) -> Path:
    return host.home / "strixwizard-vllm"


def stand_in_pid(host: LabHost) -> int | None:
    path = run_dir(host) / "vllm.pid"
    return int(path.read_text().splitlines()[0]) if path.exists() else None


def node_proc(host: LabHost) -> Path:
    """The /proc that shows the node's PIDs (a lab whose nodes have their own PID namespace
    has `LabHost.proc`; one without shares this machine's)."""
    return Path(getattr(host, "proc", "/proc"))


def root_pid(host: LabHost, pid: int) -> int | None:
    """The PID to signal from this machine for the node's `pid`."""
    translate = getattr(host, "root_pid", None)
    return translate(pid) if callable(translate) else pid


def serving(host: LabHost, pid: int | None) -> bool:
    if pid is None:
        return False
    try:
        return STAND_IN.name.encode() in (node_proc(host) / str(pid) / "cmdline").read_bytes()
    except OSError:
        return False


def listening(host: LabHost, port: int = 8000) -> list[str]:
    done = host.run_in_ns(["ss", "-Hltn"], check=True)
    return [line.split()[3] for line in done.stdout.splitlines()
            if line.strip() and line.split()[3].endswith(f":{port}")]


def knobs(host: LabHost, **values: object) -> None:
    (host.home / "standin-vllm.json").write_text(json.dumps(values))


@pytest.fixture
def lab(servelab2: Lab) -> Iterator[Lab]:
    for host in servelab2.hosts:
        for path in host.bin_dir.glob("*"):
            path.unlink()
        host.stand_in("ray", (DATA / "deploy" / "standins" / "ray").read_text())
        host.stand_in("mpirun", MPIRUN_STAND_IN)
    # STAND-IN vllm on the head only: a shim that runs the stand-in server with its argv
    servelab2.hosts[0].stand_in("vllm", f'#!/bin/sh\nexec python3 {STAND_IN} "$@"\n')
    knobs(servelab2.hosts[0], load_s=1.0, token_ms=5)
    yield servelab2
    for host in servelab2.hosts:  # stop what a failed test left, by PID, in its namespace only
        ray_pid = host.home / ".ray-stand-in" / "raylet.pid"
        node_pids = [pid for pid in (stand_in_pid(host),) if pid is not None and serving(host, pid)]
        if ray_pid.exists():
            node_pids.append(int(ray_pid.read_text()))
        if pids := [p for p in (root_pid(host, pid) for pid in node_pids) if p is not None]:
            _kill_in_netns(pids, [host.netns])
        for path in (host.home / "strixwizard-etc", host.home / "strixwizard-ray", run_dir(host),
                     host.home / ".ray-stand-in"):
            shutil.rmtree(path, ignore_errors=True)


def deploy(site: Path, tmp: Path, *args: str) -> CliResult:
    return run_cli("deploy", "--site", str(site), "--transport", "tcp", "--target-dir", TARGET,
                   "--node-journal-dir", NODE_JOURNAL, "--serve-run-dir", RUN_DIR,
                   "--ray-temp-dir", RAY_TEMP, *args,
                   env={"XDG_STATE_HOME": str(tmp / "state")}, timeout=180)


def test_stand_in_served_answers_then_rollback_stops_exactly_it(lab: Lab, tmp_path: Path) -> None:
    head, worker = lab.hosts
    site = lab.write_site_yaml(tmp_path / "lab.yaml")
    applied = deploy(site, tmp_path, "--serve", "--model", MODEL, "--serve-timeout", "60",
                     "--apply", "--yes", "--json")
    assert applied.rc == 0, applied.stdout + applied.stderr
    doc = applied.json()
    smoke = {c["id"]: c for c in doc["smoke"]["checks"]}
    assert smoke["vllm.health"]["status"] == "pass", smoke
    assert smoke["vllm.health"]["observed"].startswith("/health 200 after ")
    completion = smoke["vllm.completion"]
    assert completion["status"] == "pass", completion
    assert completion["observed"].startswith("16 tokens, first after ")
    print(f"\nSTAND-IN vllm serve on the lab: {smoke['vllm.health']['observed']}; "
          f"completion {completion['observed']} (stand-in server, not vLLM)")

    # what the stand-in saw: vLLM's argv as planned, the cluster's environment, RAY_ADDRESS
    started = json.loads((run_dir(head) / "vllm.log").read_text().splitlines()[0])
    assert started["argv"] == doc["plan"]["vllm_argv"][1:]
    assert started["argv"][:2] == ["serve", MODEL]
    assert started["env"]["RAY_ADDRESS"] == f"{head.fabric_addr}:6379"
    assert started["env"]["VLLM_HOST_IP"] == head.fabric_addr
    assert started["env"]["NCCL_SOCKET_IFNAME"] == "=fab0"
    assert listening(head) == [f"{head.fabric_addr}:8000"] and not listening(worker)
    pid = stand_in_pid(head)
    assert serving(head, pid)

    again = deploy(site, tmp_path, "--serve", "--model", MODEL, "--json")
    assert again.rc == 0 and again.json()["plan"]["summary"]["changes"] == 0

    rolled = deploy(site, tmp_path, "--rollback", doc["apply"]["run_id"], "--yes", "--json")
    assert rolled.rc == 0, rolled.stdout + rolled.stderr
    assert not serving(head, pid) and not listening(head)
    assert sorted(p.name for p in run_dir(head).iterdir()) == ["vllm.log"]  # the log stays
    for host in lab.hosts:
        assert not (host.home / "strixwizard-etc").exists()


def test_a_stand_in_server_that_dies_while_loading_rolls_the_cluster_back(lab: Lab, tmp_path: Path) -> None:
    head = lab.hosts[0]
    knobs(head, load_s=30, exit_after_s=0.5)
    site = lab.write_site_yaml(tmp_path / "lab.yaml")
    done = deploy(site, tmp_path, "--serve", "--model", MODEL, "--apply", "--yes", "--json")
    assert done.rc == 1, done.stdout + done.stderr
    nodes = {n["node"]: n for n in done.json()["apply"]["nodes"]}
    assert "exited at start" in nodes["node0"]["state"]
    assert "engine core failed to start" in nodes["node0"]["state"]
    assert {n["status"] for n in nodes.values()} == {"rolled-back"}
    assert done.json()["smoke"] is None
    for host in lab.hosts:
        assert not (host.home / "strixwizard-etc").exists()
    assert not os.path.exists(run_dir(head) / "vllm.pid")


def test_a_stand_in_server_that_never_gets_ready_fails_the_smoke_within_its_bound(
        lab: Lab, tmp_path: Path) -> None:
    head = lab.hosts[0]
    knobs(head, never_ready=True)
    site = lab.write_site_yaml(tmp_path / "lab.yaml")
    done = deploy(site, tmp_path, "--serve", "--model", MODEL, "--serve-timeout", "3",
                  "--apply", "--yes", "--json")
    assert done.rc == 1, done.stdout + done.stderr
    doc = done.json()
    assert doc["apply"]["status"] == "applied"
    health = {c["id"]: c for c in doc["smoke"]["checks"]}["vllm.health"]
    assert health["status"] == "fail" and "vllm serve runs but is not ready" in health["detail"]
    assert health["observed"].startswith("/health: 503 after ")
    assert "vllm.completion" not in {c["id"] for c in doc["smoke"]["checks"]}
    pid = stand_in_pid(head)
    assert serving(head, pid)
    rolled = deploy(site, tmp_path, "--rollback", doc["apply"]["run_id"], "--yes")
    assert rolled.rc == 0 and not serving(head, pid)


def test_the_wizard_deploys_the_stand_in_vllm_shows_the_verdict_and_rolls_back(
        lab: Lab, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Deploy step on the lab: the user's picks (TCP, the model, start vLLM), the same
    confirmation, progress, smoke verdict and rollback as the CLI, through the same service."""
    import asyncio

    from strixwizard.services.deploy import DeployChoice, DeployOptions
    from strixwizard.services.facade import Services
    from strixwizard.tui.app import WizardApp
    from strixwizard.tui.screens.deploy import DeployState
    from tests.support.wizard import discovered, notice_text, settle, wait_for_modal

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    head = lab.hosts[0]
    site = lab.write_site_yaml(tmp_path / "site.yaml")
    services = Services(deploy_options=DeployOptions(journal_dir=tmp_path / "journal",
                                                     node_journal_dir=NODE_JOURNAL))
    app = WizardApp(site_file=site, services=services)

    async def walk() -> None:
        async with app.run_test(size=(100, 40)) as pilot:
            await pilot.press("n")
            await discovered(app, pilot)
            app.session.of(DeployState).choice = DeployChoice(
                transport="tcp", model=MODEL, target_dir=TARGET, options=(
                    ("serve", True), ("serve_run_dir", RUN_DIR), ("ray_temp_dir", RAY_TEMP)))
            await pilot.press(key_of("deploy"))
            for _ in range(100):
                await settle(app, pilot)
                if app.session.of(DeployState).preview is not None:
                    break
                await pilot.pause(0.05)
            assert "tcp profile" in notice_text(app, "#deploy-status")
            await pilot.press("a")
            modal = await wait_for_modal(app, pilot)
            assert "vllm serve starts on the head" in modal.question
            await pilot.press("y")
            for _ in range(1200):  # bounded: 120 s
                await settle(app, pilot)
                if app.session.of(DeployState).deployed is not None and not app.busy("deploy"):
                    break
                await pilot.pause(0.1)
            deployed = app.session.of(DeployState).deployed
            assert deployed is not None and deployed.ok, deployed
            run = notice_text(app, "#deploy-run")
            assert "Smoke test: PASS" in run and "vllm.completion: 16 tokens, first after" in run
            pid = stand_in_pid(head)
            assert serving(head, pid)
            await pilot.press("u")
            await wait_for_modal(app, pilot)
            await pilot.press("y")
            for _ in range(600):
                await settle(app, pilot)
                if not app.busy("deploy") and app.session.of(DeployState).rolled_back:
                    break
                await pilot.pause(0.1)
            assert not serving(head, pid) and not listening(head)

    asyncio.run(walk())
    for host in lab.hosts:
        assert not (host.home / "strixwizard-etc").exists()

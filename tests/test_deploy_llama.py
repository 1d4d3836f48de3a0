"""`deploy --stack llama-rpc` on the demo site (plan only) and the smoke verdict on logs.

The RDMA logs under tests/data/deploy/llama are CONSTRUCTED from the strings llama.cpp's
source prints (file:line in that directory's README.md), not captured: this machine has no
RDMA device. The real programs run in tests/test_deploy_llama_lab.py (over TCP).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from strixwizard.deploy.engine import make_plan
from strixwizard.deploy.plan import DeploySettings
from strixwizard.deploy.process import START, STATE, STOP
from strixwizard.deploy.smoke import FAIL, PASS
from strixwizard.deploy.stacks.llama_rpc.llama import (
    LlamaPlan,
    LlamaSettings,
    judge_completion,
    judge_devices,
    judge_rdma,
)
from strixwizard.discovery import Discovery
from strixwizard.fixing.model import Kind
from strixwizard.services.nodes import RunRequest, resolve_run
from tests.support.cli import invoke

LOGS = Path(__file__).parent / "data" / "deploy" / "llama"
MODEL = "/models/Llama-3.3-70B-Instruct-Q4_K_M.gguf"


def demo_plan(**llama: object) -> LlamaPlan:
    site, nodes = resolve_run(RunRequest(demo=True))
    settings = DeploySettings(stack="llama-rpc", options=(LlamaSettings(**llama),))  # type: ignore[arg-type]
    plan = make_plan(Discovery.of(site, nodes), settings)
    assert isinstance(plan, LlamaPlan)
    return plan


def log(name: str) -> str:
    return (LOGS / name).read_text()


def test_workers_bind_their_fabric_address_and_the_head_lists_them() -> None:
    plan = demo_plan(model=MODEL, no_mmap=True, split_mode="row")
    assert plan.workers == ["node-b"]
    assert plan.rpc_argv == {"node-b": ("-H", "192.168.100.2", "-p", "50052", "-c")}
    # the RDMA device and GID index come from node-b's facts (sysfs GID table)
    assert plan.rpc_environment == {"node-b": ("GGML_RDMA_DEV=rocep194s0", "GGML_RDMA_GID=1")}
    assert plan.server_environment == ("GGML_RDMA_DEV=rocep194s0", "GGML_RDMA_GID=1")
    assert plan.server_argv == (
        "-m", MODEL, "--host", "192.168.100.1", "--port", "8080", "--rpc", "192.168.100.2:50052",
        "-ngl", "99", "-sm", "row", "-lv", "4", "--no-mmap")
    assert "0.0.0.0" not in " ".join(a for p in plan.site_plan.plans for s in p.steps
                                     for a in s.argv)


def test_workers_start_first_and_every_start_is_a_journalled_command_undone_by_pid() -> None:
    plan = demo_plan(model=MODEL)
    assert [(p.node, p.fix) for p in plan.site_plan.plans] == [
        ("node-b", "deploy.llama-rpc"), ("node-a", "deploy.llama-server")]
    groups = {p.group for p in plan.site_plan.plans}
    assert len(groups) == 1 and None not in groups
    launcher = plan.site_plan.plans[0].steps[1]
    assert (launcher.kind, launcher.target, launcher.after) == (
        Kind.FILE, "/etc/strixwizard/llama-start.sh", START)
    rpc = plan.site_plan.plans[0].steps[2]
    assert rpc.kind is Kind.COMMAND and (rpc.before, rpc.after) == ("stopped", "running")
    assert rpc.argv[:2] == ("sh", "/etc/strixwizard/llama-start.sh")
    pidfile = "/var/lib/strixwizard/llama/ggml-rpc-server.pid"
    assert rpc.argv[2:] == (
        pidfile, "/var/lib/strixwizard/llama/ggml-rpc-server.log", "50052", "rpc",
        "ggml-rpc-server", "rpc-server", "--", "GGML_RDMA_DEV=rocep194s0", "GGML_RDMA_GID=1",
        "--", "-H", "192.168.100.2", "-p", "50052", "-c")
    assert rpc.undo_argv == ("sh", "-c", STOP, pidfile)
    assert rpc.read.argv == ("sh", "-c", STATE, pidfile)
    server = plan.site_plan.plans[1].steps[-1]
    assert server.target == "llama-server" and server.argv[2:7] == (
        "/var/lib/strixwizard/llama/llama-server.pid",
        "/var/lib/strixwizard/llama/llama-server.log", "8080",
        "server", "llama-server")


def test_rpc_on_head_and_a_bin_dir_and_devices() -> None:
    plan = demo_plan(model=MODEL, rpc_on_head=True, bin_dir="/opt/llama/bin",
                     devices=("Vulkan0",), cache=False)
    assert plan.workers == ["node-a", "node-b"]
    assert plan.server_argv[plan.server_argv.index("--rpc") + 1] == (
        "192.168.100.1:50052,192.168.100.2:50052")
    assert plan.rpc_argv["node-a"] == ("-H", "192.168.100.1", "-p", "50052", "-d", "Vulkan0")
    head_steps = plan.site_plan.for_node("node-a")[0].steps
    assert [s.target for s in head_steps] == ["/etc/strixwizard", "/etc/strixwizard/llama-start.sh",
                                              "ggml-rpc-server", "llama-server"]
    assert head_steps[2].argv[6:9] == ("/opt/llama/bin/ggml-rpc-server",
                                        "/opt/llama/bin/rpc-server", "ggml-rpc-server")


def test_without_a_model_llama_server_is_only_shown() -> None:
    plan = demo_plan()
    head = plan.site_plan.for_node("node-a")[0]
    assert [s.target for s in head.steps] == ["/etc/strixwizard", "/etc/strixwizard/llama-start.sh"]
    assert any("pass --gguf PATH" in n for n in head.notes)
    assert head.notes[0].startswith("llama-server line: env GGML_RDMA_DEV=rocep194s0 "
                                    "GGML_RDMA_GID=1 llama-server -m MODEL.gguf --host "
                                    "192.168.100.1")


def test_programs_doctor_found_only_in_a_build_folder_are_named_with_the_flag_that_reaches_them(
        ) -> None:
    """The demo's llama.cpp is in /opt/llama.cpp/build/bin (doctor's survey searches there; the
    launcher looks only in --llama-bin-dir and on PATH): the plan says so once, for the nodes
    that run a program from there, in the site's order."""
    note = ("the llama.cpp programs are in /opt/llama.cpp/build/bin (doctor found them there), a "
            "folder the deploy looks in only when told: give --llama-bin-dir "
            "/opt/llama.cpp/build/bin (or `llama_bin_dir: /opt/llama.cpp/build/bin` in the site "
            "file), unless root's PATH there finds them")
    assert f"node-a, node-b: {note}" in demo_plan(model=MODEL).notes
    assert f"node-b: {note}" in demo_plan().notes  # no model: the head starts nothing
    told = demo_plan(model=MODEL, bin_dir="/opt/llama.cpp/build/bin")
    assert not [n for n in told.notes if "only when told" in n]


def test_tcp_profile_switches_rdma_off_on_every_end() -> None:
    site, nodes = resolve_run(RunRequest(demo=True))
    plan = make_plan(Discovery.of(site, nodes),
                     DeploySettings(stack="llama-rpc", options=(LlamaSettings(),)), "tcp")
    assert isinstance(plan, LlamaPlan)
    assert plan.rpc_environment == {"node-b": ("GGML_RPC_NO_RDMA=1",)}
    assert plan.server_environment == ("GGML_RPC_NO_RDMA=1",)


def test_a_split_mode_llama_does_not_know_is_refused() -> None:
    with pytest.raises(ValueError, match="split mode"):
        LlamaSettings(split_mode="pipeline")


# -- smoke verdict on the constructed logs ---------------------------------------------

def test_recorded_rdma_on_both_ends_passes() -> None:
    plan = demo_plan(model=MODEL)
    check = judge_rdma(plan, {"node-b": log("rpc_server_rdma.txt")}, log("llama_server_rdma.txt"))
    assert (check.status, check.observed) == (PASS, "RDMA on rocep194s0")
    assert judge_devices(plan, log("llama_server_rdma.txt")).status == PASS


@pytest.mark.parametrize(("worker_log", "head_log", "reason"), [
    ("rpc_server_no_gid.txt", "llama_server_tcp.txt",
     "node-b (ggml-rpc-server): no `RDMA probed` line: no RDMA port has a GID equal to "
     "192.168.100.2 (the address is on another NIC than the RDMA one, a GID-less iWARP port"),
    ("rpc_server_tcp_build.txt", "llama_server_tcp.txt",
     "node-b (ggml-rpc-server): the build has no RDMA transport (banner `transport : TCP`)"),
    ("rpc_server_activate_failed.txt", "llama_server_rdma.txt",
     "node-b (ggml-rpc-server): `RDMA activate failed, staying on TCP`"),
])
def test_recorded_tcp_fallback_fails_loudly_naming_it(worker_log: str, head_log: str,
                                                      reason: str) -> None:
    plan = demo_plan(model=MODEL)
    check = judge_rdma(plan, {"node-b": log(worker_log)}, log(head_log))
    assert (check.status, check.observed) == (FAIL, "TCP FALLBACK")
    assert check.detail.startswith("llama.cpp RPC fell back to TCP: ")
    assert reason in check.detail
    if head_log == "llama_server_tcp.txt":
        assert "node-a (llama-server): no `RDMA probed` line" in check.detail


def test_tcp_profile_expects_tcp() -> None:
    site, nodes = resolve_run(RunRequest(demo=True))
    plan = make_plan(Discovery.of(site, nodes),
                     DeploySettings(stack="llama-rpc", options=(LlamaSettings(),)), "tcp")
    assert isinstance(plan, LlamaPlan)
    assert judge_rdma(plan, {"node-b": log("rpc_server_no_gid.txt")},
                      log("llama_server_tcp.txt")).status == PASS
    assert judge_rdma(plan, {"node-b": log("rpc_server_rdma.txt")},
                      log("llama_server_rdma.txt")).status == FAIL


def test_a_worker_without_weights_fails() -> None:
    plan = demo_plan(model=MODEL)
    head = log("llama_server_rdma.txt").replace("RPC0[192.168.100.2:50052] model", "x model")
    check = judge_devices(plan, head)
    assert (check.status, check.observed) == (FAIL, "no weights on node-b")


def test_completion_verdicts() -> None:
    plan = demo_plan(model=MODEL)
    ok = judge_completion(plan, 0, '{"health": 200, "seconds": 0.05, "predicted": 8, '
                          '"timings": {"predicted_per_second": 160.0}}\n', "")[0]
    assert (ok.status, ok.observed) == (PASS, "8 tokens in 50 ms, 160.0 tokens/s")
    loading = judge_completion(plan, 0, '{"health": 503}\n', "")[0]
    assert (loading.status, loading.observed) == (FAIL, "/health: 503")
    broken = judge_completion(plan, 1, "", "Traceback\nConnectionRefusedError: [Errno 111]")[0]
    assert broken.status == "error" and "ConnectionRefusedError" in broken.detail


# -- the launcher's shell scripts take values as data ---------------------------------

def test_launcher_values_are_never_interpreted(tmp_path: Path) -> None:
    marker = tmp_path / "PWNED"
    pidfile, logfile = tmp_path / "x;touch PWNED.pid", tmp_path / "$(touch PWNED).log"
    done = subprocess.run(
        ["sh", "-c", START, "llama-start.sh", str(pidfile), str(logfile), "18999", "rpc",
         f"$(touch {marker})", "--", f"A=$(touch {marker})", "--", f"`touch {marker}`"],
        capture_output=True, text=True, timeout=10, cwd=tmp_path, check=False)
    assert done.returncode == 1 and "not installed: none of $(touch" in done.stderr
    state = subprocess.run(["sh", "-c", STATE, str(pidfile)], capture_output=True, text=True,
                           timeout=10, check=False)
    assert state.stdout == "stopped\n"
    assert not marker.exists() and not (tmp_path / "PWNED").exists()


def test_stop_leaves_a_process_alone_that_is_not_the_one_started(tmp_path: Path) -> None:
    other = subprocess.Popen(["sleep", "30"])
    try:
        pidfile = tmp_path / "x.pid"
        pidfile.write_text(f"{other.pid}\n/usr/bin/not-sleep\n")
        state = subprocess.run(["sh", "-c", STATE, str(pidfile)], capture_output=True, text=True,
                               timeout=10, check=False)
        assert state.stdout == "stopped\n"
        subprocess.run(["sh", "-c", STOP, str(pidfile)], timeout=10, check=True)
        assert other.poll() is None and not pidfile.exists()
    finally:
        other.kill()
        other.wait()


def test_cli_plan_shows_the_launch_lines() -> None:
    done = invoke("deploy", "--demo", "--stack", "llama-rpc", "--gguf", MODEL)
    assert done.rc == 0, done.stderr
    assert ("node-b: env GGML_RDMA_DEV=rocep194s0 GGML_RDMA_GID=1 ggml-rpc-server -H "
            "192.168.100.2 -p 50052 -c") in done.stdout
    assert "--rpc 192.168.100.2:50052 -ngl 99 -sm layer -lv 4" in done.stdout
    as_json = invoke("deploy", "--demo", "--stack", "llama-rpc", "--json")
    assert as_json.json()["plan"]["stack"] == "llama-rpc"


FAKE_SERVER = """#!/bin/sh
# STAND-IN for an older llama-server: its --help, and the arguments it was started with
if [ "$1" = --help ]; then
  echo "-sm,   --split-mode {none,layer,row}   how to split the model"
  echo "-lm,   --load-mode MODE                model loading mode"
  exit 0
fi
printf '%s\\n' "$@" > "$(dirname "$0")/argv"
echo "error: stand-in stops here" >&2
"""


@pytest.mark.parametrize(("args", "error", "argv"), [
    (("-sm", "tensor"), "this build has no split mode tensor", None),
    (("-sm", "row", "--no-mmap"), "exited at start: error: stand-in stops here",
     ["-sm", "row", "--load-mode", "none"]),
])
def test_the_launcher_fits_llama_server_flags_to_the_build(
        tmp_path: Path, args: tuple[str, ...], error: str, argv: list[str] | None) -> None:
    fake = tmp_path / "llama-server"
    fake.write_text(FAKE_SERVER)
    fake.chmod(0o755)
    done = subprocess.run(
        ["sh", "-c", START, "llama-start.sh", str(tmp_path / "s.pid"), str(tmp_path / "s.log"),
         "18998", "server", str(fake), "--", "--", *args],
        capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 1 and error in done.stderr
    recorded = tmp_path / "argv"
    assert (recorded.read_text().splitlines() if recorded.exists() else None) == argv
    assert not (tmp_path / "s.pid").exists() and not (tmp_path / "s.log").exists()


# -- published logs (tests/data/real, provenance in its INDEX) --------------------------

REAL = Path(__file__).parent / "data" / "real"


def test_an_rdma_error_after_activation_fails_the_transport_with_the_line_quoted() -> None:
    """llama.cpp PR #20590: Strix Halo + ConnectX-4/5 activates RDMA, then `RDMA CQ poll
    timeout`; the head's log is the constructed RDMA one (its end is healthy)."""
    plan = demo_plan(model=MODEL)
    worker = (REAL / "llama_rpc_server_rdma_cq_poll_timeout_strix_halo_cx4_cx5.txt").read_text()
    check = judge_rdma(plan, {"node-b": worker}, log("llama_server_rdma.txt"))
    assert (check.status, check.observed) == (FAIL, "RDMA ERROR AFTER ACTIVATION")
    assert "node-b (ggml-rpc-server): `llama-1  | RDMA CQ poll timeout`" in check.detail
    assert any("RDMA CQ poll timeout" in line for line in check.evidence)


def test_rdma_errors_before_activation_or_unrelated_lines_are_not_rdma_errors() -> None:
    from strixwizard.deploy.stacks.llama_rpc.llama import RdmaEvidence

    text = ("RDMA probed:   dev=rocep194s0   gid=1 qpn=7 inline=316\n"
            "failed to open some file\n"
            "RDMA activated: qpn=7->9 mtu=4096 rx_depth=24\n"
            "Client connection closed\n"
            "ibv_post_send failed to post the work request\n"
            "QP 7 moved to error state\n")
    ev = RdmaEvidence.of(text)
    assert ev.probed == ("rocep194s0",) and ev.activated == 1  # whitespace-tolerant
    assert ev.errors == ("ibv_post_send failed to post the work request",
                         "QP 7 moved to error state")


@pytest.mark.parametrize("line", [
    "load_tensors: RPC[192.168.100.2:50052] model buffer size =  2700.00 MiB",  # no index (#11552)
    "load_tensors: RPC0[192.168.100.2:50052] model buffer size =  2700.00 MiB",
    "llama_kv_cache_unified: RPC[192.168.100.2:50052] KV buffer size =   600.00 MiB",  # KV only
])
def test_a_worker_holding_layers_is_read_in_every_layout(line: str) -> None:
    plan = demo_plan(model=MODEL)
    assert judge_devices(plan, line + "\n").status == PASS

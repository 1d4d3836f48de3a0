"""`deploy --stack llama-rpc --persist`: systemd units instead of runtime processes. The unit
text is parsed back (the same argv, environment and log as the runtime launcher's) and
checked by `systemd-analyze verify`; the plan writes, enables and undoes exactly those
units."""

from __future__ import annotations

import configparser
import io
import shutil
import subprocess
from pathlib import Path

from strixwizard.deploy.engine import make_plan
from strixwizard.deploy.plan import DeploySettings
from strixwizard.deploy.stacks.llama_rpc.llama import LlamaPlan, LlamaSettings
from strixwizard.deploy.stacks.llama_rpc.persist import unit_text
from strixwizard.deploy.stacks.llama_rpc.render import render_llama
from strixwizard.discovery import Discovery
from strixwizard.facts.llama_cpp import LlamaBuild, LlamaProgram, LlamaSurvey
from strixwizard.services.nodes import RunRequest, resolve_run
from tests.support.cli import invoke
from tests.support.hostile.strings import assert_no_control
from tests.support.systemd_units import command_argv, environment_pairs


def persist_plan(**llama: object) -> LlamaPlan:
    site, nodes = resolve_run(RunRequest(demo=True))
    options: dict[str, object] = {"model": "/models/q.gguf", **llama}
    settings = LlamaSettings(persist=True, rpc_on_head=True, **options)  # type: ignore[arg-type]
    plan = make_plan(Discovery.of(site, nodes), DeploySettings(stack="llama-rpc", options=(settings,)))
    assert isinstance(plan, LlamaPlan)
    return plan


def parse_unit(text: str) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None, strict=True)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string(text)
    return parser


def test_units_carry_the_runtime_argv_environment_and_log() -> None:
    plan = persist_plan()
    steps = {(p.node, s.target): s for p in plan.site_plan.plans for s in p.steps}
    assert sorted(steps) == [
        ("node-a", "/etc/systemd/system/strixwizard-llama-rpc.service"),
        ("node-a", "/etc/systemd/system/strixwizard-llama-server.service"),
        ("node-a", "/var/lib/strixwizard/llama/.strixwizard-llama-rpc.service.reload"),
        ("node-a", "/var/lib/strixwizard/llama/.strixwizard-llama-server.service.reload"),
        ("node-a", "strixwizard-llama-rpc.service"), ("node-a", "strixwizard-llama-server.service"),
        ("node-b", "/etc/systemd/system/strixwizard-llama-rpc.service"),
        ("node-b", "/var/lib/strixwizard/llama/.strixwizard-llama-rpc.service.reload"),
        ("node-b", "strixwizard-llama-rpc.service")]
    # per unit: the reload stamp first, so its undo (`systemctl daemon-reload`) runs last in the
    # rollback, once the unit file is gone
    order = [s.target for p in plan.site_plan.plans if p.node == "node-b" for s in p.steps]
    assert order == ["/var/lib/strixwizard/llama/.strixwizard-llama-rpc.service.reload",
                     "/etc/systemd/system/strixwizard-llama-rpc.service",
                     "strixwizard-llama-rpc.service"]
    stamp = steps["node-b", order[0]]
    assert stamp.undo_argv == ("sh", "-c", 'systemctl daemon-reload && rm -f -- "$0"', order[0])
    worker = parse_unit(steps["node-b", "/etc/systemd/system/strixwizard-llama-rpc.service"].after or "")
    service = worker["Service"]
    assert command_argv(service["ExecStart"]) == ["ggml-rpc-server",
                                                          *plan.rpc_argv["node-b"]]
    assert environment_pairs(service["Environment"]) == list(plan.rpc_environment["node-b"])
    assert service["StandardOutput"] == "truncate:/var/lib/strixwizard/llama/ggml-rpc-server.log"
    assert (service["Type"], service["LimitMEMLOCK"]) == ("simple", "infinity")
    # ggml-rpc-server exits 0 when it cannot bind (its address not up yet): on-failure would
    # leave it down for the boot
    assert service["Restart"] == "always"
    assert worker["Unit"]["After"] == worker["Unit"]["Wants"] == "network-online.target"
    assert worker["Install"]["WantedBy"] == "multi-user.target"
    server = parse_unit(steps["node-a", "/etc/systemd/system/strixwizard-llama-server.service"]
                        .after or "")
    assert command_argv(server["Service"]["ExecStart"]) == ["llama-server",
                                                                    *plan.server_argv]
    enable = steps["node-b", "strixwizard-llama-rpc.service"]
    assert enable.argv == ("sh", "-c", 'systemctl daemon-reload && exec systemctl enable --now "$0"',
                           "strixwizard-llama-rpc.service")
    assert enable.undo_argv == ("systemctl", "disable", "--now", "strixwizard-llama-rpc.service")
    # no runtime launcher, no pid files: systemd supervises
    assert not any(t.endswith("llama-start.sh") for _n, t in steps)


def test_a_hostile_model_path_stays_one_literal_argument(tmp_path: Path) -> None:
    path = "/models/$(touch PWNED) %h 'x'.gguf"
    plan = persist_plan(model=path, bin_dir="/opt/llama cpp/bin")
    text = next(s.after for p in plan.site_plan.plans for s in p.steps
                if s.target.endswith("llama-server.service") and s.after)
    assert text is not None
    argv = command_argv(parse_unit(text)["Service"]["ExecStart"])
    assert argv[0] == "/opt/llama cpp/bin/llama-server"
    assert argv[argv.index("-m") + 1] == path
    assert "%%h" in text and "$$(touch" in text  # no specifier, no variable left for systemd


def test_the_units_pass_systemd_analyze_verify(tmp_path: Path) -> None:
    tool = shutil.which("systemd-analyze")
    assert tool, "systemd-analyze not found: Debian's systemd package provides it"
    binary = tmp_path / "ggml-rpc-server"
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    unit = tmp_path / "strixwizard-llama-rpc.service"
    unit.write_text(unit_text("ggml-rpc-server on 10.0.0.1:50052", str(binary),
                              ("-H", "10.0.0.1", "-p", "50052", "-c"), ("GGML_RDMA_GID=3",),
                              str(tmp_path / "run" / "ggml-rpc-server.log"), str(tmp_path / "run")))
    done = subprocess.run([tool, "verify", "--man=no", str(unit)], capture_output=True, text=True,
                          timeout=60, check=False, cwd=tmp_path)
    assert done.returncode == 0 and not (done.stdout + done.stderr).strip(), done.stderr


def test_cli_persist_plan_says_units_and_how_they_are_undone() -> None:
    done = invoke("deploy", "--demo", "--stack", "llama-rpc", "--persist", "--gguf", "/m.gguf")
    assert done.rc == 0, done.stderr
    assert "systemd units go to /etc/systemd/system (--persist" in done.stdout
    assert ("undo: systemctl disable --now strixwizard-llama-rpc.service, then the unit file "
            "is removed") in done.stdout
    ray = invoke("deploy", "--demo", "--persist")
    assert ray.rc == 2 and "--persist is for --stack llama-rpc" in ray.stderr


def test_a_worker_with_an_older_build_gets_a_unit_naming_rpc_server() -> None:
    """A unit names one program: a node whose llama.cpp survey found only the older name
    (`rpc-server`, before llama.cpp renamed it) gets that name, the others the newest."""
    site, nodes = resolve_run(RunRequest(demo=True))
    discovery = Discovery.of(site, nodes)
    older = LlamaBuild((LlamaProgram("rpc-server", "/usr/local/bin/rpc-server"),))
    discovery.facts_by_name["node-b"].__dict__["llama"] = LlamaSurvey(older)  # cached_property
    settings = LlamaSettings(persist=True, rpc_on_head=True, model="/m.gguf",
                             bin_dir="/opt/llama/bin")
    plan = make_plan(discovery, DeploySettings(stack="llama-rpc", options=(settings,)))
    assert isinstance(plan, LlamaPlan)
    assert plan.rpc_program == {"node-a": "/opt/llama/bin/ggml-rpc-server",
                                "node-b": "/opt/llama/bin/rpc-server"}
    worker = next(step for p in plan.site_plan.plans if p.node == "node-b" for step in p.steps
                  if step.target == "/etc/systemd/system/strixwizard-llama-rpc.service")
    assert command_argv(parse_unit(worker.after or "")["Service"]["ExecStart"])[0] == \
        "/opt/llama/bin/rpc-server"
    out = io.StringIO()
    render_llama(plan, out)
    assert "  node-b: env GGML_RDMA_DEV=rocep194s0 GGML_RDMA_GID=1 /opt/llama/bin/rpc-server -H " \
        in out.getvalue()


def test_the_plan_names_the_files_its_program_names_stand_for() -> None:
    """Bare names in the plan's command lines: the Programs line says where they come from, the
    same paths the units and the runtime launcher use."""
    cases = {
        ("--persist", "--llama-bin-dir", "/opt/llama/bin"):
            "Programs: the units run them from /opt/llama/bin (--llama-bin-dir); each worker's "
            "RPC server under the name found on it (ggml-rpc-server, or rpc-server in older "
            "builds)",
        ("--persist",): "Programs: the units name them bare, for systemd's own search path "
                        "(--llama-bin-dir DIR names a folder); each worker's RPC server under the "
                        "name found on it (ggml-rpc-server, or rpc-server in older builds)",
        ("--llama-bin-dir", "/opt/llama/bin"):
            "Programs: from /opt/llama/bin first (--llama-bin-dir), else the node's PATH: "
            "ggml-rpc-server or rpc-server, llama-server",
        (): "Programs: from each node's PATH: ggml-rpc-server or rpc-server, llama-server "
            "(--llama-bin-dir DIR: that folder first)",
    }
    for args, line in cases.items():
        done = invoke("deploy", "--demo", "--stack", "llama-rpc", "--gguf", "/m.gguf", *args)
        assert done.rc == 0, done.stderr
        assert line in done.stdout.splitlines(), (args, done.stdout[:1200])
    units = persist_plan(bin_dir="/opt/llama/bin")
    execs = {command_argv(parse_unit(step.after or "")["Service"]["ExecStart"])[0]
             for plan in units.site_plan.plans for step in plan.steps
             if step.target.startswith("/etc/systemd/system/")}
    assert execs == {"/opt/llama/bin/ggml-rpc-server", "/opt/llama/bin/llama-server"}, execs


def test_deploy_persist_refuses_a_gguf_path_with_a_line_break(tmp_path: Path) -> None:
    for path in ("/models/x.gguf\nExecStartPre=/bin/sh -c id", "/models/x\x1b]0;t\x07.gguf"):
        result = invoke("deploy", "--demo", "--stack", "llama-rpc", "--persist", "--gguf", path,
                         "--plan", env={"XDG_STATE_HOME": str(tmp_path / "state")})
        assert result.rc == 2 and "--gguf" in result.stderr and "control character" in result.stderr
        assert_no_control(result.stdout + result.stderr)

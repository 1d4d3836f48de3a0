"""`deploy --serve` (vLLM on the Ray cluster): the line checked against vLLM's own option names,
the plan, and the health wait and timed completion against a STAND-IN OpenAI-compatible
server (tests/support/standin_openai.py, not vLLM: vLLM cannot run on this machine)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from strixwizard.deploy.engine import make_plan
from strixwizard.deploy.env import ClusterEnv, NodeEnv
from strixwizard.deploy.plan import DeploySettings
from strixwizard.deploy.stacks.ray.serve import (
    ServeSettings,
    judge_completion,
    judge_health,
    parse_probe,
    probe_argv,
    vllm_argv,
)
from strixwizard.discovery import Discovery
from strixwizard.services.nodes import RunRequest, resolve_run
from tests.support.cli import invoke

DATA = Path(__file__).parent / "data" / "deploy"
STAND_IN = Path(__file__).parent / "support" / "standin_openai.py"
MODEL = "amd/Llama-3.3-70B-Instruct-FP8-KV"


def known_flags() -> set[str]:
    doc = json.loads((DATA / "vllm_serve_flags.json").read_text())
    return {flag for names in doc["flags"].values() for flag in names}


def demo_plan(**serve: object) -> object:
    site, nodes = resolve_run(RunRequest(demo=True))
    settings = DeploySettings(model=MODEL, options=(ServeSettings(**serve),))  # type: ignore[arg-type]
    return make_plan(Discovery.of(site, nodes), settings)


def test_the_flag_list_names_the_vllm_files_and_commits_it_was_read_from() -> None:
    doc = json.loads((DATA / "vllm_serve_flags.json").read_text())
    assert doc["repository"] == "https://github.com/vllm-project/vllm"
    sources = {s["path"]: s["commit"] for s in doc["sources"]}
    assert set(sources) == {"vllm/engine/arg_utils.py", "vllm/entrypoints/openai/cli_args.py"}
    assert all(len(commit) == 40 for commit in sources.values())
    assert set(doc["flags"]) == set(sources)


def test_every_flag_the_deploy_emits_is_a_vllm_serve_option() -> None:
    plan = demo_plan(max_model_len=8192)
    argv = plan.vllm_argv  # type: ignore[attr-defined]
    assert argv[:3] == ("vllm", "serve", MODEL)
    emitted = {a for a in argv if a.startswith("-")}
    assert emitted == {"--tensor-parallel-size", "--distributed-executor-backend", "--host",
                       "--port", "--enforce-eager", "--max-model-len"}
    assert emitted <= known_flags()


def test_the_demo_line_is_tensor_parallel_over_ray_on_the_head_fabric_address_eager() -> None:
    plan = demo_plan()
    assert plan.vllm_argv == (  # type: ignore[attr-defined]
        "vllm", "serve", MODEL, "--tensor-parallel-size", "2", "--distributed-executor-backend",
        "ray", "--host", "192.168.100.1", "--port", "8000", "--enforce-eager")
    head = plan.site_plan.for_node("node-a")  # type: ignore[attr-defined]
    vllm = next(p for p in head if p.fix == "deploy.vllm")
    assert [s.target for s in vllm.steps] == ["/etc/strixwizard/vllm-serve.sh",
                                              "/etc/strixwizard/serve-start.sh", "vllm serve"]
    start = vllm.steps[2]
    assert start.argv[:5] == ("sh", "-ac", '. "$0" && exec "$@"', "/etc/strixwizard/rccl.env",
                              "sh")
    i = start.argv.index("--")
    assert start.argv[i - 2:i] == ("http", "vllm")
    assert start.argv[i + 1:i + 3] == ("RAY_ADDRESS=192.168.100.1:6379", "--")
    assert start.argv[i + 3:] == plan.vllm_argv[1:]  # type: ignore[attr-defined]
    assert start.undo_argv[:2] == ("sh", "-c") and start.undo_argv[-1] == "/var/lib/strixwizard/vllm/vllm.pid"
    eager = ("--enforce-eager: node-a, node-b have the Strix Halo iGPU; graph capture on "
             "gfx1151 ends in a driver timeout (https://github.com/vllm-project/vllm/issues/32180)")
    assert eager in vllm.notes


def test_eager_can_be_switched_off_and_is_not_added_off_strix(tmp_path: Path) -> None:
    assert "--enforce-eager" not in demo_plan(eager=False).vllm_argv  # type: ignore[attr-defined]
    from tests.support.scenarios import plain_site

    done = invoke("deploy", "--site", str(plain_site(tmp_path)), "--transport", "tcp",
                   "--nodes", "n0,n1", "--model", "m", "--serve", "--json")
    assert done.rc == 0, done.stderr
    assert "--enforce-eager" not in done.json()["plan"]["vllm_argv"]


def test_cli_serve_plan_text_and_json() -> None:
    done = invoke("deploy", "--demo", "--serve", "--model", MODEL)
    assert done.rc == 0, done.stderr
    assert "start vllm serve on 192.168.100.1:8000 (tensor parallel over 2 nodes" in done.stdout
    doc = invoke("deploy", "--demo", "--serve", "--model", MODEL, "--json").json()
    assert doc["plan"]["serve"] == {"url": "http://192.168.100.1:8000",
                                    "pidfile": "/var/lib/strixwizard/vllm/vllm.pid",
                                    "log": "/var/lib/strixwizard/vllm/vllm.log",
                                    "health_timeout_s": 900.0}


def test_serve_without_a_model_is_refused_with_the_next_step() -> None:
    done = invoke("deploy", "--demo", "--serve", "--json")
    assert done.rc == 2
    assert done.json()["reason"].startswith("--serve starts `vllm serve MODEL` on the head: name "
                                            "the model with --model NAME")
    llama = invoke("deploy", "--demo", "--serve", "--stack", "llama-rpc")
    assert llama.rc == 2 and "--gguf PATH starts llama-server" in llama.stderr


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def stand_in(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    """The STAND-IN server on loopback, 0.3 s of "loading" before its port opens."""
    (tmp_path / "standin-vllm.json").write_text(json.dumps({"load_s": 0.3, "token_ms": 2}))
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(STAND_IN), "serve", MODEL, "--host",
                             "127.0.0.1", "--port", str(port), "--enforce-eager"],
                            env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        yield port, tmp_path
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def head_env(ip: str) -> ClusterEnv:
    return ClusterEnv("t", "tcp", "ethernet", "h", (NodeEnv("h", ip, "lo", None, None, None, ()),), ())


def probe(env_ip: str, port: int, wait: float, ask: bool) -> tuple[int, str, str]:
    argv = probe_argv(head_env(env_ip), MODEL, ServeSettings(port=port, max_tokens=8), wait, ask)
    done = subprocess.run(list(argv), capture_output=True, text=True, timeout=30, check=False)
    return done.returncode, done.stdout, done.stderr


def test_stand_in_health_wait_then_one_timed_streamed_completion(
        stand_in: tuple[int, Path]) -> None:
    port, _ = stand_in
    env = head_env("127.0.0.1")
    serve = ServeSettings(port=port, max_tokens=8, health_timeout_s=10)
    begun = time.monotonic()
    rc, out, _ = probe("127.0.0.1", port, 10, ask=False)
    health = parse_probe(rc, out)
    assert health == {"health": 200}
    assert judge_health(env, serve, 200, time.monotonic() - begun, True, "").status == "pass"
    rc, out, err = probe("127.0.0.1", port, 5, ask=True)
    answer = parse_probe(rc, out)
    assert answer is not None and answer["usage"]["completion_tokens"] == 8
    check = judge_completion(env, serve, answer, rc, err)
    assert check.status == "pass", check
    assert check.observed.startswith("8 tokens, first after ") and "tokens/s after it" in check.observed


def test_stand_in_refuses_an_option_vllm_does_not_have(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(STAND_IN), "serve", MODEL, "--tensor-paralel-size",
                           "2"], capture_output=True, text=True, timeout=30, check=False,
                          env={"HOME": str(tmp_path)})
    assert done.returncode == 2 and "unrecognized arguments: --tensor-paralel-size" in done.stderr


def test_health_and_completion_verdicts_name_what_failed() -> None:
    env = head_env("10.0.0.1")
    serve = ServeSettings(health_timeout_s=30)
    gone = judge_health(env, serve, "[Errno 111] Connection refused", 3.0, False,
                        "INFO loading\nERROR engine core failed\n")
    assert (gone.status, gone.observed) == ("fail", "vllm serve exited")
    assert gone.evidence == ("INFO loading", "ERROR engine core failed")
    slow = judge_health(env, serve, "[Errno 111] Connection refused", 30.2, True, "")
    assert slow.observed == "/health: [Errno 111] Connection refused after 30 s"
    assert "placement group" in slow.detail
    empty = judge_completion(env, serve, {"health": 200, "ttft": None, "chunks": 0}, 0, "")
    assert (empty.status, empty.observed) == ("fail", "no tokens")
    assert judge_completion(env, serve, None, 1, "Traceback\nOSError: x").status == "error"
    assert vllm_argv(env, None)[2] == "MODEL"

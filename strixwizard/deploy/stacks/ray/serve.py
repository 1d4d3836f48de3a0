"""`deploy --serve`: start `vllm serve MODEL` on the head of the Ray cluster the deploy starts,
then ask it one short question. Planning is pure; `judge_*` are pure; the smoke test runs
through the nodes' runners (deploy/stacks/ray/serve_run.py).

The line, computed from the cluster:
  vllm serve MODEL --tensor-parallel-size N --distributed-executor-backend ray
                   --host HEAD_FABRIC_IP --port 8000 [--enforce-eager] [--max-model-len L]
- N is the number of deployed nodes (one iGPU each); vLLM's workers are Ray actors, so they
  inherit the env file the Ray daemons were started with.
- `--enforce-eager` when a node has the Strix Halo iGPU (gfx1151): vLLM's HIP graph capture
  there ends in a driver timeout that cuts the API server off from the engine, and users run
  eager mode to stay up (https://github.com/vllm-project/vllm/issues/32180; the toolbox's
  API server hang during compilation, https://github.com/kyuz0/amd-strix-halo-vllm-toolboxes/issues/12).
- `RAY_ADDRESS=HEAD_IP:6379` in vLLM's environment, so it joins the cluster the deploy
  started and never starts a local Ray of its own.
- The flag names are vLLM's own (`EngineArgs.add_cli_args` in vllm/engine/arg_utils.py,
  `FrontendArgs` in vllm/entrypoints/openai/cli_args.py); a test keeps every flag emitted
  here in the list read from those files (tests/data/deploy/vllm_serve_flags.json).

The fix engine applies one node at a time, so vLLM starts on the head right after its Ray
head, before the workers' Ray joins: vLLM waits for its placement group until the workers'
GPUs are there (vLLM's ray_utils `_wait_until_pg_ready`: "Waiting for creating a placement
group ... Check `ray status`"), and the smoke test waits for `/health` (bounded, with
progress). It is started like the llama.cpp programs (the same launcher: own session, pid
file with the process's start time, log), and undone by stopping exactly that process.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from strixwizard.deploy.env import ClusterEnv
from strixwizard.deploy.health import probe_source
from strixwizard.deploy.smoke import ERROR, FAIL, PASS, SmokeCheck
from strixwizard.deploy.stacks.ray.ray import ray_port
from strixwizard.facts import NodeFacts

if TYPE_CHECKING:
    from strixwizard.deploy.base import DeploySettings
    from strixwizard.fixing.model import Step

VLLM_PORT = 8000  # FrontendArgs.port
RUN_DIR = "/var/lib/strixwizard/vllm"
TARGET = "vllm serve"
EAGER_SOURCE = ("graph capture on gfx1151 ends in a driver timeout "
                "(https://github.com/vllm-project/vllm/issues/32180)")


@dataclass(frozen=True)
class ServeSettings:
    """What `--serve` starts and how long the smoke test waits for it."""

    port: int = VLLM_PORT
    run_dir: str = RUN_DIR  # pid file and log (the log stays after a rollback)
    health_timeout_s: float = 900.0  # a cold first load on gfx1151 compiles kernels for minutes
    max_model_len: int | None = None
    eager: bool | None = None  # None: when a node has the Strix Halo iGPU
    bin_dir: str | None = None  # where `vllm` is on the head (default: PATH)
    prompt: str = "The capital of France is"
    max_tokens: int = 16

    def file(self, name: str) -> str:
        return f"{self.run_dir.rstrip('/')}/{name}"

    @property
    def pidfile(self) -> str:
        return self.file("vllm.pid")

    @property
    def log(self) -> str:
        return self.file("vllm.log")


def strix_nodes(facts: dict[str, NodeFacts]) -> list[str]:
    """Nodes with the Strix Halo iGPU (on the PCI bus, or gfx1151 under KFD)."""
    return [name for name, node in facts.items()
            if node.gpu.pci is not None or node.gpu.gfx_target == "gfx1151"]


def vllm_argv(env: ClusterEnv, model: str | None, port: int = VLLM_PORT, eager: bool = False,
              max_model_len: int | None = None) -> tuple[str, ...]:
    argv = ["vllm", "serve", model or "MODEL", "--tensor-parallel-size", str(len(env.nodes)),
            "--distributed-executor-backend", "ray", "--host", env.head_ip, "--port", str(port)]
    if eager:
        argv.append("--enforce-eager")
    if max_model_len is not None:
        argv += ["--max-model-len", str(max_model_len)]
    return tuple(argv)


def serve_environment(env: ClusterEnv, settings: DeploySettings) -> tuple[str, ...]:
    return (f"RAY_ADDRESS={env.head_ip}:{ray_port(settings)}",)


def launcher(settings: DeploySettings) -> str:
    return settings.path("serve-start.sh")


def serve_steps(env: ClusterEnv, settings: DeploySettings, serve: ServeSettings,
                argv: tuple[str, ...]) -> tuple[Step, ...]:
    """The launcher file, then `vllm serve` started under the env file (its Ray and RCCL
    variables exported), in its own session, with its pid file and log."""
    from strixwizard.deploy.base import WITH_ENV, file_step
    from strixwizard.deploy.process import START, candidates, process_step

    names = candidates(("vllm",), serve.bin_dir)
    start = ("sh", "-ac", WITH_ENV, settings.env_file, "sh", launcher(settings), serve.pidfile,
             serve.log, str(serve.port), "http", *names, "--", *serve_environment(env, settings),
             "--", *argv[1:])
    return (file_step(launcher(settings), "write the launcher of vllm serve (pid file, log)",
                      START, mode=0o755),
            process_step(TARGET, f"start vllm serve on {env.head_ip}:{serve.port} (tensor "
                         f"parallel over {len(env.nodes)} nodes, Ray at {env.head_ip}:"
                         f"{ray_port(settings)})", serve.pidfile, start))


def server_url(env: ClusterEnv, serve: ServeSettings) -> str:
    return f"http://{env.head_ip}:{serve.port}"


# -- smoke: one probe run on the head, and its verdict -------------------------------------

#: Run on the head: poll /health for up to `wait` seconds; when it answers 200 and `ask` is
#: 1, one streamed completion, timed. Prints one JSON line. argv: URL, model, prompt,
#: max_tokens, wait, ask.
PROBE = probe_source(r"""url, model, prompt, n, wait, ask = sys.argv[1:7]
status = wait_for_health(url, float(wait), 0.5)
if status != 200 or ask != "1":
    print(json.dumps({"health": status}, allow_nan=False))
    sys.exit(0)
body = json.dumps({"model": model, "prompt": prompt, "max_tokens": int(n), "temperature": 0,
                   "stream": True, "stream_options": {"include_usage": True}}, allow_nan=False).encode()
request = urllib.request.Request(url + "/v1/completions", body,
                                 {"Content-Type": "application/json"})
started = time.monotonic()
first = last = None
chunks, usage, text, error = 0, None, "", None
try:
    with urllib.request.urlopen(request, timeout=120) as r:
        for raw in r:
            line = raw.decode("utf-8", "replace").strip()
            if not line.startswith("data:"):
                continue
            data = line[5:].strip()
            if data == "[DONE]":
                break
            event = json.loads(data)
            usage = event.get("usage") or usage
            piece = "".join(c.get("text") or "" for c in event.get("choices") or [])
            if piece:
                now = time.monotonic()
                first = now if first is None else first
                last = now
                chunks += 1
                text += piece
except (OSError, ValueError) as e:
    error = str(e)
print(json.dumps({"health": 200, "ttft": None if first is None else first - started,
                  "span": None if first is None else last - first, "chunks": chunks,
                  "usage": usage, "text": text[:200], "error": error,
                  "seconds": time.monotonic() - started}, allow_nan=False))
""")


def probe_argv(env: ClusterEnv, model: str, serve: ServeSettings, wait_s: float, ask: bool
               ) -> tuple[str, ...]:
    return ("python3", "-c", PROBE, server_url(env, serve), model, serve.prompt,
            str(serve.max_tokens), f"{wait_s:g}", "1" if ask else "0")


def parse_probe(rc: int, stdout: str) -> dict[str, Any] | None:
    try:
        answer = json.loads(stdout.strip().splitlines()[-1]) if rc == 0 else None
    except (ValueError, IndexError):
        return None
    return answer if isinstance(answer, dict) else None


def judge_health(env: ClusterEnv, serve: ServeSettings, status: object, waited_s: float,
                 alive: bool, log_tail: str) -> SmokeCheck:
    expected = f"{server_url(env, serve)}/health 200 within {serve.health_timeout_s:g} s"
    if status == 200:
        return SmokeCheck("vllm.health", PASS, f"/health 200 after {waited_s:.1f} s", expected)
    lines = tuple(line for line in log_tail.strip().splitlines()[-4:] if line.strip())
    if not alive:
        return SmokeCheck("vllm.health", FAIL, "vllm serve exited", expected,
                          f"the process the deploy started is gone; its log on {env.head}: "
                          f"{serve.log}", lines)
    return SmokeCheck("vllm.health", FAIL, f"/health: {status} after {waited_s:.0f} s", expected,
                      f"vllm serve runs but is not ready; see {serve.log} on {env.head} (a "
                      "placement group still waiting means a worker's GPU is missing from "
                      "`ray status`)", lines)


def judge_completion(env: ClusterEnv, serve: ServeSettings, answer: dict[str, Any] | None,
                     rc: int, stderr: str) -> SmokeCheck:
    """One streamed completion: time to first token and tokens per second after it."""
    expected = f"a streamed completion of up to {serve.max_tokens} tokens from /v1/completions"
    if answer is None:
        reason = stderr.strip().splitlines()
        return SmokeCheck("vllm.completion", ERROR, "no answer", expected,
                          f"the HTTP probe exited {rc}: {reason[-1] if reason else ''}")
    ttft, span = answer.get("ttft"), answer.get("span")
    usage = answer.get("usage") or {}
    tokens = usage.get("completion_tokens") if isinstance(usage, dict) else None
    tokens = tokens if isinstance(tokens, int) else int(answer.get("chunks") or 0)
    if answer.get("error") or not isinstance(ttft, (int, float)) or not tokens:
        return SmokeCheck("vllm.completion", FAIL, "no tokens", expected,
                          f"/v1/completions: {answer.get('error') or 'the stream held no text'}")
    rate = (tokens - 1) / span if tokens > 1 and isinstance(span, (int, float)) and span > 0 else None
    observed = (f"{tokens} tokens, first after {ttft * 1000:.0f} ms"
                + (f", {rate:.1f} tokens/s after it" if rate is not None else ""))
    return SmokeCheck("vllm.completion", PASS, observed, expected,
                      f"answer: {shlex.quote(str(answer.get('text', ''))[:80])}")


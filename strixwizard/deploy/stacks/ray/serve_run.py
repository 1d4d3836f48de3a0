"""The smoke test of `deploy --serve`, through the head's runner: wait for vLLM's `/health`
(in slices under the executor's command limit, saying how long it has waited, and stopping
early when the process the deploy started is gone), then one streamed completion."""

from __future__ import annotations

import time
from collections.abc import Callable

from strixwizard.deploy.env import ClusterEnv
from strixwizard.deploy.smoke import ERROR, SmokeCheck
from strixwizard.deploy.stacks.ray.serve import (
    ServeSettings,
    judge_completion,
    judge_health,
    parse_probe,
    probe_argv,
)
from strixwizard.fixing.runner import Runner, Unreachable

Progress = Callable[[str, str], None]
PROBE_SLICE_S = 20.0  # one probe run stays under the executor's 30 s command limit
LOG_TAIL_BYTES = 65536


def _alive(head: Runner, serve: ServeSettings) -> bool:
    from strixwizard.deploy.process import STATE
    from strixwizard.deploy.remote import run

    rc, out, _err = run(head, ("sh", "-c", STATE, serve.pidfile))
    return rc == 0 and out.strip() == "running"


def _log_tail(head: Runner, serve: ServeSettings) -> str:
    from strixwizard.deploy.remote import run

    rc, out, _err = run(head, ("tail", "-c", str(LOG_TAIL_BYTES), serve.log))
    return out if rc == 0 else ""


def smoke_serve(env: ClusterEnv, model: str, serve: ServeSettings, head: Runner,
                say: Progress | None = None, clock: Callable[[], float] = time.monotonic
                ) -> list[SmokeCheck]:
    from strixwizard.deploy.remote import run

    tell = say or (lambda node, message: None)
    begun = clock()
    deadline = begun + serve.health_timeout_s
    try:
        while True:
            waited = clock() - begun
            tell(env.head, f"waiting for vLLM /health ({waited:.0f} s of "
                 f"{serve.health_timeout_s:g} s)")
            left = max(1.0, min(PROBE_SLICE_S, deadline - clock()))
            rc, out, err = run(head, probe_argv(env, model, serve, left, ask=False))
            answer = parse_probe(rc, out)
            status = answer.get("health") if answer else None
            alive = status == 200 or _alive(head, serve)
            if status == 200 or not alive or clock() >= deadline:
                break
        health = judge_health(env, serve, status, clock() - begun, alive,
                              "" if status == 200 else _log_tail(head, serve))
        if health.status != "pass":
            return [health]
        tell(env.head, f"one completion ({serve.max_tokens} tokens, streamed)")
        rc, out, err = run(head, probe_argv(env, model, serve, 5.0, ask=True))
        return [health, judge_completion(env, serve, parse_probe(rc, out), rc, err)]
    except Unreachable as error:
        return [SmokeCheck("vllm.health", ERROR, "head unreachable", "", str(error))]

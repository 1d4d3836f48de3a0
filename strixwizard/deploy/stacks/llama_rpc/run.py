"""The llama.cpp stack's smoke test on a deployed cluster, through the nodes' runners.

On the head (the only node sure to reach the fabric addresses): wait for llama-server's
`/health`, send one short completion, time it; then read the logs of both ends (the
head's llama-server log, each worker's ggml-rpc-server log) and judge the transport.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from strixwizard.deploy.smoke import ERROR, PASS, SmokeCheck, SmokeReport
from strixwizard.deploy.stacks.llama_rpc.llama import (
    LlamaPlan,
    http_probe_argv,
    judge_completion,
    judge_devices,
    judge_rdma,
    rpc_log,
    server_log,
)
from strixwizard.deploy.stacks.llama_rpc.path import EndPath, judge_path
from strixwizard.fixing.runner import Runner, Unreachable

Progress = Callable[[str, str], None]
LOG_TAIL_BYTES = 262144
PROBE_SLICE_S = 20.0  # one probe run stays under the executor's 30 s command limit


def read_log(runner: Runner, path: str) -> str:
    from strixwizard.deploy.remote import run

    rc, out, _err = run(runner, ("tail", "-c", str(LOG_TAIL_BYTES), path))
    return out if rc == 0 else ""


def _forced_gid(environment: tuple[str, ...]) -> int | None:
    for pair in environment:
        name, _, value = pair.partition("=")
        if name == "GGML_RDMA_GID" and value.isdigit():
            return int(value)
    return None


def read_path(plan: LlamaPlan, runners: dict[str, Runner]) -> list[EndPath]:
    """Each end's RDMA device, the GID at the index its program runs with, its fabric MTU."""
    from strixwizard.deploy.remote import run

    env = plan.env
    ends = []
    for node in dict.fromkeys([env.head, *plan.workers]):
        this = env.node(node)
        if this.device is None or this.port is None:
            continue
        environment = plan.rpc_environment.get(node, plan.server_environment)
        blank = EndPath(node, this.device, this.port, this.netdev, this.ip,
                        _forced_gid(environment), False, "", "", "", None)
        rc, out, _err = run(runners[node], blank.read_argv())
        ends.append(EndPath.parse(node, this.device, this.port, this.netdev, this.ip,
                                  blank.gid_index, out if rc == 0 else ""))
    return ends


def smoke_llama(plan: LlamaPlan, runners: dict[str, Runner], say: Progress | None = None
                ) -> SmokeReport:
    from strixwizard.deploy.remote import run

    env = plan.env
    tell = say or (lambda node, message: None)
    report = SmokeReport()
    if not plan.llama.model:
        report.checks.append(SmokeCheck("llama.completion", ERROR, "no llama-server", "a completion",
                                        "pass --gguf PATH to start llama-server on the head"))
        return report
    head = runners[env.head]
    try:
        path = None
        if env.profile == "rdma":  # first: a broken path is named without waiting out /health
            tell(env.head, "reading each end's RDMA device, GID and fabric MTU")
            path = judge_path(read_path(plan, runners))
        wait = plan.llama.health_timeout_s if path is None or path.status == PASS else PROBE_SLICE_S
        deadline = time.monotonic() + wait
        while True:
            left = max(1.0, min(PROBE_SLICE_S, deadline - time.monotonic()))
            tell(env.head, f"waiting for {plan.server_url}/health, then one completion")
            rc, out, err = run(head, http_probe_argv(plan, left))
            checks = judge_completion(plan, rc, out, err)
            loading = checks[0].observed.startswith("/health: 503")
            if not loading or time.monotonic() >= deadline:
                break
        report.checks += checks
        tell(env.head, "reading the llama-server and ggml-rpc-server logs")
        head_log = read_log(head, server_log(plan.llama))
        logs = {w: read_log(runners[w], rpc_log(plan.llama)) for w in plan.workers}
        report.checks.append(judge_devices(plan, head_log))
        report.checks.append(judge_rdma(plan, logs, head_log))
        if path is not None:
            report.checks.append(path)
    except Unreachable as error:
        report.checks.append(SmokeCheck("smoke", ERROR, "node unreachable", "", str(error)))
    return report

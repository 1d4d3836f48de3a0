"""The ds4 smoke test: one completion through ds4-server on the head, then which transport
the pair really took, from both ranks' logs (the verdict is pure; `smoke_ds4` runs on the
nodes through their runners).

The lines, as ds4 prints them (tests/data/deploy/ds4 holds published ones; its SOURCE names
where each came from):
- `ds4-tp: worker connected, transport=rdma` (rank 0) and `ds4-tp: leader connected,
  transport=rdma gate-timeout=750ms` (rank 1): ds4_tp.c `ds4_tp_create`, the one line that
  names the transport the pair negotiated (`rdma`, `odl` with antirez/ds4#1018, or `tcp`);
  newer builds append ` gate-timeout=...`.
- `tensor parallelism bound: rank 0, 50/50 expert split, rdma transport`: the engine bound
  to the pair (the transport again).
- `ds4-tp: rdma device rocep3s0f0 (port state 4)`, `ds4-tp: odl device 0, stream 30 -> peer
  31`: the device each end opened.
- `tp: --transport rdma but this side has no active device` (or `the peer side`, or
  `--transport odl but ... no OdinLink device`): an explicit transport fails closed, the pair
  does not start. Only `--transport auto` falls back to TCP, and then says `transport=tcp`.
- The OdinLink verbs shim counts the calls it sent over its socket fallback
  (`"fallback_calls":N`); wkljohn's `scripts/check-tp-rdma-logs.sh` rejects a run whose count
  is not 0, and so does this.
- Failures of the gate transport: that script's pattern (`timeout waiting`, `transport
  failed`, `decode ... failed`, `kernel launch failed`, `nan detected`) plus ds4_tp.c's gate
  errors (`rdma completion error`, `peer disconnected`, `odl exchange N timed out`, `big gate
  window barrier failed`, published in antirez/ds4#1024).
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass

from strixwizard.deploy.base import DeployPlan, Progress
from strixwizard.deploy.health import probe_source
from strixwizard.deploy.process import STATE
from strixwizard.deploy.smoke import ERROR, FAIL, PASS, SmokeCheck, SmokeReport
from strixwizard.deploy.stacks.ds4.plan import COORDINATOR_TARGET, WORKER_TARGET, Ds4Plan, log_of, pid_of
from strixwizard.fixing.runner import Runner, Unreachable

#: the verdicts, strongest first
PROVED = "rdma-proved"  # both ends name the RDMA transport asked for (rdma or odl)
FALLBACK = "tcp-fallback"  # RDMA asked, TCP taken (or the provider's socket fallback used)
TCP = "tcp-as-asked"  # TCP asked (the link gave no RDMA path), TCP taken
REFUSED = "refused"  # ds4 failed closed: the asked transport is missing on one side
UNKNOWN = "unknown"  # a log does not say (not connected yet, or the ends disagree)

_CONNECTED = re.compile(r"ds4-tp: (worker|leader) connected, transport=([a-z]+)")
_BOUND = re.compile(r"tensor parallelism bound: rank (\d+), .*?([a-z]+) transport\b")
_RDMA_DEVICE = re.compile(r"ds4-tp: rdma device (\S+) \(port state (\d+)\)")
_ODL_DEVICE = re.compile(r"ds4-tp: odl device (\d+), stream (\d+) -> peer (\d+)")
_REFUSED = re.compile(r"--transport (rdma|odl) but (this|the peer) side has no "
                      r"(?:active device|OdinLink device)")
_PROVIDER_FALLBACK = re.compile(r"\"?fallback_calls\"?\s*[:=]\s*(\d+)")
_ERROR = re.compile(
    r"timeout waiting|transport failed|decode .* failed|kernel (?:launch )?failed|nan detected"
    r"|rdma completion error|peer disconnected|odl exchange \d+ timed out"
    r"|gate window barrier failed|TP batch gate failed|transport marked failed", re.I)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
EVIDENCE_LINES = 8


def _clean(line: str) -> str:
    """A log line as data: stripped, control characters shown as `?`."""
    return _CONTROL.sub("?", line.strip())


@dataclass(frozen=True)
class EndEvidence:
    """What one rank's log says about its transport."""

    transport: str | None  # from `connected, transport=` (else the `bound` line); None: silent
    device: str | None  # `rdma device NAME` or `odl device N`
    refused: str | None  # the fail-closed message, as printed
    provider_fallback: int  # the largest `fallback_calls` count the OdinLink shim reported
    errors: tuple[str, ...]  # gate transport failures, as printed
    lines: tuple[str, ...]  # the transport lines, as printed (for the report)

    @classmethod
    def of(cls, log: str) -> EndEvidence:
        connected = _CONNECTED.findall(log)
        bound = _BOUND.findall(log)
        transport = connected[-1][1] if connected else (bound[-1][1] if bound else None)
        rdma = _RDMA_DEVICE.findall(log)
        odl = _ODL_DEVICE.findall(log)
        device = rdma[-1][0] if rdma else (f"odl_tb5_{odl[-1][0]}" if odl else None)
        refused = next((_clean(line) for line in log.splitlines() if _REFUSED.search(line)), None)
        counts = [int(n) for n in _PROVIDER_FALLBACK.findall(log)]
        lines: list[str] = []
        errors: list[str] = []
        for raw in log.splitlines():
            if (_CONNECTED.search(raw) or _BOUND.search(raw) or _RDMA_DEVICE.search(raw)
                    or _ODL_DEVICE.search(raw) or _REFUSED.search(raw)):
                lines.append(_clean(raw))
            if _ERROR.search(raw) and _clean(raw) not in errors:
                errors.append(_clean(raw))
        return cls(transport, device, refused, max(counts, default=0), tuple(errors),
                   tuple(lines[:EVIDENCE_LINES]))


@dataclass(frozen=True)
class Ds4Verdict:
    kind: str  # PROVED, FALLBACK, TCP, REFUSED or UNKNOWN
    asked: str  # the --transport the plan asked for
    head: EndEvidence
    worker: EndEvidence
    reasons: tuple[str, ...] = ()

    @property
    def errors(self) -> tuple[str, ...]:
        return self.head.errors + self.worker.errors


def judge(asked: str, head_log: str, worker_log: str) -> Ds4Verdict:
    """The pair's transport from the coordinator's (head, rank 0) and the worker's (rank 1)
    logs: RDMA proved on both ends, a fallback to TCP, TCP as asked, refused, or unknown."""
    head, worker = EndEvidence.of(head_log), EndEvidence.of(worker_log)
    ends = (("head (rank 0)", head), ("worker (rank 1)", worker))
    refused = [f"{name}: `{end.refused}`" for name, end in ends if end.refused]
    if refused:
        return Ds4Verdict(REFUSED, asked, head, worker, (
            *refused, f"ds4 fails closed on an explicit --transport {asked} that a side lacks: "
                      "the pair did not start"))
    silent = [name for name, end in ends if end.transport is None]
    if silent:
        return Ds4Verdict(UNKNOWN, asked, head, worker, tuple(
            f"{name}: no `ds4-tp: ... connected, transport=` line: the pair has not connected "
            "(still loading, or it failed before the hello)" for name in silent))
    tcp = [name for name, end in ends if end.transport == "tcp"]
    shim = [f"{name}: the OdinLink provider sent {end.provider_fallback} call(s) over its "
            "socket fallback (`fallback_calls`)" for name, end in ends if end.provider_fallback]
    if asked == "tcp":
        if len(tcp) == 2:
            return Ds4Verdict(TCP, asked, head, worker)
        return Ds4Verdict(UNKNOWN, asked, head, worker, tuple(
            f"{name}: transport={end.transport}, but TCP was asked" for name, end in ends
            if end.transport != "tcp"))
    if tcp or shim:
        return Ds4Verdict(FALLBACK, asked, head, worker, (
            *(f"{name}: `transport=tcp` where --transport {asked} was asked" for name in tcp),
            *shim))
    wrong = [f"{name}: transport={end.transport}, not {asked}" for name, end in ends
             if end.transport != asked]
    if wrong:
        return Ds4Verdict(UNKNOWN, asked, head, worker, tuple(wrong))
    return Ds4Verdict(PROVED, asked, head, worker)


# -- smoke checks ------------------------------------------------------------------------

_OBSERVED = {PROVED: "{asked} on both ranks", FALLBACK: "TCP FALLBACK", TCP: "TCP",
             REFUSED: "REFUSED", UNKNOWN: "unknown"}


def transport_check(verdict: Ds4Verdict, fallback_why: str = "") -> SmokeCheck:
    """The pair's transport as a smoke check: RDMA proved on both ranks passes; TCP passes only
    where TCP was asked (and says it is a fallback); anything else, or a gate failure, fails."""
    asked = verdict.asked
    expected = ("transport=tcp in both ranks' logs" if asked == "tcp"
                else f"transport={asked} in both ranks' logs, no socket fallback")
    evidence = (tuple(f"head (rank 0): {line}" for line in verdict.head.lines)
                + tuple(f"worker (rank 1): {line}" for line in verdict.worker.lines))
    observed = _OBSERVED[verdict.kind].format(asked=asked)
    devices = sorted({d for d in (verdict.head.device, verdict.worker.device) if d})
    if verdict.kind == PROVED and devices:
        observed += f" ({', '.join(devices)})"
    if verdict.kind not in (PROVED, TCP):
        why = {FALLBACK: "ds4 fell back to TCP: ", REFUSED: "ds4 refused the transport: ",
               UNKNOWN: "the logs do not prove a transport: "}[verdict.kind]
        return SmokeCheck("ds4.transport", FAIL, observed, expected,
                          why + "; ".join(verdict.reasons), evidence)
    if verdict.errors:
        return SmokeCheck("ds4.transport", FAIL, f"{observed}, then a gate failure", expected,
                          "the pair connected, then its gate transport failed: "
                          + "; ".join(f"`{line}`" for line in verdict.errors[:3]),
                          evidence + verdict.errors)
    return SmokeCheck("ds4.transport", PASS, observed, expected,
                      fallback_why if verdict.kind == TCP else "", evidence)


# -- on the nodes ----------------------------------------------------------------------------

LOG_TAIL_BYTES = 262144
PROBE_SLICE_S = 20.0  # one probe run stays under the executor's 30 s command limit

#: Run on the head: wait for /health, then one completion through ds4-server's OpenAI API
#: (`/v1/completions`; `deepseek-v4-flash` is one of its model aliases, each serving the loaded
#: GGUF: ds4_help.c "HTTP API"); prints one JSON line. argv: URL, prompt, max_tokens, wait.
HTTP_PROBE = probe_source(r"""url, prompt, n, wait = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
status = wait_for_health(url, float(wait), 0.5)
if status != 200:
    print(json.dumps({"health": status}, allow_nan=False))
    sys.exit(0)
body = json.dumps({"model": "deepseek-v4-flash", "prompt": prompt, "max_tokens": n,
                   "temperature": 0}, allow_nan=False).encode()
request = urllib.request.Request(url + "/v1/completions", body, {"Content-Type": "application/json"})
started = time.monotonic()
with urllib.request.urlopen(request, timeout=300) as r:
    answer = json.load(r)
choices = answer.get("choices") or [{}]
print(json.dumps({"health": 200, "seconds": time.monotonic() - started,
                  "tokens": (answer.get("usage") or {}).get("completion_tokens"),
                  "text": choices[0].get("text", "")}, allow_nan=False))
""")


def probe_argv(plan: Ds4Plan, wait_s: float, prompt: str = "Hello", tokens: int = 8
               ) -> tuple[str, ...]:
    return ("python3", "-c", HTTP_PROBE, plan.api_url, prompt, str(tokens), f"{wait_s:g}")


def judge_completion(plan: Ds4Plan, rc: int, stdout: str, stderr: str) -> SmokeCheck:
    expected = f"{plan.api_url}/health 200, then a completion"
    try:
        answer = json.loads(stdout.strip().splitlines()[-1]) if rc == 0 else None
    except (ValueError, IndexError):
        answer = None
    if not isinstance(answer, dict):
        reason = (stderr or stdout).strip().splitlines()
        return SmokeCheck("ds4.completion", ERROR, "no answer", expected,
                          f"the HTTP probe exited {rc}: {_clean(reason[-1]) if reason else ''}")
    if answer.get("health") != 200:
        return SmokeCheck("ds4.completion", FAIL, f"/health: {_clean(str(answer.get('health')))}",
                          expected, "ds4-server did not become ready; see "
                          f"{log_of(plan.ds4, COORDINATOR_TARGET)} on {plan.env.head}")
    tokens = answer.get("tokens") or 0
    seconds = float(answer.get("seconds") or 0.0)
    return SmokeCheck("ds4.completion", PASS if tokens else FAIL,
                      f"{tokens} tokens in {seconds * 1000:.0f} ms", expected,
                      "" if tokens else "the completion returned no tokens")


def _read_log(runner: Runner, path: str) -> str:
    from strixwizard.deploy.remote import run

    rc, out, _err = run(runner, ("tail", "-c", str(LOG_TAIL_BYTES), path))
    return out if rc == 0 else ""


def _running(runner: Runner, pidfile: str) -> bool:
    from strixwizard.deploy.remote import run

    rc, out, _err = run(runner, ("sh", "-c", STATE, pidfile))
    return rc == 0 and out.strip() == "running"


def smoke_ds4(plan: DeployPlan, runners: dict[str, Runner], say: Progress | None = None
              ) -> SmokeReport:
    """On the head: /health, then one completion (while ds4-server runs, up to the health
    timeout: both ranks load the model first); then both ranks' logs for the transport."""
    from strixwizard.deploy.remote import run

    if not isinstance(plan, Ds4Plan):
        raise TypeError(f"the ds4 smoke test needs a ds4 plan, not {type(plan).__name__}")
    tell = say or (lambda node, message: None)
    report = SmokeReport()
    if not plan.ds4.model:
        report.checks.append(SmokeCheck("ds4.completion", ERROR, "no ds4 started", "a completion",
                                        "pass --model PATH (the GGUF on both nodes) to start the pair"))
        return report
    env, head = plan.env, runners[plan.env.head]
    try:
        deadline = time.monotonic() + plan.ds4.health_timeout_s
        while True:
            left = max(1.0, min(PROBE_SLICE_S, deadline - time.monotonic()))
            tell(env.head, f"waiting for {plan.api_url}/health, then one completion")
            rc, out, err = run(head, probe_argv(plan, left))
            check = judge_completion(plan, rc, out, err)
            if (not check.observed.startswith("/health: ") or time.monotonic() >= deadline
                    or not _running(head, pid_of(plan.ds4, COORDINATOR_TARGET))):
                break
        report.checks.append(check)
        tell(env.head, "reading both ranks' logs")
        head_log = _read_log(head, log_of(plan.ds4, COORDINATOR_TARGET))
        worker_log = _read_log(runners[plan.worker], log_of(plan.ds4, WORKER_TARGET))
        report.checks.append(transport_check(judge(plan.choice.transport, head_log, worker_log),
                                             plan.choice.why))
    except Unreachable as error:
        report.checks.append(SmokeCheck("smoke", ERROR, "node unreachable", "", str(error)))
    return report

"""Which transport a ds4 tensor-parallel pair really took, from both ranks' logs. Pure.

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

import re
from dataclasses import dataclass

from strixwizard.deploy.smoke import FAIL, PASS, SmokeCheck

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

"""A smoke test's verdict, whatever the stack: its checks (each observed against what was
expected, with the evidence) and the overall status and exit code. Each stack runs its own
smoke test (`Stack.smoke`) and reports in these types."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from strixwizard.model import exit_code

PASS, FAIL, ERROR = "pass", "fail", "error"


@dataclass(frozen=True)
class SmokeCheck:
    id: str  # "rccl.transport", "rccl.results", "ray.nodes"
    status: str
    observed: str
    expected: str
    detail: str = ""
    evidence: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "status": self.status, "observed": self.observed,
                "expected": self.expected, "detail": self.detail, "evidence": list(self.evidence)}


@dataclass
class SmokeReport:
    checks: list[SmokeCheck] = field(default_factory=list)

    @property
    def status(self) -> str:
        statuses = {c.status for c in self.checks}
        return ERROR if ERROR in statuses or not statuses else FAIL if FAIL in statuses else PASS

    @property
    def exit_code(self) -> int:
        return exit_code({PASS: True, FAIL: False}.get(self.status))

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "checks": [c.to_json() for c in self.checks]}

"""Run a command on a deployed node through its runner's executor: what the stacks' smoke
tests and the engine use (below both, so neither imports the other back)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from strixwizard.errors import UsageError
from strixwizard.fixing.runner import OpsRunner, Runner, Unreachable
from strixwizard.onnode import ops


def run(runner: Runner, argv: Sequence[str]) -> tuple[int, str, str]:
    """Run argv on a node through its runner's executor (no shell)."""
    if not isinstance(runner, OpsRunner):
        raise UsageError(f"{runner.node}: commands cannot run on {runner.where}")
    answer: dict[str, Any] = runner.op(ops.request("run", argv=list(argv)))
    if not answer.get("ok"):
        raise Unreachable(str(answer.get("error")))
    return int(answer.get("rc", 1)), str(answer.get("stdout", "")), str(answer.get("stderr", ""))

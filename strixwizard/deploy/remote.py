"""Run a command on a deployed node through its runner's executor: what the stacks' smoke
tests and the engine use (below both, so neither imports the other back)."""

from __future__ import annotations

from collections.abc import Sequence

from strixwizard.errors import UsageError
from strixwizard.fixing.runner import OpsRunner, Runner, Unreachable
from strixwizard.node.channel import Run
from strixwizard.node.errors import OpRefused


def run(runner: Runner, argv: Sequence[str]) -> tuple[int, str, str]:
    """Run argv on a node through its runner's executor (no shell)."""
    if not isinstance(runner, OpsRunner):
        raise UsageError(f"{runner.node}: commands cannot run on {runner.where}")
    try:
        done = runner.send(Run(tuple(argv)))
    except OpRefused as refused:
        raise Unreachable(str(refused)) from None
    return done.rc, done.stdout, done.stderr

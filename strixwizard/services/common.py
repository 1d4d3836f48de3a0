"""What every service shares: the question asked before a change, and progress events."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from strixwizard.errors import UsageError


@dataclass(frozen=True)
class Question:
    """Asked before anything changes a node. `text` is the one-line prompt of the CLI;
    the wizard's modal shows `detail` under it."""

    title: str
    text: str
    detail: str = ""
    yes: str = "Yes (y)"


#: Answers a question: True goes ahead. Called from the thread that runs the service.
Confirm = Callable[[Question], bool]


class NotConfirmed(UsageError):
    """The caller said no: nothing was changed."""

    def __init__(self) -> None:
        super().__init__("not confirmed: nothing was changed")


def ask(confirm: Confirm, question: Question) -> None:
    """Go on only if the caller says yes."""
    if not confirm(question):
        raise NotConfirmed()


def always(question: Question) -> bool:
    """The answer of `--yes`."""
    return True


@dataclass(frozen=True)
class NodeEvent:
    """Discovery: a node's collection started, finished or failed ("start", "done", "failed")."""

    node: str
    event: str
    text: str


@dataclass(frozen=True)
class StepEvent:
    """A fix or deploy run says what it does on a node, as it does it."""

    node: str
    message: str


OnNode = Callable[[NodeEvent], None]
OnStep = Callable[[StepEvent], None]


def node_progress(on_event: OnNode | None) -> Callable[[str, str, str], None] | None:
    """The engine's progress(node, event, text) callback, as typed events."""
    if on_event is None:
        return None
    sink = on_event

    def progress(node: str, event: str, text: str) -> None:
        sink(NodeEvent(node, event, text))

    return progress


def step_progress(on_event: OnStep | None) -> Callable[[str, str], None] | None:
    """The engine's say(node, message) callback, as typed events."""
    if on_event is None:
        return None
    sink = on_event

    def say(node: str, message: str) -> None:
        sink(StepEvent(node, message))

    return say

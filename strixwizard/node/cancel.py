"""One cancel mechanism: a `Cancel` stops every program started under it, from any thread.

`cancel.scope(session)` is the session, starting programs that the Cancel remembers; `cancel()`
ends them all at once and refuses new ones (`Cancelled`). A child Cancel
(`Cancel(parent)`) is cancelled with its parent, but cancelling the child leaves
the parent usable: a test run stops its own programs when its stream closes, while
the caller's Cancel (a Ctrl-C handler, a wizard's Stop button) stops every run.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, TypeVar

from strixwizard.node.errors import Cancelled

if TYPE_CHECKING:
    from strixwizard.node.process import Process
    from strixwizard.node.session import ProgramRunner

T = TypeVar("T")


class Cancel:
    def __init__(self, parent: Cancel | None = None) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._processes: list[Process] = []
        self._children: list[Cancel] = []
        if parent is not None:
            parent._adopt(self)

    def _adopt(self, child: Cancel) -> None:
        if self._remember(self._children, child):
            child.cancel()

    def _remember(self, into: list[T], item: T) -> bool:
        """Add `item` under the lock; True when this Cancel is already cancelled."""
        with self._lock:
            into.append(item)
            return self._event.is_set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def check(self, what: str = "the run") -> None:
        """Raise `Cancelled` if this Cancel was cancelled."""
        if self._event.is_set():
            raise Cancelled(f"{what} was cancelled")

    def add(self, process: Process) -> None:
        """Remember a program; one added after `cancel()` is stopped at once."""
        if self._remember(self._processes, process):
            process.stop()

    def cancel(self) -> None:
        """Stop every program started under this Cancel and its children; refuse new ones."""
        self._event.set()
        with self._lock:
            live = [p for p in self._processes if not p.ended]
            children = list(self._children)
        for process in live:
            process.ask_stop()  # all at once; then each is waited for (bounded) and released
        for process in live:
            process.stop()
        for child in children:
            child.cancel()

    def scope(self, runner: ProgramRunner) -> ProgramRunner:
        """`runner` (any node session), with every program it starts remembered by this Cancel."""
        return ScopedRunner(runner, self)

    def wait(self, timeout: float) -> bool:
        return self._event.wait(timeout)


class ScopedRunner:
    """Starts programs through `inner` and registers them with a Cancel; refuses once cancelled."""

    def __init__(self, inner: ProgramRunner, cancel: Cancel) -> None:
        self.inner = inner
        self.cancel = cancel
        self.name = inner.name
        self.python = inner.python

    def start(self, argv: Sequence[str], limit_s: float, label: str = "") -> Process:
        self.cancel.check(f"{self.name}: the run")
        process = self.inner.start(argv, limit_s, label)
        self.cancel.add(process)
        return process

    def close(self) -> None:
        self.inner.close()

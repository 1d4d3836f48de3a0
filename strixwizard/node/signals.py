"""SIGINT, SIGTERM and SIGHUP: a change in flight ends at a step boundary, never mid-way.

`installed()` (the command line's `main` runs inside it) makes the three signals mean, outside a
`deferred()` section, "stop now" (`Interrupted`, raised where the program is), and inside one
"stop at the next step boundary": the first signal is only recorded (`requested()`), the
engine finishes the step in flight, ends the run as cancelled and makes the link's ends
consistent; a second signal, or the step in flight not ending within `GRACE_S`, raises
`Interrupted` at once (the engine still records and prints the state). Outside `installed()`
(the wizard, tests calling engines) nothing changes: `requested()` is None.

Exit statuses follow the shell's rule, 128 + the signal's number: 130 (SIGINT), 143
(SIGTERM), 129 (SIGHUP).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

#: The signals that stop a run.
STOPPING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
#: How long the step in flight may take after the first signal before the run stops at once.
GRACE_S = 60


class Interrupted(BaseException):
    """Stop at once (a second signal, or the grace period ran out). A BaseException, as
    KeyboardInterrupt: nothing that catches Exception swallows it."""

    def __init__(self, signum: int, why: str = "") -> None:
        self.signum = signum
        self.why = why or f"{name(signum)} received"
        super().__init__(self.why)


def name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def exit_status(signum: int) -> int:
    return 128 + signum


class _State:
    def __init__(self) -> None:
        self.installed = False
        self.depth = 0  # nesting of deferred() sections
        self.first: int | None = None  # the signal that asked for a stop
        self.count = 0


_state = _State()


def _on_signal(signum: int, frame: FrameType | None) -> None:
    _state.count += 1
    if _state.first is None:
        _state.first = signum
    if _state.depth > 0 and _state.count == 1:
        signal.alarm(GRACE_S)  # the step in flight is bounded
        return
    signal.alarm(0)
    why = (f"a second signal ({name(signum)}) after {name(_state.first)}" if _state.count > 1
           else f"{name(signum)} received")
    raise Interrupted(_state.first, why)


def _on_alarm(signum: int, frame: FrameType | None) -> None:
    first = _state.first if _state.first is not None else signal.SIGTERM
    raise Interrupted(first, f"the step in flight did not end within {GRACE_S} s of "
                             f"{name(first)}")


@contextlib.contextmanager
def installed() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP taken over for the block (main thread only; elsewhere a
    no-op), the previous handlers and a clean state restored after it: a program that runs
    `main()` in-process (tests) gets its own handlers back."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {signum: signal.getsignal(signum) for signum in (*STOPPING, signal.SIGALRM)}
    for signum in STOPPING:
        signal.signal(signum, _on_signal)
    signal.signal(signal.SIGALRM, _on_alarm)
    _state.installed = True
    reset()
    try:
        yield
    finally:
        signal.alarm(0)
        _state.installed = False
        reset()
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def reset() -> None:
    """Forget a recorded signal (a new run in the same process, tests)."""
    _state.first, _state.count = None, 0
    if _state.installed:
        signal.alarm(0)


def requested() -> int | None:
    """The signal that asked this process to stop, or None."""
    return _state.first


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """A section where the first signal only asks for a stop at the next step boundary."""
    _state.depth += 1
    try:
        yield
    finally:
        _state.depth -= 1
        if _state.depth == 0 and _state.installed:
            signal.alarm(0)

"""A supervised program on a node: its output so far, its exit status, and a way to stop it.

Every program a session starts runs under `supervisor.py`, which ends it when its
time limit passes or when its stdin closes, so `stop()` (closing stdin) ends it on
every exit path of the controller, and the controller never signals anything by name.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from strixwizard.onnode import supervisor

MAX_CAPTURE = 16 * 1024 * 1024
STOP_GRACE_S = 4.0
NOT_INSTALLED, STOPPED, TIMED_OUT = 127, 125, 124
SUPERVISOR_SOURCE = Path(supervisor.__file__).read_text(encoding="utf-8")


class Process:
    """Fed by the session's reader threads; read by the controller from any thread."""

    def __init__(self, host: str, label: str, close_stdin: Callable[[], None],
                 release: Callable[[], None], program: str | None = None) -> None:
        self.host = host
        self.label = label
        #: What runs: for `sh -c '... exec ray ...'` this is `ray` (the one a 127 is about).
        self.program = program or label
        self._close_stdin = close_stdin
        self._release = release
        self._cond = threading.Condition()
        self._out = bytearray()
        self._err = bytearray()
        self._status: int | None = None
        self._ended = False
        self._asked = False
        self._stopped = False
        self.started = time.monotonic()

    # -- fed by reader threads --------------------------------------------
    def _feed(self, which: bytearray, data: bytes) -> None:
        with self._cond:
            if len(which) < MAX_CAPTURE:
                which.extend(data[: MAX_CAPTURE - len(which)])
            self._cond.notify_all()

    def _end(self, status: int | None) -> None:
        with self._cond:
            self._status, self._ended = status, True
            self._cond.notify_all()

    # -- read by the controller -------------------------------------------
    @property
    def stdout(self) -> str:
        with self._cond:
            return self._out.decode("utf-8", "replace")

    @property
    def stderr(self) -> str:
        """The program's stderr, without the supervisor's own lines."""
        with self._cond:
            text = self._err.decode("utf-8", "replace")
        return "\n".join(line for line in text.splitlines() if not line.startswith(supervisor.MARK))

    @property
    def supervisor_notes(self) -> list[str]:
        with self._cond:
            text = self._err.decode("utf-8", "replace")
        return [line[len(supervisor.MARK):].strip() for line in text.splitlines()
                if line.startswith(supervisor.MARK)]

    @property
    def ended(self) -> bool:
        with self._cond:
            return self._ended

    @property
    def status(self) -> int | None:
        """Exit status once ended; None while running or when the connection was lost."""
        with self._cond:
            return self._status

    @property
    def not_found(self) -> bool:
        """Ended with 127: `program` is not installed on the node."""
        return self.status == NOT_INSTALLED

    @property
    def lost(self) -> bool:
        """Ended without an exit status: the node or the connection went away."""
        with self._cond:
            return self._ended and self._status is None and not (self._stopped or self._asked)

    def wait_for(self, predicate: Callable[[str], bool], timeout: float) -> bool:
        """Wait until `predicate(stdout)` holds; False if the program ended or time ran out first."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                if predicate(self._out.decode("utf-8", "replace")):
                    return True
                left = deadline - time.monotonic()
                if self._ended or left <= 0:
                    return False
                self._cond.wait(min(left, 0.2))

    def wait(self, timeout: float) -> bool:
        """Wait for the end; True if it ended within `timeout`."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not self._ended:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(min(left, 0.2))
            return True

    def ask_stop(self) -> None:
        """Ask the supervisor to end the program (close its stdin) without waiting: a Cancel asks
        every program first, so they all end at once. Idempotent."""
        with self._cond:
            if self._asked or self._ended:
                return
            self._asked = True
        self._close_stdin()

    def stop(self) -> None:
        """Ask the supervisor to end the program, wait a little, then drop the channel.
        Idempotent; safe on every exit path."""
        with self._cond:
            first = not self._stopped
            self._stopped = True
        if not first:
            return
        try:
            if not self.ended:
                self.ask_stop()
                self.wait(STOP_GRACE_S)
        finally:
            self._release()


#: How long the end of a program waits for its output readers to drain what it printed.
DRAIN_TIMEOUT_S = 2.0


def _pump(read: Callable[[int], bytes], sink: Callable[[bytes], None]) -> None:
    while True:
        try:
            data = read(65536)
        except Exception:  # a dead channel or pipe ends the stream
            return
        if not data:
            return
        sink(data)


def spawn(target: Callable[[], None], name: str) -> threading.Thread:
    thread = threading.Thread(target=target, name=name, daemon=True)
    thread.start()
    return thread


def start_readers(process: Process, out: Callable[[int], bytes], err: Callable[[int], bytes]
                  ) -> list[threading.Thread]:
    """Threads that feed the program's stdout and stderr into `process` until they end."""
    return [
        spawn(lambda: _pump(out, lambda d: process._feed(process._out, d)), f"out-{process.host}"),
        spawn(lambda: _pump(err, lambda d: process._feed(process._err, d)), f"err-{process.host}"),
    ]


def drained(readers: Sequence[threading.Thread]) -> None:
    """Wait (bounded) until the readers have taken in everything the program wrote: a program
    must never be seen as ended while its last output is still in a pipe or channel buffer."""
    deadline = time.monotonic() + DRAIN_TIMEOUT_S
    for reader in readers:
        reader.join(max(0.0, deadline - time.monotonic()))


def supervised_argv(python: str, argv: Sequence[str], limit_s: float) -> list[str]:
    """The argv that runs `argv` under the supervisor, sent as `python -c SOURCE`."""
    return [python, "-c", SUPERVISOR_SOURCE, json.dumps(list(argv), allow_nan=False), f"{limit_s:g}"]

"""Run test programs on nodes: over SSH (paramiko) or on this machine, always supervised.

Every program runs under `supervisor.py` (sent as `python3 -c`), which ends it
when its time limit passes or when its stdin closes. `Process.stop()` closes
stdin, so the program is stopped on every exit path of the controller:
normal end, timeout, exception, Ctrl-C, and even the controller being killed
(the SSH channel, hence stdin, goes away with it). The controller never
signals remote processes by name.

SSH connections reuse `strixwizard.probe.ssh.connect` (host-key policy,
timeouts, error messages); one connection per node, one channel per program.
"""

from __future__ import annotations

import contextlib
import json
import shlex
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from strixwizard.live import supervisor

if TYPE_CHECKING:
    import paramiko

    from strixwizard.probe.ssh import SshTarget

SUPERVISOR_SOURCE = Path(supervisor.__file__).read_text(encoding="utf-8")
MAX_CAPTURE = 16 * 1024 * 1024
STOP_GRACE_S = 4.0
NOT_INSTALLED, STOPPED, TIMED_OUT = 127, 125, 124


class HostError(Exception):
    """The node could not run the program (unreachable, connection refused); shown as is."""


class Process:
    """A supervised program: its output so far, its exit status, and a way to stop it."""

    def __init__(self, host: str, label: str, close_stdin: Callable[[], None],
                 release: Callable[[], None]) -> None:
        self.host = host
        self.label = label
        self._close_stdin = close_stdin
        self._release = release
        self._cond = threading.Condition()
        self._out = bytearray()
        self._err = bytearray()
        self._status: int | None = None
        self._ended = False
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
    def lost(self) -> bool:
        """Ended without an exit status: the node or the connection went away."""
        with self._cond:
            return self._ended and self._status is None and not self._stopped

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
                self._close_stdin()
                self.wait(STOP_GRACE_S)
        finally:
            self._release()


class Host(Protocol):
    name: str
    python: str

    def start(self, argv: Sequence[str], limit_s: float, label: str = "") -> Process: ...

    def close(self) -> None: ...


def supervised_argv(python: str, argv: Sequence[str], limit_s: float) -> list[str]:
    return [python, "-c", SUPERVISOR_SOURCE, json.dumps(list(argv)), f"{limit_s:g}"]


def _pump(read: Callable[[int], bytes], sink: Callable[[bytes], None]) -> None:
    while True:
        try:
            data = read(65536)
        except Exception:  # a dead channel or pipe ends the stream
            return
        if not data:
            return
        sink(data)


def _thread(target: Callable[[], None], name: str) -> threading.Thread:
    thread = threading.Thread(target=target, name=name, daemon=True)
    thread.start()
    return thread


#: How long the end of a program waits for its output readers to drain what it printed.
DRAIN_TIMEOUT_S = 2.0


def _drained(readers: Sequence[threading.Thread]) -> None:
    """Wait (bounded) until the readers have taken in everything the program wrote: a program
    must never be seen as ended while its last output is still in a pipe or channel buffer."""
    deadline = time.monotonic() + DRAIN_TIMEOUT_S
    for reader in readers:
        reader.join(max(0.0, deadline - time.monotonic()))


class LocalHost:
    """This machine (the demo's loopback test, and unit tests)."""

    def __init__(self, name: str = "localhost", python: str = sys.executable) -> None:
        self.name = name
        self.python = python

    def start(self, argv: Sequence[str], limit_s: float, label: str = "") -> Process:
        popen = subprocess.Popen(
            supervised_argv(self.python, argv, limit_s),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        stdin, stdout, stderr = popen.stdin, popen.stdout, popen.stderr
        assert stdin is not None and stdout is not None and stderr is not None

        def close_stdin() -> None:
            with contextlib.suppress(OSError):
                stdin.close()

        def release() -> None:
            close_stdin()
            if popen.poll() is None:
                popen.kill()  # our own child, by its Popen handle
            popen.wait(timeout=5)

        process = Process(self.name, label or argv[0], close_stdin, release)
        readers = _start_readers(process, stdout.read1, stderr.read1)  # type: ignore[attr-defined]

        def reap() -> None:
            status = popen.wait()
            _drained(readers)
            process._end(status)

        _thread(reap, f"wait-{self.name}")
        return process

    def close(self) -> None:
        pass


def _start_readers(process: Process, out: Callable[[int], bytes], err: Callable[[int], bytes]
                   ) -> list[threading.Thread]:
    return [
        _thread(lambda: _pump(out, lambda d: process._feed(process._out, d)), f"out-{process.host}"),
        _thread(lambda: _pump(err, lambda d: process._feed(process._err, d)), f"err-{process.host}"),
    ]


class SshHost:
    """A node reached over SSH; one connection, opened on first use, one channel per program."""

    python = "python3"

    def __init__(self, target: SshTarget) -> None:
        self.target = target
        self.name = target.name
        self._client: paramiko.SSHClient | None = None
        self._lock = threading.Lock()

    def _connection(self) -> paramiko.SSHClient:
        from strixwizard.probe.ssh import SshError, connect

        with self._lock:
            if self._client is None or not _alive(self._client):
                try:
                    self._client = connect(self.target)
                except SshError as error:
                    raise HostError(str(error)) from None
            return self._client

    def start(self, argv: Sequence[str], limit_s: float, label: str = "") -> Process:
        import paramiko

        client = self._connection()
        transport = client.get_transport()
        if transport is None:
            raise HostError(f"{self.name}: the SSH connection is gone")
        try:
            channel = transport.open_session(timeout=self.target.connect_timeout)
            channel.exec_command(shlex.join(supervised_argv(self.python, argv, limit_s)))
        except (paramiko.SSHException, OSError, EOFError) as error:
            raise HostError(f"{self.name}: cannot start {argv[0]} over SSH ({error})") from None

        def close_stdin() -> None:
            with contextlib.suppress(OSError, EOFError, paramiko.SSHException):
                channel.shutdown_write()

        process = Process(self.name, label or argv[0], close_stdin, channel.close)
        readers = _start_readers(process, channel.recv, channel.recv_stderr)

        def reap() -> None:
            status = channel.recv_exit_status()  # -1: closed without a status (node gone)
            _drained(readers)
            process._end(None if status == -1 else status)

        _thread(reap, f"wait-{self.name}")
        return process

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None


def _alive(client: paramiko.SSHClient) -> bool:
    transport = client.get_transport()
    return transport is not None and transport.is_active()


def output_of(text: str, line_start: str) -> list[dict[str, object]]:
    """The JSON-line events a program printed whose text starts with `line_start`."""
    events = []
    for line in text.splitlines():
        if line.startswith(line_start):
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, dict):
                events.append(value)
    return events


def stop_all(processes: Sequence[Process | None]) -> None:
    for process in processes:
        if process is not None:
            process.stop()


__all__ = ["Host", "HostError", "LocalHost", "Process", "SshHost", "stop_all"]

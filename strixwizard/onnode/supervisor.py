"""Runs one test program on a node and guarantees it ends (standard library only, Python 3.8+).

Sent as `python3 -c SOURCE ARGV_JSON SECONDS` over SSH (or run locally the
same way). It starts the program in its own session, with its stdout and
stderr going straight to ours, and ends it (SIGTERM, then SIGKILL, to the
process group it created) when any of these happens:

- our stdin reaches end of file: the controller asked to stop, or the SSH
  channel went away (the controller died, was interrupted, lost the link);
- SECONDS have passed;
- it is itself told to end (SIGINT, SIGTERM, SIGHUP): Ctrl-C in a terminal reaches the
  whole foreground process group, this supervisor among the first, while the program, in its
  own session, would never hear it and outlive the run.

Exit status: the program's own, 124 after the time limit, 125 when stopped
through stdin, 128+N after signal N, 127 when the program is not installed. A line starting with
`strixwizard-supervisor:` on stderr says what happened; it is never part of
the program's output.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time

MARK = "strixwizard-supervisor:"


def _say(text: str) -> None:
    sys.stderr.write(f"{MARK} {text}\n")
    sys.stderr.flush()


def _stop(child: subprocess.Popen[bytes], grace: float = 1.5) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(child.pid, sig)  # the group this supervisor created for the child
        except ProcessLookupError:
            return
        try:
            child.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


class _Signalled(Exception):
    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _raise_signalled(signum: int, frame: object) -> None:
    raise _Signalled(signum)


ENDING_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def main(argv_json: str, seconds: str) -> int:
    argv = json.loads(argv_json)
    limit = float(seconds)
    for sig in ENDING_SIGNALS:  # from here on, being told to end ends the program first
        signal.signal(sig, _raise_signalled)
    child = None
    try:
        try:
            child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, start_new_session=True)
        except FileNotFoundError:
            _say(f"not installed: {argv[0]}")
            return 127
        except PermissionError:
            _say(f"not executable: {argv[0]}")
            return 126
        return _watch(child, argv, limit)
    except _Signalled as signalled:
        for sig in ENDING_SIGNALS:
            signal.signal(sig, signal.SIG_IGN)  # a second Ctrl-C must not cut the cleanup short
        if child is not None:
            _stop(child)
            _say(f"{signal.Signals(signalled.signum).name} received; stopped {argv[0]}")
        return 128 + signalled.signum
    finally:
        if child is not None and child.poll() is None:  # any other way out: never leave it behind
            _stop(child)


def _watch(child: subprocess.Popen[bytes], argv: list[str], limit: float) -> int:
    _say(f"started {argv[0]} pid {child.pid}")
    deadline = time.monotonic() + limit
    watching = True
    while True:
        status = child.poll()
        if status is not None:
            return status if status >= 0 else 128 - status
        if time.monotonic() > deadline:
            _stop(child)
            _say(f"time limit of {limit:g} s reached; stopped {argv[0]}")
            return 124
        if not watching:
            time.sleep(0.05)
            continue
        ready, _, _ = select.select([0], [], [], 0.05)
        if ready:
            try:
                data = os.read(0, 4096)
            except OSError:
                data = b""
            if not data:
                _stop(child)
                _say(f"stop requested; stopped {argv[0]}")
                return 125


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))

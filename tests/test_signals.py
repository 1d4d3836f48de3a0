"""`strixwizard/node/signals.py` in this process, with real signals sent to it: outside a
deferred section a signal stops at once; inside, the first is only recorded, a second (or the
grace period running out) stops at once; the previous handlers come back afterwards."""

from __future__ import annotations

import os
import signal
import time

import pytest

from strixwizard.node import signals


def _send(signum: int) -> None:
    os.kill(os.getpid(), signum)
    time.sleep(0.05)  # Python runs the handler at the next bytecode boundary


def test_outside_a_deferred_section_a_signal_stops_at_once() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with signals.installed():
        with pytest.raises(signals.Interrupted) as stopped:
            _send(signal.SIGTERM)
        assert stopped.value.signum == signal.SIGTERM and signals.exit_status(15) == 143
    assert signal.getsignal(signal.SIGTERM) is before and signals.requested() is None


def test_inside_the_first_signal_is_recorded_and_a_second_stops_at_once() -> None:
    with signals.installed(), signals.deferred():
        _send(signal.SIGHUP)
        assert signals.requested() == signal.SIGHUP  # the step in flight goes on
        with pytest.raises(signals.Interrupted) as stopped:
            _send(signal.SIGINT)
        assert stopped.value.signum == signal.SIGHUP
        assert "a second signal (SIGINT) after SIGHUP" in stopped.value.why


def test_the_step_in_flight_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(signals, "GRACE_S", 1)
    with signals.installed(), signals.deferred():
        _send(signal.SIGTERM)
        with pytest.raises(signals.Interrupted) as stopped:
            time.sleep(5)  # a step that does not end
        assert "did not end within 1 s of SIGTERM" in stopped.value.why


def test_without_installed_nothing_changes() -> None:
    with signals.deferred():
        assert signals.requested() is None

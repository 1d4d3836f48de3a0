"""Locked-memory limit (RLIMIT_MEMLOCK) from /proc/self/limits.

`ulimit -l` is a shell builtin and commands are argv-only, so the limit is
read from /proc/self/limits. Note whose limit that is: the process that read
it, i.e. the collector (over SSH: a non-interactive session of the SSH user,
with pam_limits applied; locally: the `strixwizard` process). Services started
by systemd or containers get their own limits (`LimitMEMLOCK=`,
`--ulimit memlock=-1`); this is the login-session view.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from strixwizard.facts.outputs import file_output, read_output
from strixwizard.probe import Probe


@dataclass(frozen=True)
class Memlock:
    """The locked-memory limit (RLIMIT_MEMLOCK) a login gets."""

    soft: int | None  # bytes; None = unlimited
    hard: int | None

    @property
    def unlimited(self) -> bool:
        return self.soft is None


def _value(word: str) -> int | None:
    return None if word == "unlimited" else int(word)


def parse_limits_memlock(text: str) -> Memlock | None:
    for line in text.splitlines():
        if line.startswith("Max locked memory"):
            words = re.split(r"\s{2,}", line.strip())
            if len(words) >= 3:
                try:
                    return Memlock(_value(words[1]), _value(words[2]))
                except ValueError:
                    return None
    return None


LIMITS = file_output("limits", "/proc/self/limits", parse_limits_memlock)


def memlock(probe: Probe) -> Memlock | None:
    return read_output(probe, LIMITS)

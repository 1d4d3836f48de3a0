"""Read the question out of an SSH refusal: which host offered which unknown key.

The SSH probe refuses an unknown host key with a message naming the key's
type and SHA256 fingerprint (strixwizard/probe/ssh.py). The wizard shows that
fingerprint and asks before trusting it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_UNKNOWN = re.compile(
    r"unknown host key for (?P<host>\S+): (?P<type>\S+) (?P<fingerprint>SHA256:[A-Za-z0-9+/]+)"
)
_CHANGED = re.compile(r"host key for (?P<host>\S+) CHANGED")


@dataclass(frozen=True)
class UnknownHostKey:
    node: str
    host: str  # as known_hosts names it: "10.0.0.11" or "[10.0.0.11]:2222"
    key_type: str
    fingerprint: str


def unknown_host_key(node: str, error: str | None) -> UnknownHostKey | None:
    match = _UNKNOWN.search(error or "")
    if match is None:
        return None
    return UnknownHostKey(node, match["host"], match["type"], match["fingerprint"])


def changed_host_key(error: str | None) -> bool:
    return _CHANGED.search(error or "") is not None

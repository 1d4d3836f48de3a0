"""Read the question out of an SSH refusal: which host offered which unknown key.

The SSH session refuses an unknown host key with a message naming the key's
type and SHA256 fingerprint (strixwizard/node/ssh.py). The wizard shows that
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


_CLI_HINT = re.compile(r"; if that is the node's key, trust it with --trust-new-hosts.*$", re.DOTALL)


def for_the_wizard(error: str) -> str:
    """An SSH refusal as the wizard says it: an unknown key is offered for the user to trust
    in a dialog (s on the Site step), so the command line's flag is never suggested."""
    if _UNKNOWN.search(error) is None:
        return error
    from strixwizard.tui.steps import keys

    return _CLI_HINT.sub(f"; the wizard shows it for you to trust or refuse ({keys('site', 's')})",
                         error)

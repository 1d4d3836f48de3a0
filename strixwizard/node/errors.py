"""The one error hierarchy of the node seam; every message is the reason shown to the user.

    NodeError
    ├── Unreachable          the node cannot be used (any more); engines mark it so
    │   ├── ConnectFailed    no connection: refused, timed out, no route, bad address
    │   ├── HostKeyError     the host key was not accepted
    │   │   ├── UnknownHostKey   not known and not trusted (carries its fingerprint)
    │   │   └── ChangedHostKey   known, and now different: always refused
    │   ├── AuthFailed       the node refused the key
    │   │   └── PassphraseNeeded the key file is encrypted and no passphrase was given
    │   ├── ConnectionLost   the connection or the session ended mid-way
    │   ├── DeadlineExceeded the work did not finish within its deadline
    │   ├── RuntimeMissing   the node has no python3 for the collector or the step runner
    │   └── CollectionFailed the collector ran but gave no usable snapshot
    ├── OpRefused            the node answered an operation of the ops channel with a failure
    │   └── NodeLockHeld     the lock asked for is held (carries the holder's record)
    ├── ProgramNotFound      a program the node was asked to run is not installed
    ├── SudoRefused          `sudo -n` refused the login user: a usage error (exit 2)
    └── Cancelled            the run was cancelled before this could start
"""

from __future__ import annotations

from strixwizard.errors import UsageError


class NodeError(Exception):
    """Something went wrong between strixwizard and a node."""


class Unreachable(NodeError):
    """The node cannot be reached or used; the message says since when and why."""


class ConnectFailed(Unreachable):
    pass


class HostKeyError(Unreachable):
    pass


class UnknownHostKey(HostKeyError):
    """An unknown host key was refused; carries what the user needs to decide."""

    def __init__(self, message: str, host: str, key_type: str, key_fingerprint: str) -> None:
        super().__init__(message)
        self.host = host
        self.key_type = key_type
        self.fingerprint = key_fingerprint


class ChangedHostKey(HostKeyError):
    pass


class AuthFailed(Unreachable):
    pass


class PassphraseNeeded(AuthFailed):
    pass


class ConnectionLost(Unreachable):
    pass


class DeadlineExceeded(Unreachable):
    pass


class RuntimeMissing(Unreachable):
    pass


class CollectionFailed(Unreachable):
    pass


class OpRefused(NodeError):
    """The node did not do what the ops channel asked (`node/channel.py` `answer_of`); the
    node is as it was, and the channel still answers."""


class NodeLockHeld(OpRefused):
    """The lock file is held by another process; `holder` is its record, as the node read it."""

    def __init__(self, message: str, holder: str) -> None:
        super().__init__(message)
        self.holder = holder


class ProgramNotFound(NodeError):
    """`program` is what was missing: for `sh -c '... exec ray ...'` it is `ray`, not `sh`."""

    def __init__(self, message: str, program: str) -> None:
        super().__init__(message)
        self.program = program


class SudoRefused(NodeError, UsageError):
    """`sudo -n` would not run commands as root for the node's login user (a password is
    required, or no rule lets it). Found by the first command on a connection, before anything
    ran as root; the site's setup is wrong, not the node's state, so the run stops (exit 2)
    instead of judging the node unreachable. The message names the node, the user and the
    sudoers rule that cures it."""


class Cancelled(NodeError):
    pass

"""The node session over SSH (paramiko): one connection per node, opened on first use.

- Host keys are verified against a known_hosts file. An unknown key is refused with
  its fingerprint unless the user trusts new hosts explicitly or confirmed exactly
  that fingerprint; a changed key is always refused. No key material is ever logged.
- `collect`: the collector's source (`onnode/collector.py`, standard library only) goes
  on stdin to `python3 -`, with the spec appended; its stdout is a snapshot `.tar.gz`,
  read until the channel's end of file and exit status, the deadline the only bound.
- `ops`: `ops.py`'s source goes to `python3 -c BOOTSTRAP`, then one JSON line each way.
- `start`: a program under the supervisor, one channel per program.
Every remote command string comes from `command.remote_command` (each piece quoted). On a
`become: sudo` node the step runner and the programs run as `sudo -n -- ARGV`; the collector
runs as the login user and sends through `sudo -n` only the reads declared `root=True`
(facts/outputs.py). The first command of each connection asks `sudo -n` to run python3 (what
all the work as root runs): a refusal stops the run with `SudoRefused` (exit 2) before
anything ran as root.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import re
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import paramiko

from strixwizard.become import BECOME_PREFIX
from strixwizard.node.channel import OpsChannel, Ping, answer_of
from strixwizard.node.command import program_name, remote_command
from strixwizard.node.errors import (
    AuthFailed,
    ChangedHostKey,
    CollectionFailed,
    ConnectFailed,
    ConnectionLost,
    DeadlineExceeded,
    NodeError,
    OpRefused,
    PassphraseNeeded,
    RuntimeMissing,
    SudoRefused,
    UnknownHostKey,
    Unreachable,
)
from strixwizard.node.log import quiet_paramiko
from strixwizard.node.process import Process, drained, spawn, start_readers, supervised_argv
from strixwizard.node.session import Spec
from strixwizard.node.target import SshTarget
from strixwizard.probe.snapshot import SnapshotError, SnapshotProbe

quiet_paramiko()

MAX_OUTPUT_BYTES = 256 * 1024 * 1024
#: Longest one read waits before the deadline is looked at again.
READ_SLICE_S = 0.5
OPS_BOOTSTRAP = (
    "import sys\n"
    "n = int(sys.stdin.readline())\n"
    "g = {'__name__': 'strixwizard_ops'}\n"
    "exec(compile(sys.stdin.read(n), 'strixwizard_ops', 'exec'), g)\n"
    "g['serve']()\n"
)
_CHANNEL_ERRORS = (OSError, paramiko.SSHException, EOFError)
#: The first command on a `become: sudo` connection: the program every remote command runs
#: (collector, step runner, supervisor), so a sudoers rule scoped to python3 passes it exactly
#: when the work would.
SUDO_PROBE = ("python3", "-c", "pass")
#: sudo's own words for a program it did not find on its secure_path.
_SUDO_NOT_FOUND = re.compile(r"^sudo: (?P<name>\S+): command not found$")
#: A user name that may stand as it is in a sudoers line and a shell's single quotes.
_PLAIN_USER = re.compile(r"[A-Za-z0-9._][A-Za-z0-9._-]{0,31}")


def fingerprint(key: paramiko.PKey) -> str:
    """The SHA256 fingerprint as OpenSSH prints it: `SHA256:base64-without-padding`."""
    digest = hashlib.sha256(key.asbytes()).digest()
    return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")


def _known_hosts_name(host: str, port: int) -> str:
    return host if port == 22 else f"[{host}]:{port}"


class _RefuseUnknown(paramiko.MissingHostKeyPolicy):
    def __init__(self, target: SshTarget) -> None:
        self.target = target

    def missing_host_key(self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey) -> None:
        t = self.target
        offered = fingerprint(key)
        if t.trust_fingerprint is not None and offered != t.trust_fingerprint:
            raise UnknownHostKey(
                f"host key for {hostname} is {key.get_name()} {offered}, not the "
                f"{t.trust_fingerprint} you confirmed: refused",
                hostname, key.get_name(), offered,
            )
        if t.trust_new_hosts or t.trust_fingerprint is not None:
            client.get_host_keys().add(hostname, key.get_name(), key)
            t.known_hosts.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            with open(t.known_hosts, "a", encoding="ascii") as handle:
                handle.write(f"{hostname} {key.get_name()} {key.get_base64()}\n")
            return
        raise UnknownHostKey(
            f"unknown host key for {hostname}: {key.get_name()} {offered}; "
            f"if that is the node's key, trust it with --trust-new-hosts (it is added to "
            f"{t.known_hosts}), or add it yourself: ssh-keyscan -p {t.port} {t.host} >> {t.known_hosts}",
            hostname, key.get_name(), offered,
        )


def _key_problem(key_file: str) -> str | None:
    """Why a key file cannot be used, found before any connection is made; None if it can.
    A key others may read or write is refused, as OpenSSH refuses it."""
    path = Path(key_file).expanduser()
    try:
        with open(path, "rb"):
            mode = path.stat().st_mode & 0o777
    except OSError as error:
        return f"cannot read key {key_file}: {error.strerror or error}"
    if mode & 0o077:
        return (f"private key {path} has permissions {mode:04o}: others than its owner can "
                f"read it, and OpenSSH refuses such a key; fix it with `chmod 600 {path}`")
    return None


def open_client(target: SshTarget) -> paramiko.SSHClient:
    """An authenticated SSH client for `target`, host key verified; raises `Unreachable`."""
    if target.key_file is not None:
        problem = _key_problem(target.key_file)
        if problem:
            raise AuthFailed(problem)
    client = paramiko.SSHClient()
    if target.known_hosts.exists():
        try:
            client.load_host_keys(str(target.known_hosts))
        except (OSError, paramiko.SSHException) as error:
            raise ConnectFailed(f"cannot read known_hosts {target.known_hosts}: {error}") from None
    client.set_missing_host_key_policy(_RefuseUnknown(target))
    try:
        client.connect(
            target.host,
            port=target.port,
            username=target.user,
            key_filename=target.key_file,
            timeout=target.connect_timeout,
            banner_timeout=target.connect_timeout,
            auth_timeout=target.connect_timeout,
            allow_agent=False,
            look_for_keys=target.key_file is None,
        )
    except BaseException as error:
        client.close()
        translated = None if isinstance(error, NodeError) else _connect_error(target, error)
        if translated is None:
            raise
        raise translated from None
    return client


def _connect_error(target: SshTarget, error: BaseException) -> NodeError | None:
    """What a failed `connect` means for the user, or None for an error to pass on as it is."""
    def key(default: str) -> str:
        return f"key {target.key_file}" if target.key_file else default

    if isinstance(error, paramiko.BadHostKeyException):
        return ChangedHostKey(
            f"host key for {target.host} CHANGED: it now offers {fingerprint(error.key)}, "
            f"known_hosts has {fingerprint(error.expected_key)}. Refused: this may be an attack. "
            f"If the node was reinstalled, remove the old key: ssh-keygen -R "
            f"{_known_hosts_name(target.host, target.port)} -f {target.known_hosts}"
        )
    if isinstance(error, paramiko.PasswordRequiredException):
        return PassphraseNeeded(
            f"{key('the default key')} is encrypted and needs a passphrase, which strixwizard "
            f"does not ask for: use a key without a passphrase for {target.user}@{target.host}"
        )
    if isinstance(error, paramiko.AuthenticationException):
        return AuthFailed(f"{target.user}@{target.host} refused {key('the default keys')}")
    if isinstance(error, paramiko.ssh_exception.NoValidConnectionsError):
        # Its own text is "[Errno None] Unable to connect to port 22 on ...": say what happened.
        causes = sorted({_socket_reason(cause) for cause in error.errors.values()})
        return ConnectFailed(f"cannot connect to {target.host}:{target.port}: {'; '.join(causes)}")
    if isinstance(error, (TimeoutError, OSError, paramiko.SSHException, EOFError)):
        reason = (str(error) or type(error).__name__).replace("banner[", "banner: [")
        if isinstance(error, TimeoutError) or "timed out" in reason:
            reason = f"connection timed out after {target.connect_timeout:g} s"
        return ConnectFailed(f"cannot connect to {target.host}:{target.port}: {reason}")
    return None


def _socket_reason(error: BaseException) -> str:
    """`connection refused` rather than `[Errno 111] Connection refused`."""
    if isinstance(error, OSError) and error.strerror:
        return error.strerror[:1].lower() + error.strerror[1:]
    return str(error) or type(error).__name__


def collector_script(spec: Spec, become: str | None = None) -> bytes:
    """The program sent to the node: the collector's source, then a call to its main() (with
    the prefix that runs its root reads as root, for a `become` node)."""
    from strixwizard import __version__
    from strixwizard.onnode import collector

    source = Path(collector.__file__).read_text(encoding="utf-8")
    spec_text = json.dumps(json.dumps(dict(spec), allow_nan=False), allow_nan=False)
    prefix = list(BECOME_PREFIX[become]) if become is not None else None
    call = f"\nmain({spec_text}, {json.dumps(__version__, allow_nan=False)}, {prefix!r})\n"
    return (source + call).encode("utf-8")


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def read_to_end(channel: Any, host: str, deadline: float, limit: int = MAX_OUTPUT_BYTES
                ) -> tuple[bytes, bytes, int]:
    """stdout, stderr and exit status of an exec, read until the channel's end of file on both
    streams and its exit status; `deadline` (time.monotonic()) is the only bound.

    Data still buffered when the channel reports its exit status or its close is read too:
    a channel says "closed" before everything it received has been taken out."""
    stdout: list[bytes] = []
    stderr: list[bytes] = []
    size = 0
    out_open = err_open = True

    def left() -> float:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise DeadlineExceeded(f"{host}: the collection did not finish within the deadline")
        return remaining

    while out_open or err_open:
        channel.settimeout(min(READ_SLICE_S, left()))
        if err_open and (channel.recv_stderr_ready() or not out_open):
            try:
                chunk = channel.recv_stderr(65536)
            except TimeoutError:
                continue
            if chunk:
                stderr.append(chunk)
            else:
                err_open = False
            continue
        try:
            chunk = channel.recv(1 << 20)
        except TimeoutError:
            continue
        if not chunk:
            out_open = False
            continue
        stdout.append(chunk)
        size += len(chunk)
        if size > limit:
            raise CollectionFailed(f"{host}: collector output larger than {limit} bytes")
    while not channel.status_event.wait(min(READ_SLICE_S, left())):
        pass
    return b"".join(stdout), b"".join(stderr), channel.recv_exit_status()


def sudo_rule(user: str) -> str:
    """The sudoers line that lets `user` run what strixwizard runs as root without a password."""
    who = user if _PLAIN_USER.fullmatch(user) else "USER"
    return f"{who} ALL=(root) NOPASSWD: /usr/bin/python3"


def sudo_refusal(target: SshTarget, said: str) -> str:
    """The one error line for a refused `sudo -n`: node, user, sudo's words, and the cure."""
    rule = sudo_rule(target.user)
    file = "/etc/sudoers.d/strixwizard"
    return (f"{target.name}: {target.user}@{target.host} may not run commands as root through "
            f"`sudo -n` (it said: {said or 'nothing'}); strixwizard never types a password. "
            f"Cure, on {target.name} as root (or with sudo and your password): "
            f"echo '{rule}' > {file} && chmod 0440 {file} && visudo -c "
            f"(python3 as root can do anything root can: the rule is root access for "
            f"{target.user}, scoped to the one program strixwizard runs). Nothing was changed on "
            f"any node.")


def check_become(client: paramiko.SSHClient, target: SshTarget) -> None:
    """On a `become: sudo` node, before anything runs as root: `sudo -n` must run python3 for
    the login user. `SudoRefused` naming the rule that cures it otherwise; `RuntimeMissing` when
    sudo or python3 is not installed."""
    if target.become is None:
        return
    transport = client.get_transport()
    if transport is None:
        raise ConnectionLost(f"{target.host}: the SSH connection is gone")
    try:
        channel = transport.open_session(timeout=target.connect_timeout)
        try:
            channel.exec_command(remote_command(SUDO_PROBE, target.become))
            channel.shutdown_write()
            _, err, status = read_to_end(channel, target.host,
                                         time.monotonic() + target.connect_timeout + 10)
        finally:
            channel.close()
    except DeadlineExceeded:
        raise DeadlineExceeded(f"{target.host}: `sudo -n` did not answer within "
                               f"{target.connect_timeout + 10:g} s") from None
    except _CHANNEL_ERRORS as error:
        raise ConnectionLost(f"{target.host}: connection lost while asking sudo "
                             f"({error or type(error).__name__})") from None
    if status == 0:
        return
    said = _last_line(err.decode("utf-8", "replace"))
    if status == 127:
        raise RuntimeMissing(f"{target.host}: sudo is not installed (the site says `become: "
                             f"sudo` for {target.user}); install it, or log in as root")
    if (missing := _SUDO_NOT_FOUND.match(said)) is not None:
        raise RuntimeMissing(f"{target.host}: {missing['name']} is not installed (sudo did not "
                             "find it); the collector and the step runner need python3 (3.8+)")
    raise SudoRefused(sudo_refusal(target, said))


def _ended_missing(status: int | None, stderr: str) -> bool:
    """A remote command ended because its program is missing: 127 from the shell, or sudo's
    own "command not found" (sudo exits 1)."""
    return status == 127 or (status == 1 and any(
        _SUDO_NOT_FOUND.match(line.strip()) for line in stderr.splitlines()))


class SshOps:
    """The ops transport over SSH: `ops.serve()` on the node, one JSON line each way; it
    answers a ping before it is handed out."""

    def __init__(self, session: SshSession) -> None:
        from strixwizard.onnode import ops

        self.host = session.target.host
        #: Longest a single operation may take before the node counts as unreachable.
        self.timeout_s = ops.COMMAND_TIMEOUT_S + 15
        channel = session.open_channel()
        try:
            channel.exec_command(remote_command(["python3", "-c", OPS_BOOTSTRAP],
                                                session.target.become))
            source = Path(ops.__file__).read_text(encoding="utf-8")
            channel.sendall(f"{len(source)}\n{source}".encode())
            channel.settimeout(self.timeout_s)
        except _CHANNEL_ERRORS as error:
            # a python3 that ended before it took the runner (missing: exit 127) closes the
            # session under the write: its exit status says why
            ended = channel.status_event.wait(1.0) and _ended_missing(
                channel.exit_status, _pending_stderr(channel))
            channel.close()
            if ended:
                raise RuntimeMissing(f"{self.host}: python3 is not installed (the step runner "
                                     "needs it)") from None
            raise ConnectionLost(f"{self.host}: cannot start the step runner ({error})") from None
        self._channel: paramiko.Channel | None = channel
        self._reader: paramiko.ChannelFile | None = channel.makefile("rb")
        try:
            answer_of(Ping(), self.exchange(Ping().wire()))
        except OpRefused:
            self.close()
            raise ConnectionLost(f"{self.host}: the step runner did not start") from None

    def exchange(self, request: dict[str, Any]) -> dict[str, Any]:
        channel, reader = self._channel, self._reader
        if channel is None or reader is None:
            raise ConnectionLost(f"{self.host}: the step runner's session is closed")
        try:
            channel.sendall((json.dumps(request, allow_nan=False) + "\n").encode())
            line = reader.readline()
        except TimeoutError as error:
            self.close()
            raise ConnectionLost(f"{self.host}: connection lost ({error or type(error).__name__})"
                                 ) from None
        except _CHANNEL_ERRORS as error:
            # a python3 that ended at once (missing: 127) can close the session after it took
            # the runner's upload and before the first request: its exit status says why
            self._raise_if_missing(channel, wait_s=1.0)
            raise ConnectionLost(f"{self.host}: connection lost ({error or type(error).__name__})"
                                 ) from None
        if not line:
            self._raise_if_missing(channel, wait_s=0.0)
            raise ConnectionLost(f"{self.host}: connection lost (the session ended)")
        return json.loads(line)  # type: ignore[no-any-return]

    def _raise_if_missing(self, channel: paramiko.Channel, wait_s: float) -> None:
        """Close the session; `RuntimeMissing` if its program ended for want of python3."""
        ended = channel.exit_status_ready() or (wait_s > 0 and channel.status_event.wait(wait_s))
        missing = ended and _ended_missing(channel.exit_status, _pending_stderr(channel))
        self.close()
        if missing:
            raise RuntimeMissing(f"{self.host}: python3 is not installed (the step runner needs it)")

    def close(self) -> None:
        if self._channel is not None:
            with contextlib.suppress(*_CHANNEL_ERRORS):
                self._channel.shutdown_write()
            self._channel.close()
        self._channel = self._reader = None


class SshSession:
    """A node over SSH. Thread-safe: programs may be started from several threads."""

    python = "python3"

    def __init__(self, target: SshTarget) -> None:
        self.target = target
        self.name = target.name
        self.where = target.where
        self._client: paramiko.SSHClient | None = None
        self._lock = threading.Lock()

    # -- the connection --------------------------------------------------
    def _connection(self) -> paramiko.SSHClient:
        with self._lock:
            if self._client is None or not _alive(self._client):
                if self._client is not None:
                    self._client.close()
                self._client = None
                client = open_client(self.target)
                try:
                    check_become(client, self.target)
                except BaseException:
                    client.close()
                    raise
                self._client = client
            return self._client

    def open_channel(self) -> paramiko.Channel:
        transport = self._connection().get_transport()
        if transport is None:
            raise ConnectionLost(f"{self.target.host}: the SSH connection is gone")
        try:
            return transport.open_session(timeout=self.target.connect_timeout)
        except _CHANNEL_ERRORS as error:
            raise ConnectionLost(f"{self.target.host}: cannot open an SSH session "
                                 f"({error or type(error).__name__})") from None

    # -- collect ---------------------------------------------------------
    def collect_archive(self, spec: Spec) -> bytes:
        t = self.target
        deadline = time.monotonic() + t.deadline
        try:
            channel = self.open_channel()
            try:
                # as the login user: the collector sends its root reads through sudo itself
                channel.exec_command(remote_command(["python3", "-"]))
                try:
                    channel.sendall(collector_script(spec, t.become))
                    channel.shutdown_write()
                except _CHANNEL_ERRORS:
                    # the program may have ended before it took its input (a node without
                    # python3 exits 127 at once and closes the session): its exit status says
                    # why, not the write that found the session closed; a session really
                    # lost ends without one (-1, below)
                    pass
                out, err, status = read_to_end(channel, t.host, deadline)
            finally:
                channel.close()
        except DeadlineExceeded:
            raise DeadlineExceeded(
                f"{t.host}: the collection did not finish within {t.deadline:g} s") from None
        except _CHANNEL_ERRORS as error:
            reason = str(error) or type(error).__name__
            raise ConnectionLost(f"{t.host}: connection lost during collection ({reason})") from None
        said = _last_line(err.decode("utf-8", "replace"))
        if _ended_missing(status, err.decode("utf-8", "replace")):
            raise RuntimeMissing(f"{t.host}: python3 is not installed; the collector needs it (3.8+)")
        if status == -1:
            raise ConnectionLost(f"{t.host}: connection lost during collection (the session "
                                 "ended without an exit status)")
        if status != 0:
            raise CollectionFailed(f"{t.host}: the collector failed: {said or f'exit status {status}'}")
        if not out:
            raise CollectionFailed(f"{t.host}: the collector ended (exit 0) without sending a "
                                   f"snapshot{'; it said: ' + said if said else ''}")
        return out

    def collect(self, spec: Spec) -> SnapshotProbe:
        data = self.collect_archive(spec)
        try:
            return SnapshotProbe.from_bytes(data, f"{self.name} ({self.target.host})")
        except SnapshotError as error:
            raise CollectionFailed(str(error)) from None

    # -- ops ---------------------------------------------------------------
    def ops(self) -> OpsChannel:
        return OpsChannel(SshOps(self))

    # -- programs ---------------------------------------------------------
    def start(self, argv: Sequence[str], limit_s: float, label: str = "") -> Process:
        channel = self.open_channel()
        try:
            channel.exec_command(remote_command(supervised_argv(self.python, argv, limit_s),
                                                self.target.become))
        except _CHANNEL_ERRORS as error:
            channel.close()
            raise ConnectionLost(f"{self.name}: cannot start {argv[0]} over SSH ({error})") from None

        def close_stdin() -> None:
            with contextlib.suppress(*_CHANNEL_ERRORS):
                channel.shutdown_write()

        process = Process(self.name, label or argv[0], close_stdin, channel.close, program_name(argv))
        readers = start_readers(process, channel.recv, channel.recv_stderr)

        def reap() -> None:
            status = channel.recv_exit_status()  # -1: closed without a status (node gone)
            drained(readers)
            process._end(None if status == -1 else status)

        spawn(reap, f"wait-{self.name}")
        return process

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None


def _pending_stderr(channel: paramiko.Channel) -> str:
    """What an ended channel still holds on stderr (without waiting for more)."""
    chunks = []
    with contextlib.suppress(*_CHANNEL_ERRORS):
        while channel.recv_stderr_ready():
            chunks.append(channel.recv_stderr(65536))
    return b"".join(chunks).decode("utf-8", "replace")


def _alive(client: paramiko.SSHClient) -> bool:
    transport = client.get_transport()
    return transport is not None and transport.is_active()


__all__ = ["SshOps", "SshSession", "SshTarget", "Unreachable", "check_become", "collector_script",
           "fingerprint", "open_client", "read_to_end", "sudo_refusal", "sudo_rule"]

"""Collect a remote node over SSH in one exec, then answer from the snapshot it streams back.

The collector's own source (`strixwizard/probe/collector.py`, standard library
only) is sent on stdin to `python3 -` on the node, with the collection spec
appended as a literal. It writes a snapshot `.tar.gz` to stdout, which is
loaded as a `SnapshotProbe`. One TCP connection, one exec per node per run.

Host keys are verified against a known_hosts file. An unknown key is refused
with its fingerprint unless the user trusts new hosts explicitly; a changed
key is always refused. No key material is ever logged.
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import paramiko

from strixwizard import __version__
from strixwizard.probe import collector
from strixwizard.probe.snapshot import SnapshotError, SnapshotProbe
from strixwizard.probe.spec import SPEC
from strixwizard.site import key_problem

DEFAULT_KNOWN_HOSTS = Path("~/.ssh/known_hosts").expanduser()
MAX_OUTPUT_BYTES = 256 * 1024 * 1024


class SshError(Exception):
    """The node could not be collected; the message is the reason shown to the user."""


@dataclass(frozen=True)
class SshTarget:
    name: str
    host: str
    user: str = "root"
    port: int = 22
    key_file: str | None = None
    known_hosts: Path = DEFAULT_KNOWN_HOSTS
    trust_new_hosts: bool = False
    #: Trust an unknown key only if it has this fingerprint (the one the user confirmed).
    trust_fingerprint: str | None = None
    connect_timeout: float = 5.0
    deadline: float = 60.0  # for the whole collection, connect included


def fingerprint(key: paramiko.PKey) -> str:
    """The SHA256 fingerprint as OpenSSH prints it: `SHA256:base64-without-padding`."""
    digest = hashlib.sha256(key.asbytes()).digest()
    return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")


def _known_hosts_name(host: str, port: int) -> str:
    return host if port == 22 else f"[{host}]:{port}"


class UnknownHostKey(SshError):
    """An unknown host key was refused; carries what the user needs to decide."""

    def __init__(self, message: str, host: str, key_type: str, key_fingerprint: str) -> None:
        super().__init__(message)
        self.host = host
        self.key_type = key_type
        self.fingerprint = key_fingerprint


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


def collector_script(spec: dict[str, Any] | None = None) -> bytes:
    """The program sent to the node: the collector's source, then a call to its main()."""
    source = Path(collector.__file__).read_text(encoding="utf-8")
    call = f"\nmain({json.dumps(json.dumps(spec or dict(SPEC)))}, {json.dumps(__version__)})\n"
    return (source + call).encode("utf-8")


def connect(target: SshTarget) -> paramiko.SSHClient:
    """An authenticated SSH client for `target`, host key verified; raises SshError."""
    if target.key_file and (problem := key_problem(Path(target.key_file).expanduser())):
        raise SshError(problem)
    client = paramiko.SSHClient()
    if target.known_hosts.exists():
        try:
            client.load_host_keys(str(target.known_hosts))
        except (OSError, paramiko.SSHException) as error:
            raise SshError(f"cannot read known_hosts {target.known_hosts}: {error}") from None
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
    except SshError:
        client.close()
        raise
    except paramiko.BadHostKeyException as error:
        client.close()
        raise SshError(
            f"host key for {target.host} CHANGED: it now offers {fingerprint(error.key)}, "
            f"known_hosts has {fingerprint(error.expected_key)}. Refused: this may be an attack. "
            f"If the node was reinstalled, remove the old key: ssh-keygen -R "
            f"{_known_hosts_name(target.host, target.port)} -f {target.known_hosts}"
        ) from None
    except paramiko.AuthenticationException:
        client.close()
        key = f"key {target.key_file}" if target.key_file else "the default keys"
        raise SshError(f"{target.user}@{target.host} refused {key}") from None
    except (TimeoutError, OSError, paramiko.SSHException, EOFError) as error:
        client.close()
        reason = str(error) or type(error).__name__
        if isinstance(error, TimeoutError) or "timed out" in reason:
            reason = f"connection timed out after {target.connect_timeout:g} s"
        raise SshError(f"cannot connect to {target.host}:{target.port}: {reason}") from None
    return client


_connect = connect  # the name it had before fixes needed it


def collect_ssh(target: SshTarget, spec: dict[str, Any] | None = None) -> SnapshotProbe:
    """Collect one node and load it; raises SshError with the reason when it cannot."""
    data = collect_ssh_archive(target, spec)
    try:
        return SnapshotProbe.from_bytes(data, f"{target.name} ({target.host})")
    except SnapshotError as error:
        raise SshError(str(error)) from None


def collect_ssh_archive(target: SshTarget, spec: dict[str, Any] | None = None) -> bytes:
    """Collect one node into snapshot `.tar.gz` bytes; raises SshError with the reason."""
    started = time.monotonic()
    client = connect(target)
    try:
        transport = client.get_transport()
        if transport is None:
            raise SshError(f"cannot connect to {target.host}: no transport")
        channel = transport.open_session(timeout=target.connect_timeout)
        channel.exec_command("python3 -")
        channel.sendall(collector_script(spec))
        channel.shutdown_write()
        channel.settimeout(0.2)
        stdout: list[bytes] = []
        stderr: list[bytes] = []
        size = 0
        while True:
            if time.monotonic() - started > target.deadline:
                raise SshError(
                    f"{target.host}: the collection did not finish within {target.deadline:g} s"
                )
            progressed = False
            while channel.recv_stderr_ready():
                stderr.append(channel.recv_stderr(65536))
                progressed = True
            try:
                chunk = channel.recv(1 << 20)
            except TimeoutError:
                chunk = None
            if chunk:
                stdout.append(chunk)
                size += len(chunk)
                if size > MAX_OUTPUT_BYTES:
                    raise SshError(f"{target.host}: collector output larger than {MAX_OUTPUT_BYTES} bytes")
                continue
            if chunk == b"" and channel.exit_status_ready() and not channel.recv_stderr_ready():
                break
            if not progressed and chunk is None and channel.closed:
                break
        status = channel.recv_exit_status()
        error_text = b"".join(stderr).decode("utf-8", "replace").strip()
        if status == 127:
            raise SshError(f"{target.host}: python3 is not installed; the collector needs it (3.8+)")
        if status != 0:
            last = error_text.splitlines()[-1] if error_text else f"exit status {status}"
            raise SshError(f"{target.host}: the collector failed: {last}")
        if not size:
            said = f"; it said: {error_text.splitlines()[-1]}" if error_text else ""
            raise SshError(f"{target.host}: the collector ended (exit 0) without sending a "
                           f"snapshot{said}; run `strixwizard doctor` again")
        return b"".join(stdout)
    except (OSError, paramiko.SSHException, EOFError) as error:
        reason = str(error) or type(error).__name__
        raise SshError(f"{target.host}: connection lost during collection ({reason})") from None
    finally:
        client.close()

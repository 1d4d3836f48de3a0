"""The SSH runner: one session per node that runs `ops.serve()` on it.

The ops module's source is sent over the session's stdin to `python3 -c`, then
requests and answers go back and forth one JSON line each, so every step's
outcome is known on the head as soon as the node has it. A session that ends
or stops answering makes the node `Unreachable`; host keys are checked exactly
as the SSH probe checks them (`strixwizard.probe.ssh.connect`).
"""

from __future__ import annotations

import contextlib
import json
import shlex
from pathlib import Path
from typing import Any

import paramiko

from strixwizard.fixing import ops
from strixwizard.fixing.runner import DEFAULT_NODE_JOURNAL_DIR, OpsRunner, Unreachable
from strixwizard.probe import Probe
from strixwizard.probe.ssh import SshError, SshTarget, collect_ssh, connect

BOOTSTRAP = (
    "import sys\n"
    "n = int(sys.stdin.readline())\n"
    "g = {'__name__': 'strixwizard_ops'}\n"
    "exec(compile(sys.stdin.read(n), 'strixwizard_ops', 'exec'), g)\n"
    "g['serve']()\n"
)
#: Longest a single operation may take before the node counts as unreachable.
OP_TIMEOUT_S = ops.COMMAND_TIMEOUT_S + 15


class SshRunner(OpsRunner):
    def __init__(self, target: SshTarget, journal_dir: str = DEFAULT_NODE_JOURNAL_DIR) -> None:
        self.node = target.name
        self.target = target
        self.journal_dir = journal_dir
        self.where = f"ssh {target.user}@{target.host}" + (f":{target.port}" if target.port != 22 else "")
        self._client: paramiko.SSHClient | None = None
        self._channel: paramiko.Channel | None = None
        self._reader: Any = None

    def _open(self) -> None:
        try:
            client = connect(self.target)
        except SshError as error:
            raise Unreachable(str(error)) from None
        try:
            transport = client.get_transport()
            if transport is None:
                raise Unreachable(f"{self.target.host}: no SSH transport")
            channel = transport.open_session(timeout=self.target.connect_timeout)
            channel.exec_command(shlex.join(["python3", "-c", BOOTSTRAP]))
            source = Path(ops.__file__).read_text(encoding="utf-8")
            channel.sendall(f"{len(source)}\n{source}".encode())
            channel.settimeout(OP_TIMEOUT_S)
        except (OSError, paramiko.SSHException, EOFError) as error:
            client.close()
            raise Unreachable(f"{self.target.host}: cannot start the step runner ({error})") from None
        self._client, self._channel = client, channel
        self._reader = channel.makefile("rb")
        answer = self.op({"op": "ping"})
        if not answer.get("ok"):
            raise Unreachable(f"{self.target.host}: the step runner did not start")

    def op(self, request: dict[str, Any]) -> dict[str, Any]:
        if self._channel is None:
            self._open()
        assert self._channel is not None
        try:
            self._channel.sendall((json.dumps(request) + "\n").encode())
            line = self._reader.readline()
        except (TimeoutError, OSError, paramiko.SSHException, EOFError) as error:
            self.close()
            raise Unreachable(f"{self.target.host}: connection lost ({error or type(error).__name__})"
                              ) from None
        if not line:
            status = self._channel.exit_status if self._channel.exit_status_ready() else None
            self.close()
            if status == 127:
                raise Unreachable(f"{self.target.host}: python3 is not installed (the step runner "
                                  "needs it)")
            raise Unreachable(f"{self.target.host}: connection lost (the session ended)")
        return json.loads(line)  # type: ignore[no-any-return]

    def probe(self) -> Probe:
        try:
            return collect_ssh(self.target)
        except SshError as error:
            raise Unreachable(str(error)) from None

    def close(self) -> None:
        if self._channel is not None:
            with contextlib.suppress(OSError, paramiko.SSHException, EOFError):
                self._channel.shutdown_write()
        if self._client is not None:
            self._client.close()
        self._client = self._channel = self._reader = None

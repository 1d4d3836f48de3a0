"""The node seam: one session interface, one error hierarchy, one Cancel, one quoting rule.

SSH behaviour against real sshds is in tests/test_ssh.py (the lab); here: a fake paramiko
channel for the read-to-the-end rule, the local and replay sessions, injection of a
session factory into the engines, the rule that only strixwizard/node/ opens SSH, and a
private key others can read refused as OpenSSH refuses it.
"""

from __future__ import annotations

import ast
import io
import logging
import shlex
import socket
import struct
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from strixwizard.discovery import Discovery
from strixwizard.facts.spec import SPEC
from strixwizard.node import (
    Cancel,
    Cancelled,
    ConnectFailed,
    DeadlineExceeded,
    NodeError,
    SshTarget,
    Unreachable,
    program_name,
    remote_command,
)
from strixwizard.node.channel import Ping, WriteAttribute
from strixwizard.node.errors import OpRefused
from strixwizard.node.local import LocalSession
from strixwizard.node.replay import Recording, ReplayConnector, ReplaySession
from strixwizard.node.ssh import open_client
from strixwizard.probe.snapshot import SnapshotProbe
from tests.support.cli import invoke

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "strixwizard" / "demo" / "snapshots"


# -- reading an exec to its end ------------------------------------------------------------


class FakeChannel:
    """A paramiko channel whose stdout is still buffered when it already reports its exit
    status and its close: the state a loaded head sees at 16-64 hosts."""

    def __init__(self, script: list[bytes | None], stderr: bytes = b"", status: int = 0,
                 hang: bool = False) -> None:
        self.script = list(script)  # None: the read times out (nothing arrived in time)
        self.stderr = stderr
        self.status = status
        self.closed = True
        self.hang = hang
        self.status_event = threading.Event()
        if not hang:
            self.status_event.set()

    def settimeout(self, timeout: float) -> None:
        self.timeout = timeout

    def exit_status_ready(self) -> bool:
        return not self.hang

    def recv_exit_status(self) -> int:
        return self.status

    def recv_stderr_ready(self) -> bool:
        return bool(self.stderr)

    def recv_stderr(self, n: int) -> bytes:
        data, self.stderr = self.stderr[:n], self.stderr[n:]
        return data

    def recv(self, n: int) -> bytes:
        if self.hang:
            time.sleep(min(self.timeout, 0.05))
            raise TimeoutError
        if not self.script:
            return b""
        item = self.script.pop(0)
        if item is None:
            raise TimeoutError
        return item


def test_data_still_buffered_after_exit_status_and_close_is_read() -> None:
    from strixwizard.node.ssh import read_to_end

    channel = FakeChannel([None, b"snap", None, None, b"shot"], stderr=b"note\n")
    out, err, status = read_to_end(channel, "10.99.0.2", time.monotonic() + 10)
    assert (out, err, status) == (b"snapshot", b"note\n", 0)


def test_a_channel_that_never_ends_stops_at_the_deadline_only() -> None:
    from strixwizard.node.ssh import read_to_end

    started = time.monotonic()
    with pytest.raises(DeadlineExceeded):
        read_to_end(FakeChannel([], hang=True), "10.99.0.2", time.monotonic() + 0.5)
    assert time.monotonic() - started < 3


# -- one quoting rule, true program names ---------------------------------------------------


@pytest.mark.parametrize("argv", [
    ["python3", "-"],
    ["python3", "-c", "import sys\nprint('a b', \"c\")\n", '["x y", "$HOME; rm -rf /"]', "5"],
    ["sh", "-ac", '. "$0" && exec "$@"', "/etc/strixwizard/env", "ray", "start", "--head"],
    ["echo", "", "'", '"', "\\", "`id`", "$(id)", "a\tb", "*"],
])
def test_remote_command_quotes_every_piece(argv: list[str]) -> None:
    assert shlex.split(remote_command(argv)) == argv


def test_remote_command_refuses_an_empty_argv() -> None:
    with pytest.raises(ValueError):
        remote_command([])


@pytest.mark.parametrize(("argv", "program"), [
    (["ray", "start"], "ray"),
    (["sh", "-c", "exec ray start --head"], "ray"),
    (["sh", "-ac", '. "$0" && exec "$@"', "/etc/strixwizard/env", "ray", "start"], "ray"),
    (["sh", "-c", "all_reduce_perf -b 8"], "all_reduce_perf"),
    (["/bin/sh", "-c", "X=1 exec /opt/rocm/bin/rccl-tests"], "/opt/rocm/bin/rccl-tests"),
])
def test_program_name_is_the_program_a_shell_execs(argv: list[str], program: str) -> None:
    assert program_name(argv) == program


def test_exit_127_from_a_shell_names_the_program_it_execs() -> None:
    from strixwizard.deploy.plan import WITH_ENV
    from strixwizard.fixing.runner import command_error

    argv = ("sh", "-ac", WITH_ENV, "/etc/strixwizard/cluster.env", "ray", "start", "--head")
    message = command_error(argv, 127, "", "sh: 1: exec: ray: not found")
    assert message == "`ray` is not installed on the node"


def test_a_local_program_that_is_missing_is_named() -> None:
    process = LocalSession().start(["sh", "-c", "exec strixwizard-no-such-tool --x"], 10)
    assert process.wait(10)
    assert process.not_found and process.program == "strixwizard-no-such-tool"


# -- one cancel mechanism ---------------------------------------------------------------------


def test_cancel_stops_every_program_started_under_it_and_refuses_new_ones() -> None:
    cancel = Cancel()
    host = cancel.scope(LocalSession("here"))
    first, second = host.start(["sleep", "30"], 60), host.start(["sleep", "30"], 60)
    time.sleep(0.2)
    started = time.monotonic()
    cancel.cancel()
    assert first.ended and second.ended and time.monotonic() - started < 10
    with pytest.raises(Cancelled, match="here: the run was cancelled"):
        host.start(["true"], 5)
    assert issubclass(Cancelled, NodeError)


def test_cancel_asks_every_program_to_stop_before_waiting_for_any() -> None:
    """Ten programs that each take 0.5 s to end stop in about 0.5 s, not 5 s."""
    from strixwizard.node.process import Process

    def slow_process(i: int) -> Process:
        holder: list[Process] = []

        def close_stdin() -> None:
            threading.Timer(0.5, lambda: holder[0]._end(125)).start()

        holder.append(Process(f"n{i}", "slow", close_stdin, lambda: None))
        return holder[0]

    cancel = Cancel()
    processes = [slow_process(i) for i in range(10)]
    for process in processes:
        cancel.add(process)
    started = time.monotonic()
    cancel.cancel()
    assert all(p.ended and not p.lost for p in processes)
    assert time.monotonic() - started < 2.5


def test_a_child_cancel_follows_its_parent_but_not_the_other_way() -> None:
    parent = Cancel()
    child = Cancel(parent)
    child.cancel()
    assert child.cancelled and not parent.cancelled
    late = Cancel(parent)
    parent.cancel()
    assert late.cancelled
    assert Cancel(parent).cancelled  # made after: cancelled at once


def test_run_tests_takes_the_callers_cancel() -> None:
    """The wizard's Stop: a Cancel given to run_measurement stops its programs at once, any thread."""
    from strixwizard.live.plan import PairPlan
    from strixwizard.live.runner import run_measurement
    from strixwizard.live.settings import MeasurementSettings
    from strixwizard.live.tcp import TcpSettings

    cancel = Cancel()
    hosts = {"a": LocalSession("a"), "b": LocalSession("b")}
    plan = PairPlan("a", "b", "127.0.0.1", "127.0.0.1", "127.0.0.1", "loopback", False, None,
                    "no RDMA in this test")
    settings = MeasurementSettings(tcp=TcpSettings(seconds=30, round_trips=10**9, references=False))
    threading.Timer(1.0, cancel.cancel).start()
    started = time.monotonic()
    results = list(run_measurement("latency", hosts, {("a", "b"): plan}, ["a", "b"], settings,
                                   cancel=cancel))
    assert time.monotonic() - started < 20
    assert results and results[0].kind == "latency"


# -- replay sessions injected into the engines -------------------------------------------------


def _two_node_site(tmp_path: Path) -> Path:
    site = tmp_path / "site.yaml"
    site.write_text("site: replayed\nnodes:\n"
                    "  - name: node-a\n    host: 10.99.250.1\n"
                    "  - name: node-b\n    host: 10.99.250.2\n")
    return site


def test_site_nodes_collect_through_an_injected_connector(tmp_path: Path) -> None:
    from strixwizard.services.nodes import site_nodes
    from strixwizard.site import load_site

    site = load_site(_two_node_site(tmp_path))
    connector = ReplayConnector(
        probes={"node-a": SnapshotProbe.load(DEMO / "node-a.tar.gz")},
        unreachable={"node-b": "cannot connect to 10.99.250.2:22: Connection refused"})
    a, b = site_nodes(site, connector=connector)
    assert a.report.reachable and a.facts is not None and a.facts.cpu.is_strix_halo
    assert not b.report.reachable
    assert b.report.error == "cannot connect to 10.99.250.2:22: Connection refused"
    assert all(s.closed for sessions in connector.sessions.values() for s in sessions)


def test_every_kind_of_node_goes_through_the_injected_connector(tmp_path: Path) -> None:
    """Local nodes too: the wizard injects one connector and nothing reaches a real node."""
    from strixwizard.services.measure import site_hosts
    from strixwizard.services.nodes import site_nodes
    from strixwizard.site import load_site

    path = tmp_path / "site.yaml"
    path.write_text("site: mixed\nnodes:\n  - name: here\n    host: local\n"
                    "  - name: there\n    host: 10.99.250.2\n")
    site = load_site(path)
    connector = ReplayConnector(probes={"here": SnapshotProbe.load(DEMO / "node-a.tar.gz"),
                                        "there": SnapshotProbe.load(DEMO / "node-b.tar.gz")},
                                programs={"true": Recording()})
    nodes = site_nodes(site, connector=connector)
    assert [n.report.reachable for n in nodes] == [True, True]
    assert all(n.facts is not None and n.facts.cpu.is_strix_halo for n in nodes)
    hosts, down = site_hosts(Discovery.of(site, nodes), connector=connector)
    assert not down and sorted(hosts) == ["here", "there"]
    assert all(hosts[name].start(["true"], 5).status == 0 for name in hosts)
    assert sorted(connector.sessions) == ["here", "there"]


def test_an_archive_is_collected_through_the_injected_connector() -> None:
    connector = ReplayConnector(probes={"node-a": SnapshotProbe.load(DEMO / "node-a.tar.gz")})
    data = connector(SshTarget("node-a", "10.99.250.1")).collect_archive(SPEC)
    again = SnapshotProbe.from_bytes(data, "node-a")
    assert again.read("/proc/cpuinfo") == SnapshotProbe.load(DEMO / "node-a.tar.gz").read("/proc/cpuinfo")


def test_collection_runs_at_most_parallel_nodes_at_once(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from strixwizard.node.target import default_parallel
    from strixwizard.services.nodes import site_nodes, ssh_parallel
    from strixwizard.site import load_site

    path = tmp_path / "site.yaml"
    path.write_text("site: many\nnodes:\n" + "".join(
        f"  - name: n{i}\n    host: 10.99.250.{i + 1}\n" for i in range(12)))
    site = load_site(path)
    probe = SnapshotProbe.load(DEMO / "node-a.tar.gz")
    lock, running, peak = threading.Lock(), [0], [0]

    class Slow(ReplaySession):
        def collect(self, spec: Any = None) -> Any:
            with lock:
                running[0] += 1
                peak[0] = max(peak[0], running[0])
            time.sleep(0.05)
            with lock:
                running[0] -= 1
            return probe

    nodes = site_nodes(site, connector=lambda target: Slow(target.name, probe), parallel=3)
    assert all(n.report.reachable for n in nodes) and peak[0] == 3
    assert 4 <= default_parallel() <= 32 and ssh_parallel(site) == default_parallel()
    assert ssh_parallel(SimpleNamespace(ssh=SimpleNamespace(parallel=5))) == 5


def test_the_fix_runner_works_through_an_injected_session() -> None:
    from strixwizard.fixing.model import Kind, Read, Step
    from strixwizard.fixing.runner import StepFailed
    from strixwizard.fixing.ssh import SshRunner

    connector = ReplayConnector(probes={"node-a": SnapshotProbe.load(DEMO / "node-a.tar.gz")})
    runner = SshRunner(SshTarget("node-a", "10.99.250.1"), connector=connector)
    assert "RYZEN AI MAX" in (runner.read(Read("file", path="/proc/cpuinfo")) or "")
    assert runner.probe().host == runner.session.collect(SPEC).host
    with pytest.raises(OpRefused) as refused:
        runner.send(WriteAttribute("/sys/x", "1"))
    assert str(refused.value) == "a replayed node changes nothing (write refused)"
    with pytest.raises(StepFailed, match="a replayed node changes nothing"):
        runner.apply(Step(Kind.WRITE, "/sys/x", "write 1", Read("file", path="/sys/x"), None, "1"))
    runner.close()
    [session] = connector.sessions["node-a"]
    assert session.closed


def test_an_unreachable_session_makes_the_fix_runner_unreachable() -> None:
    from strixwizard.fixing.runner import Unreachable as RunnerUnreachable
    from strixwizard.fixing.ssh import SshRunner

    runner = SshRunner(SshTarget("n", "10.99.250.1"),
                       connector=ReplayConnector(unreachable={"n": "cannot connect: refused"}))
    with pytest.raises(RunnerUnreachable, match="cannot connect: refused"):
        runner.send(Ping())
    assert RunnerUnreachable is Unreachable and issubclass(ConnectFailed, Unreachable)


def test_replayed_programs_answer_from_recordings() -> None:
    session = ReplaySession("n", None, {"ib_write_lat": Recording("lat 5.1\n", status=0)})
    done = session.start(["ib_write_lat", "-d", "rocep1s0"], 10)
    assert done.ended and done.status == 0 and done.stdout == "lat 5.1\n"
    missing = session.start(["sh", "-c", "exec qperf 10.0.0.1 tcp_lat"], 10)
    assert missing.not_found and missing.program == "qperf"


def test_the_live_tests_names_are_the_node_seams() -> None:
    from strixwizard.live.hosts import Host, HostError, Process  # noqa: F401
    from strixwizard.node import UnknownHostKey

    assert HostError is NodeError
    assert issubclass(UnknownHostKey, Unreachable)


# -- paramiko stays quiet -------------------------------------------------------------------


def test_paramiko_log_reaches_nothing_unless_asked(capsys: pytest.CaptureFixture[str]) -> None:
    import strixwizard.node.ssh  # noqa: F401  (importing it quiets paramiko)
    from strixwizard.node.log import show_ssh_log

    logging.getLogger("paramiko.transport").error("Exception (client): Error reading SSH banner")
    assert capsys.readouterr().err == ""
    stream = io.StringIO()
    handler = show_ssh_log(stream)
    try:
        logging.getLogger("paramiko.transport").error("Exception (client): shown with -v")
    finally:
        logging.getLogger("paramiko").removeHandler(handler)
    assert "shown with -v" in stream.getvalue()


def _resetting_listener() -> tuple[socket.socket, threading.Thread]:
    """A port on loopback that accepts, then resets the connection (bounded: 20 accepts, 30 s)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(1.0)

    def serve() -> None:
        deadline = time.monotonic() + 30
        for _ in range(20):
            if time.monotonic() > deadline:
                return
            try:
                conn, _ = server.accept()
            except OSError:
                if server.fileno() == -1:
                    return
                continue
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return server, thread


def test_a_port_that_accepts_then_resets_prints_one_line_and_no_traceback(tmp_path: Path) -> None:
    server, thread = _resetting_listener()
    port = server.getsockname()[1]
    try:
        site = tmp_path / "site.yaml"
        site.write_text(f"site: reset\nssh:\n  known_hosts: {tmp_path / 'known_hosts'}\n"
                        f"nodes:\n  - name: n0\n    host: 127.0.0.1\n    port: {port}\n")
        for extra in ((), ("--json",)):
            result = invoke("doctor", "--site", str(site), *extra)
            assert result.rc == 2
            assert "Traceback" not in result.stderr, result.stderr
            assert "SSHException" not in result.stderr and "Exception (client)" not in result.stderr
        host = result.json()["hosts"][0]
        assert host["reachable"] is False and f"cannot connect to 127.0.0.1:{port}" in host["error"]
    finally:
        server.close()
        thread.join(5)


# -- nothing else reaches a node ---------------------------------------------------------------

SSH_CALLS = {"exec_command", "open_session", "invoke_shell", "open_channel", "connect"}


def _product_modules() -> list[Path]:
    dirs = [ROOT / "strixwizard", ROOT / "checks", ROOT / "fixes"]
    return [p for d in dirs for p in d.rglob("*.py") if (ROOT / "strixwizard" / "node") not in p.parents]


def test_only_the_node_seam_imports_paramiko_or_opens_ssh_channels() -> None:
    offenders: list[str] = []
    for path in _product_modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        where = path.relative_to(ROOT)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "paramiko" for a in node.names):
                offenders.append(f"{where}:{node.lineno}: import paramiko")
            elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "paramiko":
                offenders.append(f"{where}:{node.lineno}: from paramiko")
            elif isinstance(node, ast.ImportFrom) and node.module == "strixwizard.node.ssh":
                offenders.append(f"{where}:{node.lineno}: imports the SSH session directly")
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                  and node.func.attr in SSH_CALLS - {"connect"}):
                offenders.append(f"{where}:{node.lineno}: .{node.func.attr}()")
    assert not offenders, "\n".join(offenders)


def test_supervised_programs_are_started_by_the_node_seam_only() -> None:
    offenders = [str(p.relative_to(ROOT)) for p in _product_modules()
                 if "supervised_argv(" in p.read_text(encoding="utf-8")
                 and p.name != "hosts.py"]
    assert not offenders


def test_a_closed_port_reads_connection_refused_not_errno_none(tmp_path: Path) -> None:
    """paramiko's own text for this is `[Errno None] Unable to connect to port ...`."""
    from strixwizard.node.errors import ConnectFailed
    from strixwizard.node.ssh import open_client
    from strixwizard.node.target import SshTarget

    with socket.socket() as probe:  # a loopback port that nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    target = SshTarget(name="node0", host="127.0.0.1", port=port,
                       known_hosts=tmp_path / "known_hosts", connect_timeout=2.0)
    with pytest.raises(ConnectFailed) as raised:
        open_client(target)
    assert str(raised.value) == f"cannot connect to 127.0.0.1:{port}: connection refused"


@pytest.mark.parametrize("stderr", ["not installed: ray",
                                    "/root/etc/ray-start.sh: 19: exec: ray: not found",
                                    "bash: line 1: ray: command not found"])
def test_exit_127_of_a_launcher_script_names_the_program_it_execs_not_sh(stderr: str) -> None:
    """`sh DIR/ray-start.sh ENV TEMP ray start …`: a script file, whose `exec "$@"` found no
    `ray`; the shell (or the launcher) says which program on stderr."""
    from strixwizard.fixing.runner import command_error

    argv = ("sh", "/root/etc/ray-start.sh", "/root/etc/rccl.env", "/tmp/ray", "ray", "start")
    assert command_error(argv, 127, "", stderr) == \
        "`ray` is not installed on the node"


@pytest.mark.parametrize("key_mode", [0o644, 0o640, 0o604, 0o660])
def test_private_key_readable_by_others_is_refused(tmp_path: Path, key_mode: int) -> None:
    key = tmp_path / "id_ed25519"
    key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    key.chmod(key_mode)
    target = SshTarget(name="n", host="10.99.255.254", key_file=str(key),
                       known_hosts=tmp_path / "known_hosts", connect_timeout=0.1)
    with pytest.raises(NodeError, match=rf"permissions 0{key_mode:o}: .*chmod 600 {key}"):
        open_client(target)

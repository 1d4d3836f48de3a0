"""The programs sent to a node run on the node's own python3, whatever its version (3.8 and up):
the collector, exactly as the SSH session sends it (`python3 -` with the source on stdin), collects
this machine with every interpreter the machine has, and the snapshot is the one Debian's python3
collects: the same files, links and command outputs with the same readings, and the same doctor
report. The step runner, the program supervisor and the TCP ping-pong run on each interpreter
too.

What may differ between two collections is what the machine changed meanwhile, never the
interpreter: each collection is bracketed by two with the reference interpreter, and only what
differs between those two is left out. Readings that change by the second are compared by shape
(`/proc/meminfo` values but MemTotal, `cpu MHz`, address lifetimes, RDMA counters), and
`/proc/self` is the collecting process, so its PID is not compared. None of them comes from the
interpreter: the snapshot has no interpreter-specific field.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import pytest

from strixwizard.facts.spec import SPEC
from strixwizard.node.process import supervised_argv
from strixwizard.node.ssh import OPS_BOOTSTRAP, collector_script
from strixwizard.onnode import ops, pingpong
from strixwizard.probe.snapshot import SnapshotProbe
from tests.support.cli import run_cli
from tests.support.pythons import NODE_VERSIONS, available

#: The node's python3 the lab and the VM lab run: Debian's.
REFERENCE = "/usr/bin/python3" if Path("/usr/bin/python3").exists() else "python3"
PYTHONS = available(NODE_VERSIONS)
pytestmark = pytest.mark.pythons
Entries = dict[str, Any]


def node_env() -> dict[str, str]:
    return {key: value for key, value in os.environ.items()
            if not key.startswith("PYTHON") and key != "VIRTUAL_ENV"}


def collect_with(python: str, tmp: Path) -> bytes:
    """A snapshot `.tar.gz` from the collector run as the SSH session runs it, on `python`."""
    done = subprocess.run([python, "-"], input=collector_script(SPEC), capture_output=True, timeout=120,
                          cwd=tmp, env=node_env(), check=False)
    assert done.returncode == 0, f"{python}: the collector failed:\n{done.stderr.decode()}"
    assert done.stderr == b"", done.stderr.decode()
    return done.stdout


def entries(archive: bytes) -> Entries:
    """name → comparable content, with what is the collecting process's own or changes by the
    second reduced to its shape."""
    out: Entries = {}
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        self_pid = next((m.linkname for m in tar.getmembers() if m.name == "fs/proc/self"), None)
        for member in tar.getmembers():
            name = member.name
            if self_pid and name.startswith(f"fs/proc/{self_pid}/"):
                name = "fs/proc/<collector>/" + name.removeprefix(f"fs/proc/{self_pid}/")
            if member.issym():
                out[name] = ("link", "<collector>" if name == "fs/proc/self" else member.linkname)
                continue
            handle = tar.extractfile(member)
            assert handle is not None, name
            out[name] = normalised(name, handle.read())
    return out


def normalised(name: str, data: bytes) -> Any:
    text = data.decode("utf-8", "replace")
    if name == "meta.json":
        meta = json.loads(text)
        meta.pop("captured_at")
        return meta
    if name == "commands.json":
        return [normalised_command(entry) for entry in json.loads(text)]
    if name == "fs/proc/meminfo":
        return [line if line.startswith("MemTotal:") else line.split(":")[0]
                for line in text.splitlines()]
    if name == "fs/proc/cpuinfo":
        return re.sub(r"(?m)^cpu MHz\s*:.*$", "cpu MHz: <now>", text)
    if "/hw_counters/" in name:
        return "<counter>"
    return text


def normalised_command(entry: dict[str, Any]) -> dict[str, Any]:
    if entry["argv"][:3] == ["ip", "-j", "addr"] and entry["rc"] == 0:
        interfaces = json.loads(entry["stdout"])
        for interface in interfaces:
            for address in interface.get("addr_info", []):
                address.pop("valid_life_time", None)
                address.pop("preferred_life_time", None)
        return {**entry, "stdout": interfaces}
    return entry


def changed(before: Entries, after: Entries) -> set[str]:
    """Names whose presence or content changed between two collections."""
    return {name for name in before.keys() | after.keys() if before.get(name) != after.get(name)}


def report_of(archive: bytes, path: Path) -> dict[str, Any]:
    path.write_bytes(archive)
    done = run_cli("doctor", "--snapshot", str(path), "--json")
    assert done.rc in (0, 1), done.stderr
    report = done.json()
    report.pop("generated_at")
    for host in report["hosts"]:
        host.pop("address")
    return report


def test_this_machine_has_node_pythons_older_than_the_head() -> None:
    """The collector's promise (3.8+) is only tested where older interpreters exist."""
    if "3.8" not in PYTHONS:
        pytest.skip(f"no Python 3.8 on this machine (found {', '.join(PYTHONS) or 'none'})")
    assert {"3.8", "3.9", "3.10"} <= PYTHONS.keys()


@pytest.mark.parametrize("version", list(PYTHONS))
def test_the_collector_on_each_python_collects_what_the_reference_does(version: str,
                                                                        tmp_path: Path) -> None:
    before = collect_with(REFERENCE, tmp_path)
    archive = collect_with(PYTHONS[version], tmp_path)
    after = collect_with(REFERENCE, tmp_path)
    SnapshotProbe.from_bytes(archive, f"python {version}")  # what the head does with it
    reference, candidate, moving = entries(before), entries(archive), changed(entries(before),
                                                                              entries(after))
    assert {"meta.json", "commands.json", "fs/proc/cpuinfo"} <= candidate.keys()
    assert (candidate.keys() - moving) == (reference.keys() - moving), "a different set of files"
    different = sorted(name for name in reference.keys() - moving if candidate[name] != reference[name])
    assert different == [], f"python {version} read differently"
    if not moving:
        assert report_of(archive, tmp_path / "c.tar.gz") == report_of(before, tmp_path / "r.tar.gz")


@pytest.mark.parametrize("version", list(PYTHONS))
def test_the_step_runner_answers_on_each_python(version: str, tmp_path: Path) -> None:
    source = Path(ops.__file__).read_text(encoding="utf-8")
    target = tmp_path / "file"
    requests = [{"op": "ping"}, {"op": "replace", "path": str(target), "data": "x\n"},
                {"op": "read", "path": str(target)}, {"op": "run", "argv": ["echo", "hi"]},
                {"op": "delete", "path": str(target)}, {"op": "exists", "path": str(target)}]
    stdin = f"{len(source)}\n{source}" + "".join(json.dumps(r) + "\n" for r in requests)
    done = subprocess.run([PYTHONS[version], "-c", OPS_BOOTSTRAP], input=stdin.encode(),
                          capture_output=True, timeout=60, cwd=tmp_path, env=node_env(), check=False)
    assert done.returncode == 0, done.stderr.decode()
    answers = [json.loads(line) for line in done.stdout.decode().splitlines()]
    assert [a["ok"] for a in answers] == [True] * len(requests), answers
    assert answers[2]["value"] == "x\n"
    assert answers[3]["rc"] == 0 and answers[3]["stdout"] == "hi\n"
    assert answers[5]["value"] is None


def supervise(python: str, argv: list[str], limit_s: float, cwd: Path) -> tuple[int, bytes, bytes]:
    """Run argv under the supervisor with its stdin held open, as the SSH channel holds it."""
    with subprocess.Popen(supervised_argv(python, argv, limit_s), stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd,
                          env=node_env()) as process:
        try:
            status = process.wait(timeout=30)
        finally:
            process.kill()
        assert process.stdout is not None and process.stderr is not None
        return status, process.stdout.read(), process.stderr.read()


@pytest.mark.parametrize("version", list(PYTHONS))
def test_the_supervisor_runs_a_program_on_each_python(version: str, tmp_path: Path) -> None:
    status, out, err = supervise(PYTHONS[version], ["echo", "hi"], 10, tmp_path)
    assert (status, out) == (0, b"hi\n"), err.decode()
    status, out, err = supervise(PYTHONS[version], ["sleep", "30"], 0.5, tmp_path)
    assert status == 124, err.decode()


@pytest.mark.parametrize("version", list(PYTHONS))
def test_the_tcp_ping_pong_runs_on_each_python(version: str, tmp_path: Path) -> None:
    """Both ends on `version`, on loopback: the baseline `strixwizard test` measures beside RDMA."""
    python, source = PYTHONS[version], Path(pingpong.__file__).read_text(encoding="utf-8")
    with subprocess.Popen([python, "-c", source, "server", "127.0.0.1", "0", "20"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path,
                          env=node_env()) as server:
        try:
            assert server.stdout is not None
            listening = json.loads(server.stdout.readline())
            assert listening["event"] == "listening", listening
            client = subprocess.run([python, "-c", source, "client", "127.0.0.1", str(listening["port"]),
                                     "64", "50", "5", "10"], capture_output=True, timeout=60,
                                    cwd=tmp_path, env=node_env(), check=False)
            done = json.loads(server.stdout.readline())
            assert server.wait(timeout=30) == 0
        finally:
            server.kill()
    assert client.returncode == 0, client.stderr.decode()
    result = json.loads(client.stdout)
    assert (result["event"], len(result["rtt_ns"]), result["stopped_early"]) == ("result", 50, False)
    assert all(rtt > 0 for rtt in result["rtt_ns"])
    assert done == {"event": "done", "echoed": 55}

"""Which reads the collector sends through sudo on a node whose login user is not root
(`become: sudo`): only the command outputs declared `root=True` (facts/outputs.py); each goes
as `sudo -n -- python3 -c AS_ROOT ARGV` (the sudo rule strixwizard asks for is scoped to
python3) and is recorded under its own argv; every other read runs as the login user. The real
path (sshd refusing root, sudo's own log) is tests/test_sudo_lab.py."""

from __future__ import annotations

import io
import json
import os
import pwd
import subprocess
import sys
import tarfile
from typing import Any

from strixwizard.facts import declared
from strixwizard.facts.spec import SPEC
from strixwizard.node.ssh import collector_script
from strixwizard.onnode.collector import AS_ROOT, TarSink, as_root_argv, collect

SUDO = ["sudo", "-n", "--"]
#: The reads that need root, and why (docs/safety.md says the same to the user).
ROOT_READS = {"grubby.info", "mlnx_qos", "llama.programs", "llama.rpc_cache"}


def test_only_the_declared_root_reads_are_marked_root_in_the_spec() -> None:
    marked = {o.name for o in declared() if o.root}
    assert marked == ROOT_READS
    root_argvs = [c["argv"] for c in SPEC["commands"] if c.get("root")]
    assert len(root_argvs) == len([o for o in declared() if o.root and o.collect])
    plain = {c["argv"][0] for c in SPEC["commands"] if not c.get("root")}
    assert {"ip", "ethtool", "dcb", "devlink", "rdma", "ibv_devinfo"} <= plain


def _collected(spec: dict[str, Any], become: list[str] | None) -> tuple[list[list[str]], list[Any]]:
    ran: list[list[str]] = []

    def runner(argv: list[str]) -> dict[str, Any]:
        ran.append(argv)
        return {"argv": argv, "rc": 0, "stdout": "out\n", "stderr": ""}

    stream = io.BytesIO()
    collect(spec, TarSink(stream), "test", runner=runner, become=become)
    with tarfile.open(fileobj=io.BytesIO(stream.getvalue()), mode="r:gz") as tar:
        member = tar.extractfile("commands.json")
        assert member is not None
        return ran, json.loads(member.read())


def test_a_root_read_goes_through_the_prefix_and_is_recorded_under_its_own_argv() -> None:
    spec = {"files": [], "links": [], "commands": [
        {"argv": ["ip", "-j", "addr", "show"]}, {"argv": ["grubby", "--info=DEFAULT"], "root": True}]}
    ran, recorded = _collected(spec, SUDO)
    assert ran == [["ip", "-j", "addr", "show"],
                   [*SUDO, "python3", "-c", AS_ROOT, "grubby", "--info=DEFAULT"]]
    assert [r["argv"] for r in recorded] == [["ip", "-j", "addr", "show"], ["grubby", "--info=DEFAULT"]]
    # a root login (no prefix): everything runs as it is
    ran, _ = _collected(spec, None)
    assert ran == [["ip", "-j", "addr", "show"], ["grubby", "--info=DEFAULT"]]


def test_the_script_sent_to_a_sudo_node_carries_the_prefix_and_a_root_login_none() -> None:
    tail = collector_script(SPEC, "sudo").decode().rstrip().splitlines()[-1]
    assert tail.endswith(", ['sudo', '-n', '--'])")
    assert collector_script(SPEC).decode().rstrip().splitlines()[-1].endswith(", None)")


def test_as_root_runs_the_program_in_the_c_locale_with_the_runners_home() -> None:
    # run without sudo here: what the one-line program does once sudo has started it
    env = dict(os.environ, HOME="/nonexistent", LANG="de_DE.UTF-8")
    done = subprocess.run([sys.executable, "-c", AS_ROOT, "sh", "-c", 'echo "$LC_ALL $HOME"'],
                          capture_output=True, text=True, env=env, check=False)
    home = pwd.getpwuid(os.geteuid()).pw_dir
    assert (done.returncode, done.stdout) == (0, f"C {home}\n")
    missing = subprocess.run([sys.executable, "-c", AS_ROOT, "no-such-tool-here", "-x"],
                             capture_output=True, text=True, check=False)
    assert (missing.returncode, missing.stderr) == (127, "no-such-tool-here: command not found\n")
    assert "\n" not in AS_ROOT  # one line in sudo's log
    assert as_root_argv(["grubby"], SUDO)[:5] == [*SUDO, "python3", "-c"]

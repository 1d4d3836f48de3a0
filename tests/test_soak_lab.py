"""`strixwizard test soak` for real between two lab namespaces (their own sshd, a veth fabric
link): both directions at once over SSH-started node programs, every block checked; nothing of
the soak left running on the nodes afterwards."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import run_cli
from tests.lab import Lab, lab_fixture

soaklab2 = lab_fixture(2, name="soaklab2")


def test_clean_soak_over_the_fabric_veth_passes_with_both_directions(soaklab2: Lab,
                                                                     tmp_path: Path) -> None:
    site = soaklab2.write_site_yaml(tmp_path / "lab.yaml")
    result = run_cli("test", "soak", "--site", str(site), "--pair", "node0,node1", "--json",
                     "--seconds", "3", "--bytes", str(64 << 20), "--no-history", timeout=120)
    doc = result.json()
    soak = next(r for r in doc["results"] if r["kind"] == "soak")
    assert soak["status"] == "pass", soak
    directions = soak["detail"]["directions"]
    assert [(d["from"], d["to"]) for d in directions] == [("node0", "node1"), ("node1", "node0")]
    assert all(d["bytes"] > 0 and d["corrupted"] == d["dropped"] == d["duplicated"] == 0
               for d in directions)
    assert str(soaklab2.hosts[1].fabric_addr) in soak["path"]
    assert result.rc == 0, result.stdout + result.stderr
    for host in soaklab2.hosts[:2]:  # nothing of the soak left on the nodes
        ps = host.run_in_node(["ps", "-eo", "args"]).stdout
        assert "soak" not in ps, ps


def test_soak_is_refused_in_the_demo_with_the_reason() -> None:
    result = run_cli("test", "soak", "--demo", timeout=60)
    assert result.rc == 2
    assert "the demo has none" in result.stderr


def _soak_running(host: object) -> bool:
    return "soak" in host.run_in_node(["ps", "-eo", "args"]).stdout  # type: ignore[attr-defined]


def test_ctrl_c_stops_the_soak_and_leaves_nothing_on_the_nodes(soaklab2: Lab, tmp_path: Path
                                                               ) -> None:
    site = soaklab2.write_site_yaml(tmp_path / "lab.yaml")
    env = dict(os.environ)
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen([sys.executable, "-m", "strixwizard", "test", "soak", "--site",
                             str(site), "--pair", "node0,node1", "--seconds", "60",
                             "--no-history"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True, env=env)
    try:
        deadline = time.monotonic() + 30
        while not all(_soak_running(h) for h in soaklab2.hosts[:2]):
            assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
            time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130 and "interrupted" in err
    deadline = time.monotonic() + 10
    while any(_soak_running(h) for h in soaklab2.hosts[:2]):
        assert time.monotonic() < deadline, "a soak program was left running on a node"
        time.sleep(0.2)

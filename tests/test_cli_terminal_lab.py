"""The plain CLI on live lab nodes saying hostile words (issue 22): a fabric interface named with
terminal escapes (Linux allows ESC and BEL in a name) and a kernel release with `[/]` and a
clear-screen sequence (bind-mounted over /proc/sys/kernel/osrelease inside the node's own mount
namespace). `doctor`, `capture` → `doctor --snapshot` and `test latency` print all of it spelled
out; the JSON keeps it exact."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli import run_cli
from tests.support.hostile.strings import contains_control
from tests.support.lab import Lab, lab_fixture
from tests.support.netdevs import rename

hostiletextlab = lab_fixture(2, name="hostiletextlab")
ESCAPED_NAME = "e\x1b]0;PWND\x07"  # 10 bytes: an interface name Linux takes
KERNEL = "6.1.0[/]\x1b[2J"
RELEASE = "/proc/sys/kernel/osrelease"


@pytest.fixture
def lab(hostiletextlab: Lab) -> Iterator[Lab]:
    for host in hostiletextlab.hosts:
        rename(host, "fab0", ESCAPED_NAME)
        release = host.dir / "osrelease"
        release.write_text(KERNEL + "\n")
        host.run_in_node(["mount", "--bind", str(release), RELEASE], check=True)
    yield hostiletextlab
    for host in hostiletextlab.hosts:
        host.run_in_node(["umount", RELEASE], check=True)
        rename(host, ESCAPED_NAME, "fab0")


def _home(lab: Lab, tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True, exist_ok=True)
    (home / ".ssh" / "known_hosts").write_text(lab.known_hosts.read_text())
    return {"HOME": str(home), "XDG_STATE_HOME": str(tmp_path / "state")}


def test_doctor_spells_out_a_live_nodes_escapes(lab: Lab, tmp_path: Path) -> None:
    site = lab.write_site_yaml(tmp_path / "lab.yaml")
    env = _home(lab, tmp_path)
    assert lab.hosts[0].run_in_node(["cat", RELEASE], check=True).stdout == KERNEL + "\n"
    for verbose in ((), ("--verbose",)):
        result = run_cli("doctor", "--site", str(site), *verbose, env=env, timeout=120)
        assert result.rc in (1, 2), result.stdout + result.stderr
        text = result.stdout + result.stderr
        assert not contains_control(text), [line for line in text.splitlines() if contains_control(line)]
        header = [line for line in result.stdout.splitlines() if line.startswith("  node0:")]
        assert header and "kernel 6.1.0[/]\\x1b[2J" in header[0], result.stdout
    assert "e\\x1b]0;PWND\\x07" in result.stdout  # the interface, in --verbose's findings
    exact = run_cli("doctor", "--site", str(site), "--json", env=env, timeout=120).json()
    assert {h["facts"]["kernel"] for h in exact["hosts"]} == {KERNEL}
    assert any(ESCAPED_NAME in link["id"] for link in exact["links"]), exact["links"]
    # the same nodes as a support bundle, replayed anywhere: the same words, spelled out
    bundle = tmp_path / "bundle"
    captured = run_cli("capture", "--site", str(site), "--out", str(bundle), env=env, timeout=120)
    assert captured.rc == 0 and not contains_control(captured.stdout + captured.stderr)
    replayed = run_cli("doctor", "--verbose", "--snapshot", *map(str, sorted(bundle.glob("*.tar.gz"))))
    assert replayed.rc in (1, 2) and not contains_control(replayed.stdout + replayed.stderr)
    assert "kernel 6.1.0[/]\\x1b[2J" in replayed.stdout and "e\\x1b]0;PWND\\x07" in replayed.stdout
    # `test latency` measures TCP over the interface and names it, spelled out
    tested = run_cli("test", "latency", "--site", str(site), "--pair", "node0,node1", "--seconds", "1",
                     "--no-history", env=env, timeout=180)
    assert tested.rc in (1, 2), tested.stdout + tested.stderr  # no RDMA in the lab: no verdict
    assert not contains_control(tested.stdout + tested.stderr)
    assert "e\\x1b]0;PWND\\x07" in tested.stdout + tested.stderr

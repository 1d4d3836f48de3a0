"""Live lab nodes saying hostile words (issue 22): a fabric interface named with terminal escapes
(Linux allows ESC and BEL in a name), a kernel release with `[/]` and a clear-screen sequence
(bind-mounted over /proc/sys/kernel/osrelease inside the node's own mount namespace), and an
`ip -j addr show` whose "inet" address injects a node into site.yaml (a stand-in `ip` on each
node, wrapping the real one). `doctor` and `capture` → `doctor --snapshot` print all of it
spelled out, `init` writes no ghost."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from strixwizard.site import load_site
from tests.support.cli import run_cli
from tests.support.hostile.strings import contains_control
from tests.support.lab import Lab, LabHost, lab_fixture

hostiletextlab = lab_fixture(2, name="hostiletextlab")
ESCAPED_NAME = "e\x1b]0;PWND\x07"  # 10 bytes: an interface name Linux takes
KERNEL = "6.1.0[/]\x1b[2J"
RELEASE = "/proc/sys/kernel/osrelease"


def rename(host: LabHost, old: str, new: str) -> None:
    for argv in (["ip", "link", "set", "dev", old, "down"],
                 ["ip", "link", "set", "dev", old, "name", new],
                 ["ip", "link", "set", "dev", new, "up"]):
        host.run_in_ns(argv, check=True)


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


def _hostile_ip(host: LabHost, real_ip: str, address: str) -> None:
    """A stand-in `ip` for `host`: the real one, with `address` put first as an "inet" address of
    the fabric interface in `ip -j addr show` (what a hostile node's `ip` may print)."""
    host.stand_in("ip", f"""#!/bin/sh
if [ "$*" = "-j addr show" ]; then
  exec python3 -c '
import json, subprocess
shown = subprocess.run([{json.dumps(real_ip)}, "-j", "addr", "show"], capture_output=True, text=True)
links = json.loads(shown.stdout)
for link in links:
    infos = link.get("addr_info", [])
    if any(i.get("local") == {json.dumps(host.fabric_addr)} for i in infos):
        infos.insert(0, dict(family="inet", local={json.dumps(address)}, prefixlen=64, scope="global"))
print(json.dumps(links))'
fi
exec {real_ip} "$@"
""")


def test_init_writes_no_node_a_live_nodes_address_injects(hostiletextlab: Lab, tmp_path: Path) -> None:
    """Both nodes report an "inet" address in one subnet whose IPv6 scope id carries YAML (as
    in the issue): it used to become their fabric_address and a node `ghost` of site.yaml."""
    lab = hostiletextlab
    real_ip = shutil.which("ip")
    assert real_ip is not None
    for index, host in enumerate(lab.hosts):
        _hostile_ip(host, real_ip, f"2001:db8::{index + 1}%x\n  - name: ghost\n    host: 10.99.10.99")
    try:
        out = tmp_path / "site.yaml"
        nodes = [arg for h in lab.hosts for arg in ("--node", f"{h.name}=root@{h.mgmt_addr}")]
        result = run_cli("init", "--out", str(out), *nodes, "--key", str(lab.client_key),
                         env=_home(lab, tmp_path), timeout=120)
    finally:
        for host in lab.hosts:
            (host.bin_dir / "ip").unlink()
    assert result.rc == 0, result.stderr
    assert not contains_control(result.stdout + result.stderr)
    site = load_site(out)
    assert [n.name for n in site.nodes] == [h.name for h in lab.hosts]
    assert all(n.host in {h.mgmt_addr for h in lab.hosts} for n in site.nodes)
    assert [n.fabric_address for n in site.nodes] == [h.fabric_addr for h in lab.hosts]  # the real ones
    text = out.read_text()
    assert "ghost" not in "".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    assert "- name: ghost" not in text
    assert json.dumps(lab.hosts[1].name) in text  # every value it did not type is quoted

"""`strixwizard init` on live lab nodes that report hostile words (issue 22): an `ip -j addr show`
whose "inet" address injects a node into site.yaml (a stand-in `ip` on each node, wrapping the
real one); init writes no ghost and quotes every value it did not type."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from strixwizard.site import load_site
from tests.support.cli import run_cli
from tests.support.hostile.strings import contains_control
from tests.support.lab import Lab, LabHost, lab_fixture

hostiletextlab = lab_fixture(2, name="hostiletextlab")


def _home(lab: Lab, tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True, exist_ok=True)
    (home / ".ssh" / "known_hosts").write_text(lab.known_hosts.read_text())
    return {"HOME": str(home), "XDG_STATE_HOME": str(tmp_path / "state")}


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

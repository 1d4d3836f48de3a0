"""The Ansible export never lets Jinja evaluate a value read from a node: a NetworkManager
connection named `{{ lookup('pipe', 'touch MARKER') }}` goes through the real
`ansible-playbook --check` as text."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

from fixes import FIXES
from strixwizard.demo.hardware import RoceSetup, e810
from strixwizard.demo.scenarios import strix_halo_node
from strixwizard.discovery import Discovery
from strixwizard.fixing.ansible import emit
from strixwizard.fixing.planning import plan_site
from strixwizard.site import Fabric, NodeSpec, Site
from tests.support import scenarios
from tests.support.ansible import UnsafeLoader, ansible_playbook


def test_hostile_connection_name_is_never_templated(tmp_path: Path) -> None:
    marker = tmp_path / "MARKER"
    hostile = f"{{{{ lookup('pipe', 'touch {marker}') }}}}"
    node = strix_halo_node("strix-b")
    e810(node, "192.168.100.2/30", "b4:96:91:9c:41:d8",
         setup=RoceSetup(mtu=1500, roce_mode="RoCE v2"))
    node.command(["nmcli", "-t", "-f", "DEVICE,TYPE,STATE,CONNECTION", "device", "status"],
                 f"enp194s0np0:ethernet:connected:{hostile}\n")
    facts = scenarios.facts_of(tmp_path / "facts", {"node-b": node})
    site = Site(name="t", nodes=(NodeSpec(name="node-b", snapshot="node-b"),),
                fabric=Fabric(mtu=9000))
    plan = plan_site(Discovery.of_facts(site, list(facts.values())), ("net.mtu",), fixes=FIXES)
    argvs = [s.argv for p in plan.plans for s in p.steps]
    assert any(hostile in argv for argv in argvs), argvs  # the plan carries the name as data

    inventory, playbook = emit(plan, site, tmp_path / "ansible")
    text = playbook.read_text()
    assert "!unsafe" in text
    plays = yaml.load(text, Loader=UnsafeLoader)
    names = [t["name"] for t in plays[0]["tasks"]]
    assert any(hostile in name for name in names)
    # run it here: a local connection, no privilege change, check mode
    inventory.write_text("all:\n  hosts:\n    node-b:\n      ansible_connection: local\n")
    env = dict(os.environ, LC_ALL="C.UTF-8", ANSIBLE_NOCOLOR="1",
               ANSIBLE_PYTHON_INTERPRETER=sys.executable, ANSIBLE_LOCAL_TEMP=str(tmp_path / "t"),
               ANSIBLE_HOME=str(tmp_path / "home"))
    done = subprocess.run([ansible_playbook(), "--check", "-e", "ansible_become=false",
                           "-i", str(inventory), str(playbook)], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=240, check=False)
    output = done.stdout + done.stderr
    assert "failed=0" in output and "unreachable=0" in output, output
    assert not marker.exists(), "Jinja evaluated a value read from the node"
    assert "lookup('pipe'" in output  # the task name is shown as text


def test_site_file_values_in_the_inventory_are_unsafe(tmp_path: Path) -> None:
    from strixwizard.fixing.model import Plan, SitePlan

    site = Site(name="t", nodes=(NodeSpec(name="n1", host="{{ lookup('env', 'HOME') }}",
                                          user="root"),))
    emit(SitePlan("t", plans=[Plan("net.mtu", "n1", "fab0")]), site, tmp_path)
    text = (tmp_path / "inventory.yml").read_text()
    assert "ansible_host: !unsafe '{{ lookup(''env'', ''HOME'') }}'" in text

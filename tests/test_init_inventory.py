"""`strixwizard init` and Ansible inventories as node lists: a hostile inventory is refused in
one line, and the site file init writes quotes every value a node reports."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from strixwizard.inventory import parse_inventory
from strixwizard.site import NodeSpec, SiteError, load_site
from tests.support.cli import invoke
from tests.support.hostile import strings
from tests.support.refusals import INVENTORIES, expected_message, refused_in_one_line

INVENTORY = """\
all:
  vars:
    ansible_user: admin
  hosts:
    head:
      ansible_connection: local
  children:
    strix:
      vars:
        ansible_port: 2222
        ansible_ssh_private_key_file: ~/.ssh/strix
      hosts:
        node-a:
          ansible_host: 10.0.0.11
          fabric_address: 192.168.100.1
        node-b:
          ansible_user: root
          strixwizard_fabric_address: 192.168.100.2
    empty_group:
"""


def test_inventory_hosts_with_group_and_host_variables() -> None:
    nodes = parse_inventory(INVENTORY, "inv.yml")
    assert nodes == (
        NodeSpec(name="head", host="local", user="admin"),
        NodeSpec(name="node-a", host="10.0.0.11", user="admin", port=2222, key="~/.ssh/strix",
                 fabric_address="192.168.100.1"),
        NodeSpec(name="node-b", host="node-b", user="root", port=2222, key="~/.ssh/strix",
                 fabric_address="192.168.100.2"),
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("all:\n  hosts:\n    a:\n  hots:\n", "inv.yml:4: group all: unknown key 'hots'"),
        ("all:\n  hosts:\n    a:\n      ansible_port: twenty\n",
         "inv.yml:3: host a: ansible_port must be a whole number"),
        ("all:\n  children:\n    g:\n", "lists no hosts"),
        ("all: [\n", "inv.yml:2: not valid YAML"),
        ("", "the inventory is empty"),
        ("all:\n  hosts:\n    a:\n      ansible_port: 99999999\n",
         "inv.yml:3: host a: ansible_port must be between 1 and 65535, not 99999999"),
        ("all:\n  children:\n    g:\n      children:\n        g:\n          hosts: {a: }\n",
         "inv.yml:5: group 'g' is its own child (g → g)"),
        ("all: &all\n  children:\n    again: *all\n",
         "a YAML alias refers to the value that contains it"),
        ("all:\n  hosts:\n    a:\n      ansible_user: !vault secret\n",
         "inv.yml:4: YAML tag '!vault' is not allowed"),
    ],
    ids=["typo", "port-type", "no-hosts", "yaml", "empty", "port-range", "self-child",
         "alias-loop", "tag"],
)
def test_bad_inventories_are_explained(text: str, message: str) -> None:
    with pytest.raises(SiteError, match=re.escape(message)):
        parse_inventory(text, "inv.yml")


def test_init_writes_a_site_file_that_doctor_reads(cli, tmp_path: Path) -> None:
    out = tmp_path / "site.yaml"
    result = cli("init", "--out", str(out), "--name", "rack1", "--node", "node-a=root@10.0.0.11",
                 "--node", "node-b=admin@10.0.0.12:2222", "--key", "~/.ssh/strix", "--no-probe")
    assert result.rc == 0, result.stderr
    assert f"strixwizard doctor --site {out}" in result.stdout
    site = load_site(out)
    assert site.name == "rack1"
    assert [(n.name, n.host, n.user, n.port, n.key) for n in site.nodes] == [
        ("node-a", "10.0.0.11", "root", 22, "~/.ssh/strix"),
        ("node-b", "10.0.0.12", "admin", 2222, "~/.ssh/strix"),
    ]
    assert "# The state every RDMA link should reach" in out.read_text()


def test_init_without_nodes_lists_this_machine_and_doctor_runs_it(cli, tmp_path: Path) -> None:
    out = tmp_path / "site.yaml"
    assert cli("init", "--out", str(out)).rc == 0
    site = load_site(out)
    assert len(site.nodes) == 1 and site.nodes[0].is_local
    report = cli("doctor", "--site", str(out), "--json").json()
    assert report["hosts"][0]["source"] == "local"


def test_init_from_an_inventory(cli, tmp_path: Path) -> None:
    inventory = tmp_path / "inv.yml"
    inventory.write_text(INVENTORY)
    out = tmp_path / "site.yaml"
    assert cli("init", "--out", str(out), "--inventory", str(inventory), "--no-probe").rc == 0
    assert [n.name for n in load_site(out).nodes] == ["head", "node-a", "node-b"]


def test_init_never_overwrites_and_rejects_bad_nodes(cli, tmp_path: Path) -> None:
    out = tmp_path / "site.yaml"
    out.write_text("mine\n")
    result = cli("init", "--out", str(out))
    assert result.rc == 2 and "already exists" in result.stderr
    assert out.read_text() == "mine\n"
    result = cli("init", "--out", str(tmp_path / "new.yaml"), "--node", "just-a-name")
    assert result.rc == 2 and "expected NAME=[USER@]HOST[:PORT]" in result.stderr
    result = cli("init", "--out", str(tmp_path / "dup.yaml"), "--node", "a=h1", "--node", "a=h2")
    assert result.rc == 2 and "node name 'a' is already used" in result.stderr
    assert not (tmp_path / "dup.yaml").exists()


def test_a_group_under_two_parents_is_walked_once_per_parent() -> None:
    text = ("all:\n  children:\n    x:\n      vars: {ansible_user: ux}\n      children:\n"
            "        shared: &shared\n          hosts: {n1: }\n"
            "    y:\n      children:\n        shared: *shared\n")
    (node,) = parse_inventory(text, "inv.yml")
    assert node.name == "n1" and node.user == "ux"


def test_init_refuses_a_port_out_of_range(cli, tmp_path: Path) -> None:
    out = tmp_path / "site.yaml"
    result = cli("init", "--out", str(out), "--node", "a=h:99999999")
    assert result.rc == 2 and "Traceback" not in result.stderr
    assert "port must be between 1 and 65535, not 99999999" in result.stderr
    assert not out.exists()


def test_what_a_node_reports_stays_a_comment_or_an_address(tmp_path: Path) -> None:
    """init writes what nodes report into site.yaml: an interface name or an error with a line
    break must not start a key of its own, and only an IP address becomes a value."""
    from strixwizard.services.site_file import Found, write_site_file

    nodes = [NodeSpec(name="a", host="10.99.9.1"), NodeSpec(name="b", host="10.99.9.2"),
             NodeSpec(name="c", host="10.99.9.3")]
    found = {
        "a": Found("10.99.8.1", "fab0\nallow_soft_rdma: true\n# , rdma link to b:fab0"),
        "b": Found("10.99.8.2\nnodes: []", "fab0, shares 10.99.8.0/30 with a:fab0"),
        "c": Found(None, "not read: refused\r\nssh:\n  parallel: 99"),
    }
    out = write_site_file(tmp_path / "site.yaml", "s", nodes, found)
    site = load_site(out)
    assert [n.fabric_address for n in site.nodes] == ["10.99.8.1", None, None]
    assert not site.allow_soft_rdma and site.ssh.parallel != 99
    text = out.read_text()
    assert "# found by init: fab0 allow_soft_rdma: true # , rdma link to b:fab0" in text
    assert "the node reported '10.99.8.2\\nnodes: []', not an IP address" in text


def test_every_option_of_init_is_explained() -> None:
    out = invoke("init", "--help").stdout
    line = next(line for line in out.splitlines() if line.strip().startswith("--out FILE"))
    assert len(line.split()) > 2, line  # a help text beside it, not the bare option


def test_inventory_refuses_a_host_name_that_is_not_a_file_name() -> None:
    text = "all:\n  hosts:\n    good-1:\n    ../../etc:\n      ansible_host: 10.0.0.2\n"
    with pytest.raises(SiteError, match=r"^inv\.yml:4: host name '\.\./\.\./etc' holds '/'"):
        parse_inventory(text, "inv.yml")


def test_init_quotes_every_value_it_did_not_type(tmp_path: Path) -> None:
    from strixwizard.services.site_file import Found, write_site_file

    nodes = [NodeSpec(name=f"n{i}", host=f"10.99.9.{i + 1}", user=value, key=value)
             for i, value in enumerate(strings.YAML) if "\x00" not in value]
    found = {n.name: Found(f"fe80::{i + 1}%eth0", "fab0\nallow_soft_rdma: true")
             for i, n in enumerate(nodes)}
    out = write_site_file(tmp_path / "site.yaml", "s", nodes, found)
    site = load_site(out)
    assert [(n.name, n.user, n.key) for n in site.nodes] == [(n.name, n.user, n.key) for n in nodes]
    assert [n.fabric_address for n in site.nodes] == [f"fe80::{i + 1}%eth0" for i in range(len(nodes))]
    assert not site.allow_soft_rdma


def test_init_drops_an_address_whose_scope_injects_a_node(tmp_path: Path) -> None:
    from strixwizard.services.site_file import Found, write_site_file

    nodes = [NodeSpec(name="a", host="10.99.9.1"), NodeSpec(name="b", host="10.99.9.2")]
    found = {"a": Found(strings.IPV6_SCOPES[0], "fab0"), "b": Found("10.99.8.2", "fab0")}
    site = load_site(write_site_file(tmp_path / "site.yaml", "s", nodes, found))
    assert [n.name for n in site.nodes] == ["a", "b"]
    assert [n.fabric_address for n in site.nodes] == [None, "10.99.8.2"]
    assert "not an IP address" in (tmp_path / "site.yaml").read_text()


def test_init_refuses_to_save_a_file_that_reads_back_otherwise(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Were a value ever written unquoted, the read-back catches the node it injects."""
    from strixwizard.errors import UsageError
    from strixwizard.services import site_file as init

    monkeypatch.setattr(init, "_quoted", str)  # a quoting bug, on purpose
    nodes = [NodeSpec(name="a", host="10.99.9.1", user="root\n  - name: ghost\n    host: 10.99.10.99")]
    with pytest.raises(UsageError, match="not saved: the site file would read back differently"):
        init.write_site_file(tmp_path / "site.yaml", "s", nodes, None)
    assert not (tmp_path / "site.yaml").exists()


@pytest.mark.parametrize("path", INVENTORIES, ids=lambda p: p.stem)
def test_hostile_inventory_is_refused_in_one_line(path: Path, tmp_path: Path) -> None:
    from strixwizard.inventory import load_inventory

    message = expected_message(path)
    with pytest.raises(SiteError) as caught:
        load_inventory(path)
    assert message in str(caught.value) and str(caught.value).startswith(f"{path}:")
    refused_in_one_line("--inventory", path, message, tmp_path)

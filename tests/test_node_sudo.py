"""Nodes whose login user is not root (`become: sudo`): the site file and inventory say so,
`init` writes it, the target carries it into journals, every remote command runs behind
`sudo -n --`, and a refusal is one error naming the node, the user and the cure.
The real path (sshd refusing root, sudo's own answers) is tests/test_sudo_lab.py."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from strixwizard.errors import UsageError
from strixwizard.inventory import parse_inventory
from strixwizard.node.command import as_root, remote_command
from strixwizard.node.errors import NodeError, SudoRefused
from strixwizard.node.ssh import sudo_refusal, sudo_rule
from strixwizard.node.target import SshTarget, target_for, target_from_json
from strixwizard.services.site_file import parse_node_argument
from strixwizard.site import SiteError, load_site, parse_site

NODE = "site: s\nnodes:\n  - name: a\n    host: 10.0.0.11\n    user: alice\n"


def test_every_remote_command_of_a_sudo_node_runs_behind_sudo_n() -> None:
    argv = ["python3", "-c", "print('$(id)')"]
    assert shlex.split(remote_command(argv, "sudo")) == ["sudo", "-n", "--", *argv]
    assert remote_command(argv) == remote_command(as_root(argv))  # a root login: as it was
    with pytest.raises(ValueError, match="no way to become root named 'doas'"):
        as_root(argv, "doas")


def test_the_site_file_says_become_sudo_and_refuses_other_words(tmp_path: Path) -> None:
    site = parse_site(NODE + "    become: sudo\n", "site.yaml")
    assert (site.nodes[0].user, site.nodes[0].become) == ("alice", "sudo")
    assert parse_site(NODE, "site.yaml").nodes[0].become is None  # files from before still read
    with pytest.raises(SiteError, match=re.escape("site.yaml:6: nodes[0].become must be sudo (or "
                                                  "left out: the login user is root), not 'doas'")):
        parse_site(NODE + "    become: doas\n", "site.yaml")
    with pytest.raises(SiteError, match=re.escape("site.yaml:6: nodes[0].become must name how to "
                                                  "become root: `become: sudo`, not 'true'")):
        parse_site(NODE + "    become: true\n", "site.yaml")
    with pytest.raises(SiteError, match="become: sudo is for a node reached over SSH"):
        parse_site("site: s\nnodes:\n  - name: a\n    host: local\n    become: sudo\n", "site.yaml")


def test_the_target_carries_become_into_journals_and_back(tmp_path: Path) -> None:
    path = tmp_path / "site.yaml"
    path.write_text(NODE + "    become: sudo\n")
    site = load_site(path)
    target = target_for(site, site.nodes[0])
    assert isinstance(target, SshTarget) and target.become == "sudo"
    assert target.where == "ssh alice@10.0.0.11 (sudo)"
    assert target_from_json("a", target.to_json()) == target
    plain = SshTarget("a", "10.0.0.11")
    assert "become" not in plain.to_json() and plain.where == "ssh root@10.0.0.11"


def test_init_writes_become_for_each_node_it_reaches_over_ssh(cli, tmp_path: Path) -> None:
    out = tmp_path / "site.yaml"
    done = cli("init", "--out", str(out), "--no-probe", "--become", "sudo",
               "--node", "a=alice@10.0.0.11", "--node", "here=local")
    assert done.rc == 0, done.stderr
    assert [(n.name, n.become) for n in load_site(out).nodes] == [("a", "sudo"), ("here", None)]
    assert parse_node_argument("a=alice@h", None, "sudo").become == "sudo"
    refused = cli("init", "--out", str(tmp_path / "x.yaml"), "--become", "sudo")
    assert refused.rc == 2 and "--become goes with --node" in refused.stderr


def test_an_inventory_says_it_with_ansible_become() -> None:
    text = ("all:\n  vars:\n    ansible_user: alice\n    ansible_become: true\n  hosts:\n"
            "    a:\n    b:\n      ansible_become: false\n    c:\n      ansible_become_method: sudo\n")
    assert [n.become for n in parse_inventory(text, "inv.yml")] == ["sudo", None, "sudo"]
    with pytest.raises(SiteError, match="ansible_become_method 'su' is not one strixwizard uses"):
        parse_inventory(text.replace("method: sudo", "method: su"), "inv.yml")


def test_a_refused_sudo_names_node_user_what_sudo_said_and_the_rule() -> None:
    target = SshTarget("node-b", "10.0.0.12", "alice", become="sudo")
    error = SudoRefused(sudo_refusal(target, "sudo: a password is required"))
    assert isinstance(error, NodeError) and isinstance(error, UsageError)  # exit 2, not unreachable
    message = str(error)
    assert "\n" not in message
    assert message.startswith("node-b: alice@10.0.0.12 may not run commands as root through "
                              "`sudo -n` (it said: sudo: a password is required)")
    assert ("echo 'alice ALL=(root) NOPASSWD: /usr/bin/python3' > /etc/sudoers.d/strixwizard "
            "&& chmod 0440 /etc/sudoers.d/strixwizard && visudo -c") in message
    assert message.endswith("Nothing was changed on any node.")
    # a user name that is not plain never reaches the line to paste
    assert sudo_rule("x'; rm -rf / #") == "USER ALL=(root) NOPASSWD: /usr/bin/python3"

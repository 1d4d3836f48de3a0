"""An Ansible YAML inventory as the node list of a site.

Hosts are gathered from every group (`all`, its `children`, theirs...), with
variables merged from the outermost group to the host itself, as Ansible does.
Understood host variables: `ansible_host`, `ansible_user`, `ansible_port`,
`ansible_ssh_private_key_file`, and `fabric_address` (also spelled
`strixwizard_fabric_address`). A host whose `ansible_connection` is `local`
is probed locally. `ansible_become: true` (with `ansible_become_method` `sudo`, Ansible's
default, or unset) is `become: sudo`: commands run there as `sudo -n -- ...`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from strixwizard.become import BECOME_METHODS
from strixwizard.site import (
    FieldError,
    NodeSpec,
    SiteError,
    YamlReader,
    compose_yaml,
    name_problem,
    read_text_file,
)

GROUP_KEYS = ("hosts", "children", "vars")
#: Groups nested deeper than this are refused (Ansible inventories are a few levels deep).
MAX_GROUP_DEPTH = 32
#: Group entries walked in all (a group under several parents counts once per parent).
MAX_GROUP_VISITS = 10_000


class _Inventory:
    def __init__(self, source: str) -> None:
        self.reader = YamlReader(source)
        self.group_vars: dict[str, dict[str, Any]] = {}  # merged from every group of a host
        self.host_vars: dict[str, dict[str, Any]] = {}  # set on the host itself: win over groups
        self.lines: dict[str, int] = {}
        self.visits = 0

    def scalars(self, node: yaml.Node, what: str) -> dict[str, Any]:
        if isinstance(node, yaml.ScalarNode) and node.value in ("", "~", "null"):
            return {}
        out: dict[str, Any] = {}
        for key, (_, value_node) in self.reader.mapping(node, what).items():
            if not isinstance(value_node, yaml.ScalarNode):
                raise self.reader.error(value_node, f"{what}.{key} must be a single value")
            out[key] = self.reader.construct(value_node, f"{what}.{key}")
        return out

    def group(self, node: yaml.Node, name: str, inherited: dict[str, Any],
              ancestors: tuple[str, ...] = (), key_node: yaml.Node | None = None) -> None:
        """Walk one group; `ancestors` are the names of the groups above it, outermost first."""
        path = ".".join((*ancestors, name))
        if name in ancestors:
            loop = " → ".join((*ancestors[ancestors.index(name):], name))
            raise self.reader.error(key_node or node, f"group {name!r} is its own child ({loop})")
        if len(ancestors) >= MAX_GROUP_DEPTH:
            raise self.reader.error(node, f"group {path}: groups nest deeper than "
                                    f"{MAX_GROUP_DEPTH} levels")
        self.visits += 1
        if self.visits > MAX_GROUP_VISITS:
            raise self.reader.error(node, f"the inventory expands to more than {MAX_GROUP_VISITS} "
                                    "group entries (YAML aliases repeating groups?)")
        if isinstance(node, yaml.ScalarNode) and node.value in ("", "~", "null"):
            return
        entries = self.reader.mapping(node, f"group {path}")
        for key, (key_node, _) in entries.items():
            if key not in GROUP_KEYS:
                raise self.reader.error(
                    key_node, f"group {path}: unknown key {key!r} (an inventory group has "
                    f"{', '.join(GROUP_KEYS)})"
                )
        variables = dict(inherited)
        if "vars" in entries:
            variables.update(self.scalars(entries["vars"][1], f"{path}.vars"))
        if "hosts" in entries:
            hosts_node = entries["hosts"][1]
            if not (isinstance(hosts_node, yaml.ScalarNode) and hosts_node.value in ("", "~", "null")):
                for name, (key_node, host_node) in self.reader.mapping(hosts_node, f"{path}.hosts").items():
                    self.group_vars.setdefault(name, {}).update(variables)
                    self.host_vars.setdefault(name, {}).update(self.scalars(host_node, f"host {name}"))
                    self.lines.setdefault(name, key_node.start_mark.line + 1)
        if "children" in entries:
            children_node = entries["children"][1]
            if not (isinstance(children_node, yaml.ScalarNode) and children_node.value in ("", "~", "null")):
                children = self.reader.mapping(children_node, f"{path}.children")
                for child, (child_key, child_node) in children.items():
                    self.group(child_node, child, variables, (*ancestors, name), child_key)


def _node(name: str, variables: dict[str, Any], where: str) -> NodeSpec:
    if (problem := name_problem(name)) is not None:
        raise SiteError(f"{where}: host name {name!r} {problem}")

    def text(key: str) -> str | None:
        value = variables.get(key)
        return None if value is None else str(value)

    local = variables.get("ansible_connection") == "local"
    become = variables.get("ansible_become", False)
    if not isinstance(become, bool):
        raise SiteError(f"{where}: host {name}: ansible_become must be true or false, not {become!r}")
    method = text("ansible_become_method") or "sudo"
    if become and method not in BECOME_METHODS:
        raise SiteError(f"{where}: host {name}: ansible_become_method {method!r} is not one "
                        f"strixwizard uses (it runs {' or '.join(BECOME_METHODS)} -n)")
    port = variables.get("ansible_port", 22)
    if not isinstance(port, int) or isinstance(port, bool):
        raise SiteError(f"{where}: host {name}: ansible_port must be a whole number, not {port!r}")
    try:
        return NodeSpec(
            name=name,
            host="local" if local else text("ansible_host") or name,
            user=text("ansible_user") or "root",
            port=port,
            key=text("ansible_ssh_private_key_file"),
            fabric_address=text("fabric_address") or text("strixwizard_fabric_address"),
            become=method if become and not local else None,
        )
    except FieldError as error:
        variable = _VARIABLES.get(error.field_name, error.field_name)
        raise SiteError(f"{where}: host {name}: {variable} {error.message}") from None


_VARIABLES = {"port": "ansible_port", "host": "ansible_host", "user": "ansible_user",
              "key": "ansible_ssh_private_key_file", "fabric_address": "fabric_address"}


def parse_inventory(text: str, source: str) -> tuple[NodeSpec, ...]:
    inventory = _Inventory(source)
    root = compose_yaml(text, source)
    if root is None:
        raise SiteError(f"{source}: the inventory is empty")
    top = inventory.reader.mapping(root, "the inventory")
    for group_name, (_, group_node) in top.items():
        inventory.group(group_node, group_name, {})
    if not inventory.lines:
        raise SiteError(f"{source}: the inventory lists no hosts (expected all: hosts: ...)")
    return tuple(
        _node(name, {**inventory.group_vars[name], **inventory.host_vars[name]},
              f"{source}:{line}")
        for name, line in inventory.lines.items()
    )


def load_inventory(path: Path) -> tuple[NodeSpec, ...]:
    try:
        text = read_text_file(path, "inventory")
    except FileNotFoundError:
        raise SiteError(f"{path}: no such inventory file") from None
    return parse_inventory(text, str(path))

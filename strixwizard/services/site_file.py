"""A new site's file, commented and ready to edit: what `strixwizard init` and the wizard's
Site step both write (`write_site_file`), from nodes given as `NAME=[USER@]HOST[:PORT]`
(`parse_node_argument`) or read from an inventory.

With nodes given, each is read once (one collection, as `doctor` reads it) and the
address of its fabric interface is written as `fabric_address`: the end of a link the
topology found (RDMA links first), else an interface sharing a subnet with another
node's that is not the management network. A node that could not be read, or has no
such interface, keeps a commented line saying so.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import socket
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from strixwizard.errors import UsageError
from strixwizard.site import Fabric, NodeSpec, Site, SshSettings, Thresholds, address_problem, parse_site

if TYPE_CHECKING:
    from strixwizard.discovery import DiscoveredNode, Discovery
    from strixwizard.services.common import OnNode


@dataclass(frozen=True)
class Found:
    """The fabric address found on a node, where, and why; or why none was written."""

    address: str | None
    how: str

_NODE = re.compile(r"^(?P<name>[A-Za-z0-9_.-]+)=(?:(?P<user>[^@\s]+)@)?(?P<host>[^:\s]+)(?::(?P<port>\d+))?$")


def parse_node_argument(text: str, key: str | None, become: str | None = None) -> NodeSpec:
    """`NAME=[USER@]HOST[:PORT]`, or `NAME=local`; `become` ("sudo") for a node over SSH."""
    match = _NODE.match(text)
    if not match:
        raise UsageError(f"--node {text!r}: expected NAME=[USER@]HOST[:PORT], e.g. node-a=root@10.0.0.11")
    return NodeSpec(
        name=match["name"],
        host=match["host"],
        user=match["user"] or "root",
        port=int(match["port"]) if match["port"] else 22,
        key=key if match["host"] != "local" else None,
        become=become if match["host"] != "local" else None,
    )


def _shared_subnets(nodes: Sequence[DiscoveredNode], management: set[str]) -> dict[str, Found]:
    """Per node, an address in a subnet another node also has (not loopback, link-local or a
    management address): a fabric the topology does not know as one (no RDMA device)."""
    found: dict[str, Found] = {}
    for i, x in enumerate(nodes):
        for y in nodes[i + 1:]:
            if x.facts is None or y.facts is None:
                continue
            for a in x.facts.netdevs:
                for b in y.facts.netdevs:
                    for ax in a.ipv4:
                        for by in b.ipv4:
                            net = ipaddress.ip_network(ax.cidr, strict=False)
                            usable = not ({ax.address, by.address} & management) and ax.scope != "host" \
                                and ax.address != by.address and not net.is_loopback \
                                and not net.is_link_local
                            if usable and net == ipaddress.ip_network(by.cidr, strict=False):
                                found.setdefault(x.report.name, Found(ax.address, f"{a.name}, shares {net} "
                                                 f"with {y.report.name}:{b.name}"))
                                found.setdefault(y.report.name, Found(by.address, f"{b.name}, shares {net} "
                                                 f"with {x.report.name}:{a.name}"))
    return found


def fabric_addresses(discovered: Discovery) -> dict[str, Found]:
    """What `init` writes as each node's fabric_address (see the module docstring)."""
    site, nodes = discovered.site, discovered.nodes
    found: dict[str, Found] = {}
    for link in sorted(discovered.topology.links, key=lambda link: not link.rdma):
        for end, other in ((link.a, link.b), (link.b, link.a)):
            if end.ipv4 is not None and end.node.name not in found:
                found[end.node.name] = Found(end.ipv4.address, f"{end.netdev.name}, {link.transport} "
                                             f"link to {other.label}")
    management = {spec.host for spec in site.nodes if spec.host}
    for name, shared in _shared_subnets(nodes, management).items():
        found.setdefault(name, shared)
    for node in nodes:
        if node.facts is None:
            found[node.report.name] = Found(None, f"not read: {node.report.error or 'unreachable'}")
            continue
        found.setdefault(node.report.name, Found(None, "no interface shares a subnet with another "
                                                 "node's (other than the management network)"))
        dropped = [f"{dev.name}: {note}" for dev in node.facts.netdevs for note in dev.notes]
        if dropped and found[node.report.name].address is None:  # say what the node reported
            found[node.report.name] = Found(None, "; ".join([found[node.report.name].how, *dropped]))
    return found


def probe_nodes(nodes: Sequence[NodeSpec], trust_new_hosts: bool = False,
                on_node: OnNode | None = None) -> dict[str, Found]:
    """Read each node once and find its fabric address (nodes whose address is given keep it)."""
    from strixwizard.discovery import Discovery
    from strixwizard.services.discover import reach

    site = Site(name="init", nodes=tuple(nodes))
    read = reach(site, [n.name for n in nodes], on_node=on_node, trust_new_hosts=trust_new_hosts)
    found = fabric_addresses(Discovery.of(site, read))
    return {n.name: found[n.name] for n in nodes if n.fabric_address is None and n.name in found}


def with_fabric_addresses(nodes: Sequence[NodeSpec], found: dict[str, Found]) -> list[NodeSpec]:
    return [replace(n, fabric_address=found[n.name].address) if n.name in found else n for n in nodes]


def _plain_address(found: Found) -> Found:
    """`found` with its address only if it is an IP address (an IPv6 scope id only if it names
    an interface: `ipaddress` takes anything after `%`, line breaks too): what a node reports
    is data, and only an address may become a value in the site file."""
    if found.address is None:
        return found
    if address_problem(found.address) is not None:
        return Found(None, f"the node reported {found.address!r}, not an IP address")
    return found


def _quoted(value: object) -> str:
    """`value` as a YAML double-quoted scalar (JSON's escapes are YAML's): whatever it holds
    (`: `, `#`, `&a`, `!!python/object`, a line break, U+2028) it stays one string."""
    return json.dumps(str(value), allow_nan=False)


def _comment(text: str) -> str:
    """Text from a node (interface names, error messages) as one YAML comment line: a line
    break or another control character in it could otherwise start a key of its own."""
    return "".join(c if c.isprintable() else " " for c in text)


def _node_yaml(node: NodeSpec, found: Found | None = None) -> str:
    lines = [f"  - name: {_quoted(node.name)}", f"    host: {_quoted(node.host)}"]
    if not node.is_local:
        lines.append(f"    user: {_quoted(node.user)}")
        if node.port != 22:
            lines.append(f"    port: {int(node.port)}")
        if node.key:
            lines.append(f"    key: {_quoted(node.key)}")
        if node.become:
            lines.append(f"    become: {_quoted(node.become)}   # every command as `sudo -n -- ...`")
    if node.fabric_address and found is not None:
        lines.append(f"    fabric_address: {_quoted(node.fabric_address)}   # found by init: "
                     f"{_comment(found.how)}")
    elif node.fabric_address:
        lines.append(f"    fabric_address: {_quoted(node.fabric_address)}")
    elif found is not None:
        lines.append(f"    # fabric_address: none written: {_comment(found.how)}")
    else:
        lines.append("    # fabric_address: 192.168.100.1   # the node's address on the RDMA link")
    return "\n".join(lines)


def site_yaml(name: str, nodes: Sequence[NodeSpec], found: dict[str, Found] | None = None) -> str:
    fabric, thresholds = Fabric(), Thresholds()
    if not nodes:
        nodes = [NodeSpec(name=socket.gethostname(), host="local")]
    body = "\n".join(_node_yaml(n, (found or {}).get(n.name)) for n in nodes)
    return f"""\
# strixwizard site file. `strixwizard doctor --site THIS_FILE` checks every node.
site: {_quoted(name)}

# Each node: `host:` is its management address for SSH, or `local` for the
# machine running strixwizard. `snapshot:` replays a captured node instead.
nodes:
{body}
  # - name: node-b
  #   host: 10.0.0.12
  #   user: root
  #   key: ~/.ssh/id_ed25519
  #   become: sudo   # with a user that is not root: commands run as `sudo -n -- ...`

# The state every RDMA link should reach, on both of its ends.
fabric:
  mtu: {fabric.mtu}
  pfc_priority: {fabric.pfc_priority}
  trust: {fabric.trust}
  roce_version: {fabric.roce_version}

# Verdict thresholds.
thresholds:
  rdma_latency_us: {thresholds.rdma_latency_us:g}
  tcp_latency_us: {thresholds.tcp_latency_us:g}
  bandwidth_fraction: {thresholds.bandwidth_fraction:g}
  gtt_min_fraction: {thresholds.gtt_min_fraction:g}

# SSH: host keys are checked against known_hosts; unknown ones are refused
# unless you pass --trust-new-hosts.
ssh:
  known_hosts: ~/.ssh/known_hosts
  connect_timeout: 5
  deadline: 60
"""


def check_site_file(out: Path, name: str, nodes: Sequence[NodeSpec]) -> None:
    """Refuse before anything is read: an existing file, a missing folder, nodes that do not
    make a site (a name used twice...)."""
    if os.path.lexists(out):  # a link too, even one to nothing: never written through
        raise UsageError(f"{out}: already exists; edit it, or choose another path with --out")
    if not out.parent.is_dir():
        raise UsageError(f"{out.parent}: no such directory")
    parse_site(site_yaml(name, nodes), str(out), out)


def write_site_file(out: Path, name: str, nodes: Sequence[NodeSpec],
                    found: dict[str, Found] | None = None) -> Path:
    check_site_file(out, name, nodes)
    found = {name: _plain_address(f) for name, f in (found or {}).items()}
    nodes = with_fabric_addresses(nodes, found)
    text = site_yaml(name, nodes, found)
    _reads_back(text, out, name, nodes)  # before anything is written
    out.write_text(text, encoding="utf-8")
    _reads_back(out.read_text(encoding="utf-8"), out, name, nodes)  # and what was written
    return out


def _written(node: NodeSpec) -> tuple[object, ...]:
    """The fields of a node the site file holds (a local node's user, port and key are not)."""
    reached = () if node.is_local else (node.user, node.port, node.key, node.become)
    return (node.name, node.host, node.fabric_address, *reached)


def _reads_back(text: str, out: Path, name: str, nodes: Sequence[NodeSpec]) -> None:
    """Refuse unless `text` reads back as exactly the site meant: its name, these nodes (every
    field), the default fabric, thresholds and SSH settings, software RDMA off. A value that
    broke out of its quotes would add a node or a key: nothing of it is kept."""
    site = parse_site(text, str(out), out)
    meant = tuple(nodes) or (NodeSpec(name=socket.gethostname(), host="local"),)
    problems = []
    if site.name != name:
        problems.append(f"site name {site.name!r}, meant {name!r}")
    if [_written(n) for n in site.nodes] != [_written(n) for n in meant]:
        problems.append(f"nodes {[n.name for n in site.nodes]!r}, meant {[n.name for n in meant]!r}")
    if (site.fabric, site.thresholds, site.ssh, site.allow_soft_rdma) != (
            Fabric(), Thresholds(), SshSettings(connect_timeout=5, deadline=60), False):
        problems.append("fabric, thresholds, ssh or allow_soft_rdma differ from the defaults")
    if problems:
        if out.exists() and out.read_text(encoding="utf-8") == text:
            out.unlink()  # ours, just written: a file that says other than meant is not kept
        raise UsageError(f"{out}: not saved: the site file would read back differently "
                         f"({'; '.join(problems)}); please report it")

"""`strixwizard init`: write a site file for a new site, commented, ready to edit."""

from __future__ import annotations

import re
import socket
from collections.abc import Sequence
from pathlib import Path

from strixwizard.errors import UsageError
from strixwizard.site import Fabric, NodeSpec, Thresholds, parse_site

_NODE = re.compile(r"^(?P<name>[A-Za-z0-9_.-]+)=(?:(?P<user>[^@\s]+)@)?(?P<host>[^:\s]+)(?::(?P<port>\d+))?$")


def parse_node_argument(text: str, key: str | None) -> NodeSpec:
    """`NAME=[USER@]HOST[:PORT]`, or `NAME=local`."""
    match = _NODE.match(text)
    if not match:
        raise UsageError(f"--node {text!r}: expected NAME=[USER@]HOST[:PORT], e.g. node-a=root@10.0.0.11")
    return NodeSpec(
        name=match["name"],
        host=match["host"],
        user=match["user"] or "root",
        port=int(match["port"]) if match["port"] else 22,
        key=key if match["host"] != "local" else None,
    )


def _node_yaml(node: NodeSpec) -> str:
    lines = [f"  - name: {node.name}", f"    host: {node.host}"]
    if not node.is_local:
        lines.append(f"    user: {node.user}")
        if node.port != 22:
            lines.append(f"    port: {node.port}")
        if node.key:
            lines.append(f"    key: {node.key}")
    lines.append("    # fabric_address: 192.168.100.1   # the node's address on the RDMA link")
    return "\n".join(lines)


def site_yaml(name: str, nodes: Sequence[NodeSpec]) -> str:
    fabric, thresholds = Fabric(), Thresholds()
    if not nodes:
        nodes = [NodeSpec(name=socket.gethostname(), host="local")]
    body = "\n".join(_node_yaml(n) for n in nodes)
    return f"""\
# strixwizard site file. `strixwizard doctor --site THIS_FILE` checks every node.
site: {name}

# Each node: `host:` is its management address for SSH, or `local` for the
# machine running strixwizard. `snapshot:` replays a captured node instead.
nodes:
{body}
  # - name: node-b
  #   host: 10.0.0.12
  #   user: root
  #   key: ~/.ssh/id_ed25519

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


def write_site_file(out: Path, name: str, nodes: Sequence[NodeSpec]) -> Path:
    if out.exists():
        raise UsageError(f"{out}: already exists; edit it, or choose another path with --out")
    if not out.parent.is_dir():
        raise UsageError(f"{out.parent}: no such directory")
    text = site_yaml(name, nodes)
    parse_site(text, str(out), out)  # what we write must read back
    out.write_text(text, encoding="utf-8")
    return out

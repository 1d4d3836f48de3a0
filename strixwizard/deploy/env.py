"""The RCCL/NCCL, Gloo, Ray and vLLM environment of a cluster, generated from facts. Pure.

Every variable carries where its value came from on each node (`EnvVar.source`),
so a plan can show that nothing was guessed: the fabric interface from the
netdev holding the link's address, `NCCL_IB_HCA` from the hardware RDMA port on
that netdev, `NCCL_IB_GID_INDEX` from the port's GID table in sysfs (the entry
whose type is "RoCE v2" and whose value is the IPv4-mapped address), never a
hard-coded 1 or 3.

Profiles:
- `rdma` (default): every pair of nodes must share a hardware RDMA link
  (RoCE v2 or InfiniBand) with ACTIVE ports; otherwise `DeployRefused` says
  which pair lacks one and what links it has instead. Nothing fake is offered:
  thunderbolt-net, soft-RoCE (rxe) or plain Ethernet never get an RDMA profile.
- `tcp`: asked for explicitly; RCCL over sockets (`NCCL_IB_DISABLE=1`), as
  kyuz0's launcher does for Ethernet. Expect 50-130 µs per hop, not ~5 µs.

The same values go to every node; only what differs between nodes (always
`VLLM_HOST_IP`, and the device or GID index when the ends differ) is per node.
"""

from __future__ import annotations

import ipaddress
import itertools
import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from strixwizard.errors import UsageError
from strixwizard.facts import NodeFacts
from strixwizard.topology import (
    RCCL,
    RDMA_TRANSPORTS,
    STACK_NAMES,
    FabricPort,
    Link,
    Topology,
    stack_names,
)

IB_SYSFS = "/sys/class/infiniband"
PROFILES = ("rdma", "tcp")
#: kyuz0's launcher (scripts/cluster_manager.py `_transport_vars`) and NCCL's own guidance:
#: 23 → 4.096 µs * 2^23 ≈ 34 s per retry window; 7 retries (NCCL's maximum).
IB_TIMEOUT = "23"
IB_RETRY_CNT = "7"


class DeployRefused(UsageError):
    """No honest profile can be generated; the message says why and what to do."""


class NoCommonLink(DeployRefused):
    """Two nodes share no fabric link at all (the TCP profile may still use the management
    network, see `management_fabric`)."""


@dataclass(frozen=True)
class EnvVar:
    name: str
    value: str
    why: str  # node-neutral: goes into the file as a comment
    source: str  # the fact it came from on this node (path and value, or the policy)

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "value": self.value, "why": self.why, "source": self.source}


@dataclass(frozen=True)
class NodeEnv:
    node: str
    ip: str
    netdev: str
    device: str | None  # RDMA device (rdma profile)
    port: int | None
    gid_index: int | None
    variables: tuple[EnvVar, ...]

    def get(self, name: str) -> EnvVar | None:
        return next((v for v in self.variables if v.name == name), None)

    @property
    def hca(self) -> str | None:
        return f"{self.device}:{self.port}" if self.device and self.port is not None else None


@dataclass(frozen=True)
class ClusterEnv:
    site: str
    profile: str  # "rdma" or "tcp"
    transport: str  # link transport: roce-v2, infiniband, ethernet, thunderbolt-net
    head: str
    nodes: tuple[NodeEnv, ...]
    links: tuple[str, ...]  # the link ids the cluster runs on
    warnings: tuple[str, ...] = ()

    def node(self, name: str) -> NodeEnv:
        return next(n for n in self.nodes if n.node == name)

    @property
    def head_ip(self) -> str:
        return self.node(self.head).ip

    @property
    def shared_names(self) -> tuple[str, ...]:
        """Variables whose value is the same on every node, in generation order."""
        first = self.nodes[0]
        return tuple(
            v.name for v in first.variables
            if all((other.get(v.name) or v).value == v.value and other.get(v.name) is not None
                   for other in self.nodes[1:])
        )

    def file_text(self, node: str) -> str:
        """The env file: `KEY=value` lines, every value `shlex.quote`d, so sourcing it (`. FILE`
        under `sh -a`, as the Ray step, the smoke test and the generated scripts do) only ever
        assigns: a value read from a node (an interface named `f;id>x`) stays data. Comments
        are single lines without control characters, so a site name cannot start a command."""
        this = self.node(node)
        shared = self.shared_names
        over = "over " + ", ".join(self.links)
        lines = [
            comment(f"RCCL/NCCL, Gloo, Ray and vLLM environment of cluster {self.site}: "
                    f"{self.profile} profile ({self.transport}) {over}"),
            "# Written by `strixwizard deploy`; `strixwizard deploy --rollback` removes it.",
            "# Ray workers inherit the Ray daemon's environment: export this before `ray start`.",
            "",
            "# Same on every node of the cluster",
        ]
        for var in this.variables:
            if var.name in shared:
                lines += [comment(var.why), assignment(var.name, var.value)]
        own = [v for v in this.variables if v.name not in shared]
        if own:
            lines += ["", comment(f"This node only ({node})")]
            for var in own:
                lines += [comment(var.why), assignment(var.name, var.value)]
        return "\n".join(lines) + "\n"

    @property
    def variable_names(self) -> tuple[str, ...]:
        """Every variable name of the cluster's env files, in generation order."""
        return tuple(dict.fromkeys(v.name for n in self.nodes for v in n.variables))

    def to_json(self) -> dict[str, object]:
        shared = self.shared_names
        return {
            "profile": self.profile,
            "transport": self.transport,
            "head": self.head,
            "links": list(self.links),
            "warnings": list(self.warnings),
            "shared": list(shared),
            "nodes": [
                {"node": n.node, "ip": n.ip, "netdev": n.netdev, "rdma_device": n.device,
                 "port": n.port, "gid_index": n.gid_index,
                 "variables": [v.to_json() for v in n.variables]}
                for n in self.nodes
            ],
        }


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def comment(text: str) -> str:
    """A `#` line whatever the text holds: control characters (newlines) become `?`."""
    return "# " + _CONTROL.sub("?", text)


def assignment(name: str, value: str) -> str:
    """`NAME=value` that `sh` reads back as exactly `value` and never executes."""
    if not _NAME.fullmatch(name):
        raise ValueError(f"not an environment variable name: {name!r}")
    if "\x00" in value:
        raise DeployRefused(f"{name}: the value {value!r} holds a NUL byte")
    return f"{name}={shlex.quote(value)}"


def check_netdev_name(node: str, name: str) -> None:
    """Refuse an interface name the kernel would not allow (it can only come from a forged
    snapshot) or that NCCL would split: NCCL_SOCKET_IFNAME is a comma-separated list.
    Any other character Linux allows is kept and only ever handled as data."""
    if (not name or len(name.encode()) > 15 or name in (".", "..")
            or any(c in name for c in "/:,") or any(c.isspace() for c in name)
            or _CONTROL.search(name)):
        raise DeployRefused(
            f"{node}: the fabric interface name {name!r} cannot be used: Linux names are 1-15 "
            "bytes without '/', ':' or whitespace, and NCCL_SOCKET_IFNAME splits on ','; "
            f"rename it (`ip link set dev IF name NEW`)")


def hca_selects(spec: str, ports: Iterable[tuple[str, int]]) -> list[tuple[str, int]]:
    """The (device, port) pairs NCCL/RCCL would use for `NCCL_IB_HCA=spec`.

    Mirrors NCCL's `matchIfList`: entries `name[:port]` separated by commas;
    a leading `^` excludes them, a leading `=` asks for exact device names,
    otherwise a name matches every device it is a *prefix* of. So `mlx5_1`
    alone also selects `mlx5_10`..`mlx5_19`, and `rocep1` selects
    `rocep194s0`; this is why the generated value starts with `=`.
    """
    exclude = spec.startswith("^")
    body = spec[1:] if exclude else spec
    exact = body.startswith("=")
    body = body[1:] if exact else body
    wanted = []
    for item in filter(None, (s.strip() for s in body.split(","))):
        name, _, port = item.partition(":")
        wanted.append((name, int(port) if port else None))

    def hit(device: str, number: int) -> bool:
        return any((device == name if exact else device.startswith(name))
                   and (port is None or port == number) for name, port in wanted)

    return [(d, p) for d, p in ports if hit(d, p) != exclude]


# -- choosing the cluster's fabric ---------------------------------------------

@dataclass(frozen=True)
class _Choice:
    link: Link
    ends: dict[str, FabricPort]


def _rate(link: Link) -> float:
    rates = [e.port.rate_gbps for e in link.ends if e.port and e.port.rate_gbps]
    speeds = [e.netdev.speed_mbps / 1000 for e in link.ends if e.netdev.speed_mbps]
    return min(rates or speeds or [0.0])


_KIND = {"ethernet": ("an Ethernet link", "Ethernet links", ""),
         "thunderbolt-net": ("a USB4/Thunderbolt networking link",
                             "USB4/Thunderbolt networking links", " that carries TCP only")}


def _describe(links: Sequence[Link]) -> str:
    """What two nodes share, as a phrase: "only an Ethernet link (a:x ↔ b:y)"."""
    if not links:
        return "no link at all (no fabric interfaces with addresses in a common subnet)"
    parts = []
    for transport in dict.fromkeys(link.transport for link in links):
        same = [link for link in links if link.transport == transport]
        one, many, what = _KIND.get(transport, (f"a {transport} link", f"{transport} links", ""))
        ids = ", ".join(link.id.replace(" <-> ", " ↔ ") for link in same)
        parts.append(f"{one if len(same) == 1 else many} ({ids}){what}")
    return "only " + " and ".join(parts)


def _pair_link(topology: Topology, x: str, y: str, profile: str, stack: str = RCCL) -> Link:
    """The link x and y use: on the RDMA profile one that carries `stack` (topology.STACKS:
    RCCL/NCCL and llama.cpp RDMA ride the same links)."""
    links = topology.links_between(x, y)
    if profile == "tcp":
        usable = sorted(links, key=lambda link: (-_rate(link), link.id))
        if not usable:
            raise NoCommonLink(
                f"{x} and {y} share {_describe(links)}: connect them on one fabric subnet, "
                "deploy on the nodes that share one with --nodes A,B, or give every node its "
                "management address in the site file so TCP can go over the management network")
        return usable[0]
    rdma = [link for link in links if link.rdma or link.transport in RDMA_TRANSPORTS]
    if not rdma:
        what = _describe(links)
        next_step = ("deploy over TCP with --transport tcp, or fix the RDMA NIC first "
                     "(`strixwizard doctor` with the same site file says why it has no RDMA)")
        if not links:
            next_step = ("connect a RoCE v2 or InfiniBand NIC pair, deploy on the nodes that "
                         "share one with --nodes A,B, or deploy over TCP with --transport tcp")
        raise DeployRefused(
            f"no RDMA profile: {x} and {y} share {what}{', no RDMA' if links else ''}: "
            f"{next_step}. Over TCP RCCL "
            "uses NET/Socket: expect 50-130 µs per hop instead of ~5 µs")
    good = [link for link in rdma if link.carries(stack)]
    if not good:
        kinds = ", ".join(sorted({link.transport for link in rdma}))
        carried = "; ".join(f"{link.id} carries {stack_names(link.stacks)}" for link in rdma)
        raise DeployRefused(
            f"no RDMA profile: {x} and {y} share only {kinds} links ({carried}); "
            f"{STACK_NAMES[stack]} runs over RoCE v2 or InfiniBand: switch the NICs to RoCE v2 "
            "(`strixwizard fix`; `strixwizard doctor` names the cure under link.transport)")
    return sorted(good, key=lambda link: (link.transport != "roce-v2", -_rate(link), link.id))[0]


def choose_fabric(topology: Topology, names: Sequence[str], profile: str) -> _Choice:
    """One fabric interface per node that reaches every other node (NCCL, Gloo and Ray bind
    one address each), and the link transport they share."""
    if len(names) < 2:
        raise DeployRefused(f"a tensor-parallel deploy needs at least two reachable nodes "
                            f"(have: {', '.join(names) or 'none'})")
    chosen: dict[str, FabricPort] = {}
    links: list[Link] = []
    for x, y in itertools.combinations(names, 2):
        link = _pair_link(topology, x, y, profile)
        links.append(link)
        for end in link.ends:
            previous = chosen.setdefault(end.node.name, end)
            if previous.netdev.name != end.netdev.name:
                raise DeployRefused(
                    f"{end.node.name} reaches its peers over different interfaces "
                    f"({previous.netdev.name} and {end.netdev.name}); NCCL_SOCKET_IFNAME, Gloo "
                    "and Ray take one interface per node: put all nodes on one switch or subnet")
    transports = {link.transport for link in links}
    if len(transports) > 1:
        raise DeployRefused(f"the links mix transports ({', '.join(sorted(transports))}); "
                            "one profile cannot serve them all")
    return _Choice(links[0], chosen)


# -- variables -------------------------------------------------------------------

def _rdma_vars(end: FabricPort, transport: str) -> tuple[list[EnvVar], int | None]:
    node, port = end.node.name, end.port
    assert port is not None and end.device is not None
    base = f"{IB_SYSFS}/{port.device}/ports/{port.number}"
    if not port.is_active:
        hint = (": no subnet manager answers; run `systemctl enable --now opensm` on exactly one "
                "node" if transport == "infiniband" else "")
        raise DeployRefused(f"{node}: RDMA port {port.name} is {port.state or 'in an unknown state'}"
                            f" ({base}/state){hint}")
    variables = [
        EnvVar("NCCL_IB_DISABLE", "0", "use RCCL's NET/IB (verbs) transport",
               f"{node}: {end.device.name} is a "
               f"{'hardware' if end.device.is_hardware else 'software (allow_soft_rdma)'} "
               f"RDMA device ({end.device.driver}) on {end.netdev.name}, link {transport}"),
        # `=` asks NCCL/RCCL for an exact device name: a bare `mlx5_1:1` is a prefix that also
        # selects mlx5_10..mlx5_19 (and `rocep1` every rocep1*), and several selected HCAs
        # make ncclCommInitRank fail with "internal error" (scripts/cluster_manager.py in
        # https://github.com/kyuz0/amd-strix-halo-vllm-toolboxes).
        EnvVar("NCCL_IB_HCA", f"={port.device}:{port.number}",
               "exact RDMA device:port ('=' = exact name match, never a prefix)",
               f"{node}: {base} serves {end.netdev.name} ({port.link_layer}), state {port.state}"),
    ]
    gid_index = None
    if port.is_ethernet:
        gid = port.roce_v2_ipv4_gid(end.netdev.name)
        if gid is None:
            raise DeployRefused(
                f"{node}: {port.name} has no RoCE v2 GID carrying an IPv4 address ({base}/gids): "
                f"give {end.netdev.name} its fabric address and check the RoCE mode")
        gid_index = gid.index
        variables.append(EnvVar(
            "NCCL_IB_GID_INDEX", str(gid.index),
            "the RoCE v2 GID mapping the fabric IPv4 address (read from sysfs)",
            f"{node}: {base}/gid_attrs/types/{gid.index} = {gid.type}, "
            f"{base}/gids/{gid.index} = ::ffff:{gid.ipv4}"))
    variables += [
        EnvVar("NCCL_IB_TIMEOUT", IB_TIMEOUT, "verbs retry window 4.096 µs * 2^23",
               "policy: kyuz0/amd-strix-halo-vllm-toolboxes scripts/cluster_manager.py `_transport_vars`"),
        EnvVar("NCCL_IB_RETRY_CNT", IB_RETRY_CNT, "verbs retries before an error",
               "policy: kyuz0/amd-strix-halo-vllm-toolboxes scripts/cluster_manager.py `_transport_vars`"),
    ]
    return variables, gid_index


def _node_vars(end: FabricPort, transport: str, profile: str
               ) -> tuple[list[EnvVar], int | None]:
    node, netdev = end.node.name, end.netdev.name
    check_netdev_name(node, netdev)
    ip = end.ipv4
    assert ip is not None
    where = f"{node}: {netdev} holds {ip.cidr}"
    variables = [
        # `=`: exact interface name here too (a prefix `enp194s0np0` would also match a
        # `enp194s0np0v0` VF); Gloo takes the name literally and must not get the `=`.
        EnvVar("NCCL_SOCKET_IFNAME", f"={netdev}", "RCCL bootstrap/OOB on the fabric interface",
               where),
        EnvVar("GLOO_SOCKET_IFNAME", netdev, "torch.distributed (Gloo) on the fabric interface",
               where),
    ]
    gid_index = None
    if profile == "rdma":
        rdma, gid_index = _rdma_vars(end, transport)
        variables += rdma
    else:
        variables.append(EnvVar("NCCL_IB_DISABLE", "1", "TCP profile: RCCL over sockets",
                                f"policy: --transport tcp; link {transport} on {netdev}"))
    gpu = end.node.gpu
    gfx = gpu.gfx_target
    if profile == "rdma":
        variables.append(EnvVar(
            "NCCL_NET_GDR_LEVEL", "0",
            "no GPUDirect RDMA on the Strix Halo iGPU: stage through host memory",
            f"{node}: iGPU {gfx or 'unknown gfx'} at {gpu.pci.address} (/sys/class/kfd "
            "topology) is an APU sharing system RAM" if gpu.pci is not None else
            f"{node}: no Strix Halo iGPU found: no GPUDirect RDMA to use either"))
    if gpu.pci is not None:
        igpu = (f"{node}: iGPU {gpu.pci.address} is the only GPU "
                f"({len(gpu.kfd_gpus)} KFD GPU node(s))")
    else:
        igpu = (f"{node}: no Strix Halo iGPU found ({len(gpu.kfd_gpus)} KFD GPU node(s)); "
                "set for the Strix Halo nodes of a cluster, harmless here")
    variables += [
        EnvVar("RAY_EXPERIMENTAL_NOSET_ROCR_VISIBLE_DEVICES", "1",
               "Ray must not hide the iGPU by setting ROCR_VISIBLE_DEVICES", igpu),
        EnvVar("RAY_memory_monitor_refresh_ms", "0",
               "GPU memory is system RAM (GTT): Ray's host-memory monitor would kill model workers",
               _gtt_source(end.node)),
        EnvVar("VLLM_HOST_IP", ip.address, "this node's fabric address for vLLM and Ray", where),
    ]
    return variables, gid_index


def _gtt_source(node: NodeFacts) -> str:
    memory = node.memory
    if memory.gtt_gib is not None and memory.total_gib is not None:
        return (f"{node.name}: GTT {memory.gtt_gib:.0f} GiB of {memory.total_gib:.0f} GiB RAM "
                "(mem_info_gtt_total, /proc/meminfo)")
    if node.gpu.pci is None:
        return (f"{node.name}: no Strix Halo iGPU found (no GTT pool); Ray's memory monitor "
                "stays off as on the cluster's other nodes")
    return f"{node.name}: Strix Halo iGPU {node.gpu.pci.address} (GTT size not readable)"


def _warnings(choice: _Choice, nodes: dict[str, NodeFacts]) -> list[str]:
    found = []
    mtus = {name: end.netdev.mtu for name, end in choice.ends.items()}
    if len(set(mtus.values())) > 1:
        found.append("MTU differs between nodes (" + ", ".join(
            f"{n} {m}" for n, m in mtus.items()) + "): cure it first (fix plans it), or RDMA "
            "transfers may fail after the QPs connect")
    for name, facts in nodes.items():
        gfx = facts.gpu.gfx_target
        if gfx is not None and gfx != "gfx1151":
            found.append(f"{name}: GPU is {gfx}, not gfx1151 (Strix Halo)")
    return found


MANAGEMENT_TCP = "TCP over the management network: no RDMA, expect 50-130 µs per hop"


def management_topology(nodes: Sequence[NodeFacts], management: dict[str, str]
                        ) -> Topology | None:
    """The management network as a fabric: on each node the interface holding its SSH address
    (the site file's `host`), paired where two sit in one subnet. None when a node's
    management address is not an IPv4 address one of its interfaces holds."""
    ends: dict[str, FabricPort] = {}
    for node in nodes:
        address = management.get(node.name)
        netdev = next((d for d in node.netdevs if address in {a.address for a in d.ipv4}), None)
        if netdev is None:
            return None
        ends[node.name] = FabricPort(node, netdev, None, None)
    topology = Topology(nodes=list(nodes), fabric={n: (e,) for n, e in ends.items()})
    for a, b in itertools.combinations(ends.values(), 2):
        x, y = a.ipv4, b.ipv4
        assert x is not None and y is not None
        net = ipaddress.ip_interface(x.cidr).network
        if net == ipaddress.ip_interface(y.cidr).network:
            topology.links.append(Link(a, b, "ethernet", False,
                                       f"management network {net} (SSH addresses)"))
    return topology


def generate_env(site: str, nodes: Sequence[NodeFacts], topology: Topology,
                 profile: str = "rdma", head: str | None = None,
                 management: dict[str, str] | None = None) -> ClusterEnv:
    """The cluster's environment, or `DeployRefused` with the reason. `management`: each
    node's SSH address; the TCP profile goes over the management network when the fabric
    does not join every pair of nodes, and says so."""
    if profile not in PROFILES:
        raise UsageError(f"unknown profile {profile!r} (known: {', '.join(PROFILES)})")
    names = [n.name for n in nodes]
    notes: list[str] = []
    try:
        choice = choose_fabric(topology, names, profile)
    except NoCommonLink as no_link:
        over = management_topology(nodes, management or {}) if profile == "tcp" else None
        if over is None or len(over.links) < len(names) * (len(names) - 1) // 2:
            raise
        topology = over
        choice = choose_fabric(topology, names, profile)
        notes.append(f"{MANAGEMENT_TCP} ({', '.join(link.id for link in topology.links)}); "
                     f"the fabric does not join every pair: {no_link}")
    head = head or names[0]
    if head not in names:
        raise UsageError(f"--head {head!r} is not a reachable node ({', '.join(names)})")
    envs = []
    for name in names:
        end = choice.ends[name]
        variables, gid_index = _node_vars(end, choice.link.transport, profile)
        assert end.ipv4 is not None
        port = end.port if profile == "rdma" else None
        envs.append(NodeEnv(name, end.ipv4.address, end.netdev.name,
                            port.device if port else None, port.number if port else None,
                            gid_index, tuple(variables)))
    facts = {n.name: n for n in nodes}
    links = tuple(sorted({link.id for link in topology.links
                          if link.hosts <= set(names) and all(
                              choice.ends[e.node.name].netdev.name == e.netdev.name
                              for e in link.ends)}))
    return ClusterEnv(site, profile, choice.link.transport, head, tuple(envs), links,
                      tuple(notes + _warnings(choice, facts)))

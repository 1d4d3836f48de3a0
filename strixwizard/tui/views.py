"""Plain rows for the screens, read from engine objects (Report, DiscoveredNode, NodeFacts).

No verdicts here: statuses come from the checks in the report. These helpers
only pick and format what the engine already knows, and turn "unknown" into
an honest word instead of a blank. A fact parser that breaks becomes a note on
its node, never an exception in the UI.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from strixwizard.checking.engine import Report
from strixwizard.discovery import DiscoveredNode
from strixwizard.facts import NodeFacts
from strixwizard.facts.netdev import Netdev
from strixwizard.facts.rdma import RdmaDevice, RdmaPort
from strixwizard.model import CheckResult, Status, pair_text
from strixwizard.model import LinkEnd as ReportedEnd
from strixwizard.topology import SOFT_RDMA_LABEL
from strixwizard.vendors.usb4net import TCP_LATENCY

UNKNOWN = "?"
PROBLEMS = (Status.FAIL, Status.ERROR, Status.WARN)

#: Why a link's transport matters; shown beside each link (figures from
#: https://github.com/kyuz0/amd-strix-halo-vllm-toolboxes/blob/main/rdma_cluster/setup_guide.md).
TRANSPORT_NOTES = {
    "roce-v2": "hardware RDMA (RoCE v2, routable): the ~5 µs path RCCL should use",
    "roce-v1": "hardware RDMA (RoCE v1, same L2 segment only); RoCE v2 is preferred",
    "infiniband": "hardware RDMA over InfiniBand",
    "iwarp": "hardware RDMA over iWARP (TCP offload): rdma_cm programs only; RCCL/NCCL and "
    "llama.cpp RDMA cannot use it — switch the NICs to RoCE v2",
    "link-layer-mismatch": "an InfiniBand port cabled to an Ethernet one: nothing passes; "
    "switch the port's link type (mlxconfig LINK_TYPE_P1)",
    "thunderbolt-net": f"USB4/Thunderbolt networking carries TCP only: no RDMA verbs, {TCP_LATENCY}. "
    "Keep it for management or a fallback; "
    "cable the RDMA NICs and point RCCL at them (NCCL_IB_HCA)",
    "ethernet": "plain Ethernet: at least one end has no hardware RDMA port, so traffic "
    "falls back to TCP (NET/Socket)",
}
#: A link whose RDMA is rxe/siw (the site's `allow_soft_rdma`): real verbs, no NIC offload.
SOFT_RDMA_NOTE = ("software RDMA (rxe/siw, opted in with allow_soft_rdma): the kernel's verbs "
                  "run the RDMA setup and the tools for real, over plain Ethernet; no hardware "
                  "RDMA path, so its figures are not a NIC's")


@dataclass(frozen=True)
class NodeRow:
    name: str
    state: str  # "ok", "unreachable"
    source: str
    sku: str
    gfx: str
    rocm: str
    kernel: str
    memory: str
    error: str | None


@dataclass(frozen=True)
class PortRow:
    node: str
    interface: str
    model: str
    driver: str
    firmware: str
    pcie: str
    speed: str
    mtu: str
    rdma: str  # "irdma0/1", or why there is none
    state: str
    gid_index: str


@dataclass(frozen=True)
class NodePorts:
    node: str
    rows: tuple[PortRow, ...]
    note: str | None  # the honest empty state: "no RDMA device on this node"


@dataclass(frozen=True)
class LinkEnd:
    host: str
    netdev: str
    address: str
    rdma: str
    nic: str
    mtu: str


@dataclass(frozen=True)
class LinkView:
    id: str
    a: LinkEnd
    b: LinkEnd
    transport: str
    rdma: bool
    status: Status
    evidence: str
    note: str
    problems: tuple[str, ...]  # "FAIL link.mtu: 1500 vs 9000"

    @property
    def display(self) -> str:
        """The link as every screen names it (`model.pair_text`); `id` stays its key."""
        return pair_text(self.a.host, self.b.host, self.a.netdev, self.b.netdev)

    @property
    def soft(self) -> bool:
        """RDMA through rxe/siw, which the site opted in to (`allow_soft_rdma`): the topology
        labels such a link's evidence, and it is no hardware RDMA path."""
        return self.rdma and SOFT_RDMA_LABEL in self.evidence

    @property
    def kind(self) -> str:
        return "software RDMA" if self.soft else "hardware RDMA" if self.rdma else "no RDMA"

    @property
    def warning(self) -> bool:
        return self.soft or self.transport in ("thunderbolt-net", "ethernet")


@dataclass(frozen=True)
class FixGroup:
    title: str  # "node node-b", "link node-a:ens1 <-> node-b:ens1", "site demo"
    results: tuple[CheckResult, ...]


@dataclass(frozen=True)
class StepLine:
    summary: str
    target: str
    before: str
    after: str
    flags: str  # "reboot", "not reversible", "persists: ..."
    diff: tuple[str, ...] = ()  # a file's change as the CLI's unified diff (before/after unused)


@dataclass(frozen=True)
class PlanView:
    fix: str
    node: str
    entity: str
    link: str | None
    steps: tuple[StepLine, ...]
    notes: tuple[str, ...]


def _text(value: object) -> str:
    return UNKNOWN if value is None or value == "" else str(value)


def node_rows(report: Report) -> list[NodeRow]:
    rows = []
    for host in report.hosts:
        facts = host.facts
        memory = facts.get("memory_gib")
        rows.append(NodeRow(
            name=host.name,
            state="ok" if host.reachable else "unreachable",
            source=host.source,
            sku=_text(facts.get("sku") or facts.get("cpu")) if host.reachable else "-",
            gfx=_text(facts.get("gfx_target")) if host.reachable else "-",
            rocm=(facts.get("rocm") or "none found") if host.reachable else "-",
            kernel=_text(facts.get("kernel")) if host.reachable else "-",
            memory=(f"{memory:g} GiB" if isinstance(memory, (int, float)) else UNKNOWN)
            if host.reachable else "-",
            error=host.error,
        ))
    return rows


def _speed(mbps: int | None) -> str:
    if mbps is None:
        return UNKNOWN
    return f"{mbps / 1000:g} Gb/s" if mbps >= 1000 else f"{mbps} Mb/s"


def _port_state(port: RdmaPort | None, netdev: Netdev | None) -> str:
    if port is not None and port.state:
        return port.state.lower() + (f" ({port.phys_state})" if port.phys_state else "")
    if netdev is not None and netdev.operstate:
        return netdev.operstate
    return UNKNOWN


def _gid(port: RdmaPort | None, netdev: str | None) -> str:
    if port is None:
        return "-"
    if not port.is_ethernet:
        return "0 (IB)"
    gid = port.roce_v2_ipv4_gid(netdev)
    return str(gid.index) if gid else "none (no IPv4 RoCE v2 GID)"


def _row(facts: NodeFacts, name: str | None, model: str, driver: str | None, firmware: str | None,
         pcie: str, port: RdmaPort | None, no_rdma: str) -> PortRow:
    netdev = facts.netdev(name)
    return PortRow(
        node=facts.name,
        interface=name or "(no netdev)",
        model=model,
        driver=_text(driver),
        firmware=_text(firmware),
        pcie=pcie,
        speed=_speed(netdev.speed_mbps) if netdev else UNKNOWN,
        mtu=_text(netdev.mtu) if netdev else UNKNOWN,
        rdma=port.name if port else no_rdma,
        state=_port_state(port, netdev),
        gid_index=_gid(port, name),
    )


def _device_port(facts: NodeFacts, netdev: str) -> tuple[RdmaPort | None, RdmaDevice | None]:
    ports = facts.ports_on(netdev)
    if not ports:
        return None, None
    return ports[0], facts.rdma_device(ports[0].device)


def ports_of(facts: NodeFacts) -> NodePorts:
    """The NICs, RDMA ports and USB4 interfaces of one node, one row per interface."""
    try:
        return _ports_of(facts)
    except Exception as error:  # a broken parser must not take the screen down
        return NodePorts(facts.name, (), f"could not read this node's NICs: {error!r}; "
                         "please report it with `strixwizard capture`")


def _ports_of(facts: NodeFacts) -> NodePorts:
    rows: list[PortRow] = []
    shown_ports: set[str] = set()
    shown_netdevs: set[str] = set()
    for nic in facts.nics:
        if not nic.rdma_capable and not any(facts.ports_on(n) for n in nic.netdevs):
            continue
        pcie = nic.pcie.describe() if nic.pcie else UNKNOWN
        driver = nic.driver_info.driver if nic.driver_info else nic.pci.driver
        no_rdma = f"none ({nic.expected_driver or 'RDMA driver'} bound, no RDMA device)"
        for name in nic.netdevs or (None,):
            port, _ = _device_port(facts, name) if name else (None, None)
            rows.append(_row(facts, name, nic.model, driver, nic.firmware, pcie, port, no_rdma))
            if port:
                shown_ports.add(port.name)
            if name:
                shown_netdevs.add(name)
    for device in facts.rdma:
        for port in device.ports:
            if port.name in shown_ports:
                continue
            model = {"usb4": "USB4 RDMA (experimental)", "rxe": "soft-RoCE (rxe)",
                     "siw": "soft-iWARP (siw)"}.get(device.kind, "RDMA device")
            rows.append(_row(facts, port.netdev, model, device.driver, device.fw_ver, "-", port, "-"))
            if port.netdev:
                shown_netdevs.add(port.netdev)
    for netdev in facts.netdevs:
        if netdev.is_thunderbolt and netdev.name not in shown_netdevs:
            rows.append(_row(facts, netdev.name, "USB4/Thunderbolt net", netdev.driver, None, "-",
                             None, "none (TCP only)"))
    note = None
    if not any(d.is_hardware for d in facts.rdma):
        note = "no RDMA device on this node" if not facts.rdma else \
            "no hardware RDMA device on this node (software or USB4 only)"
        if not any(nic.rdma_capable for nic in facts.nics):
            note += "; no RDMA-capable NIC (Intel E810 or NVIDIA ConnectX) on its PCI bus either"
    return NodePorts(facts.name, tuple(rows), note)


def all_ports(nodes: Iterable[DiscoveredNode]) -> list[NodePorts]:
    out = []
    for node in nodes:
        if node.facts is None:
            out.append(NodePorts(node.report.name, (), f"not reachable: {node.report.error}"))
        else:
            out.append(ports_of(node.facts))
    return out


def _end(end: ReportedEnd) -> LinkEnd:
    rdma = f"{end.rdma_device}/{end.port}" if end.rdma_device else "no RDMA port"
    if end.rdma_device and end.gid_index is not None:
        rdma += f" gid {end.gid_index}"
    return LinkEnd(
        host=_text(end.host),
        netdev=_text(end.netdev),
        address=_text(end.address),
        rdma=rdma,
        nic=_text(end.nic or end.bus),
        mtu=_text(end.mtu),
    )


def _problem_lines(checks: Iterable[CheckResult]) -> tuple[str, ...]:
    lines = []
    for check in checks:
        if check.status in PROBLEMS:
            observed = check.observed or check.detail or ""
            want = f" (want {check.expected})" if check.expected else ""
            lines.append(f"{check.status.value.upper()} {check.id}: {observed}{want}")
    return tuple(lines)


def link_views(report: Report) -> list[LinkView]:
    return [LinkView(
        id=link.id,
        a=_end(link.ends[0]),
        b=_end(link.ends[1]),
        transport=link.transport,
        rdma=link.rdma,
        status=link.status,
        evidence=link.evidence,
        note=SOFT_RDMA_NOTE if link.rdma and SOFT_RDMA_LABEL in link.evidence
        else TRANSPORT_NOTES.get(link.transport, ""),
        problems=_problem_lines(link.checks),
    ) for link in report.links]


def site_link_results(report: Report) -> list[CheckResult]:
    """Site-wide findings about the fabric (e.g. "no RDMA path between these nodes")."""
    return [r for r in report.checks if r.host is None and r.id.startswith("site.")]


def fix_groups(report: Report) -> list[FixGroup]:
    """Problems (fail, error, warn) grouped by node, then by link, then site-wide; worst first."""
    problems = [r for r in report.checks if r.status in PROBLEMS]
    groups: dict[str, list[CheckResult]] = {}
    for host in report.hosts:
        groups[f"node {host.name}"] = []
    for result in problems:
        if result.host is not None:
            key = f"node {result.host}"
        elif result.id.startswith("site."):
            key = f"site {report.site}"
        else:
            key = f"link {result.entity}"
        groups.setdefault(key, []).append(result)
    order = sorted(groups.items(), key=lambda kv: (not kv[0].startswith("node"), kv[0]))
    return [
        FixGroup(title, tuple(sorted(results, key=lambda r: (-r.status.rank, r.id))))
        for title, results in order if results
    ]


def _value(value: str | None) -> str:
    return "(absent)" if value is None else repr(value) if value == "" else value


def plan_views(plan: object) -> dict[str, list[PlanView]]:
    """The fix engine's SitePlan, node by node: each plan's steps as before → after (a file's
    as the CLI's diff)."""
    from strixwizard.fixing.model import Kind
    from strixwizard.present.fix_text import file_diff

    out: dict[str, list[PlanView]] = {}
    for item in getattr(plan, "plans", []):
        steps = []
        for step in item.steps:
            flags = [f for f, on in (("needs a reboot", step.reboot), ("not reversible", not step.reversible))
                     if on]
            if step.persistence:
                flags.append(f"persists: {step.persistence}")
            diff = tuple(file_diff(step)) if step.kind is Kind.FILE else ()
            steps.append(StepLine(step.summary, step.target, _value(step.before), _value(step.after),
                                  ", ".join(flags), diff))
        out.setdefault(item.node, []).append(
            PlanView(item.fix, item.node, item.entity, item.group, tuple(steps), tuple(item.notes)))
    return out

"""The verdict vocabulary shared by checks, the engine, the CLI and the TUI."""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import Any, Final, Literal

from strixwizard import __version__


class Status(StrEnum):
    PASS = "pass"
    WARN = "warn"
    FAIL = "fail"
    SKIP = "skip"  # could not be judged here (not captured, not applicable); never a pass
    ERROR = "error"  # the check itself broke; a bug report, not a verdict on the node

    @property
    def rank(self) -> int:
        """Order for "worst status": fail > error > warn > skip > pass."""
        return _RANK[self]


_RANK = {Status.PASS: 0, Status.SKIP: 1, Status.WARN: 2, Status.ERROR: 3, Status.FAIL: 4}


class Severity(StrEnum):
    """How much a failure of this check hurts the cluster, independent of its status."""

    CRITICAL = "critical"  # no RDMA cluster without it
    HIGH = "high"  # works, but far from ~5 µs or unstable
    MEDIUM = "medium"  # measurable loss, or a trap for later
    LOW = "low"
    INFO = "info"


@dataclass(frozen=True)
class Finding:
    """What one check concluded about one entity (a node, a NIC, a port, a link)."""

    status: Status
    entity: str
    observed: str = ""
    expected: str = ""
    detail: str = ""
    #: False when the check's fix cannot cure this case (e.g. no RDMA NIC at all to configure)
    fixable: bool = True


#: Check and fix ids renamed to say what they judge rather than the first vendor they were
#: written for (old → new). The old ids stay accepted (`doctor --only/--skip`, `explain`) and
#: are listed as `aliases` in JSON documents until release 0.3.
RENAMED_IDS: dict[str, str] = {
    "e810.roce_enabled": "roce.enabled",
    "e810.fw_lldp": "dcb.fw_lldp",
    "e810.one_pfc_tc": "dcb.pfc_tc_limit",
    "e810.enable_roce": "roce.enable",
    "e810.fw_lldp_off": "dcb.fw_lldp_off",
}


def current_id(item_id: str) -> str:
    """The id a check or fix has now, for an id given by a user or an older document."""
    return RENAMED_IDS.get(item_id, item_id)


def aliases_of(item_id: str) -> list[str]:
    """The older ids of a check or fix (empty for most)."""
    return [old for old, new in RENAMED_IDS.items() if new == item_id]


def with_aliases(document: dict[str, Any], item_id: str) -> dict[str, Any]:
    """`document` with `aliases` added when the id has older names."""
    old = aliases_of(item_id)
    return {**document, "aliases": old} if old else document


@dataclass(frozen=True)
class FixRef:
    """What doctor says of a fix: its id, summary, and whether it is reversible or needs a reboot."""

    id: str
    summary: str
    reversible: bool
    reboot: bool


@dataclass(frozen=True)
class CheckResult:
    """One verdict of a check on one entity (a node, a port, a link, the site)."""

    id: str
    title: str
    host: str | None  # None for a link or site-wide check
    entity: str
    status: Status
    severity: Severity
    observed: str
    expected: str
    detail: str
    why: str
    fix: FixRef | None

    def to_json(self) -> dict[str, Any]:
        fix = None if self.fix is None else with_aliases(fields_json(self.fix), self.fix.id)
        return with_aliases(fields_json(self, status=self.status.value, severity=self.severity.value,
                                        fix=fix), self.id)


@dataclass
class HostReport:
    """A node as a run reached it (or why it could not), with a summary of its facts."""

    name: str
    address: str
    source: str  # "local", "snapshot" or "ssh"
    reachable: bool
    error: str | None = None
    facts: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return fields_json(self)


def fields_json(record: Any, **converted: Any) -> dict[str, Any]:
    """A dataclass as a JSON object: its fields in declaration order, each as it is unless
    `converted` gives its JSON value (enums, nested records)."""
    return {f.name: converted[f.name] if f.name in converted else getattr(record, f.name)
            for f in fields(record)}


def now() -> str:
    """The time of a document, as every JSON document writes it (UTC, seconds)."""
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


#: The version of every JSON document strixwizard writes (doctor, fix, deploy, test, history,
#: explain, errors): one number for all of them.
SCHEMA_VERSION: Final = 1

#: The one exit-code rule of every command: 0 done without a failure, 1 a failure, 2 no verdict.
ExitCode = Literal[0, 1, 2]
EXIT_OK: Final = 0
EXIT_FAIL: Final = 1
EXIT_NO_VERDICT: Final = 2


def exit_code(ok: bool | None) -> ExitCode:
    """The exit code of a verdict: passed (True), failed (False) or none reached (None)."""
    if ok is None:
        return EXIT_NO_VERDICT
    return EXIT_OK if ok else EXIT_FAIL


def document_header(site: str | None, generated_at: str | None = None) -> dict[str, Any]:
    """The fields every JSON document starts with (doctor, fix, deploy, errors)."""
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "strixwizard", "version": __version__},
        "generated_at": generated_at or now(),
        "site": site,
    }


def worst(statuses: list[Status]) -> Status:
    return max(statuses, key=lambda s: s.rank, default=Status.PASS)


#: How every screen names two nodes: "node-a ⇄ node-b"; a link between them adds its interfaces.
PAIR_MARK = "⇄"


def pair_text(a: str, b: str, netdev_a: str | None = None, netdev_b: str | None = None) -> str:
    """Two nodes as every screen names them: "node-a ⇄ node-b", and a link between them with its
    interfaces: "node-a ⇄ node-b (enp194s0np0)", "node-a ⇄ node-b (ens1 ⇄ ens2)" when they differ."""
    text = f"{a} {PAIR_MARK} {b}"
    if netdev_a and netdev_b:
        text += f" ({netdev_a})" if netdev_a == netdev_b else f" ({netdev_a} {PAIR_MARK} {netdev_b})"
    return text


#: How a link's id joins its ends ("node-a:enp194s0np0 <-> node-b:enp194s0np0"): the id stays
#: that (JSON, `--only`, the history), screens show it by `link_text`.
LINK_ID_JOIN = " <-> "


def link_text(link_id: str) -> str:
    """A link's id as every screen names a link: "node-a ⇄ node-b (enp194s0np0)". Text that is
    not a link id (a node's name, a site's) comes back as it is."""
    a, joined, b = link_id.partition(LINK_ID_JOIN)
    node_a, colon_a, netdev_a = a.partition(":")
    node_b, colon_b, netdev_b = b.partition(":")
    if not (joined and colon_a and colon_b and node_a and node_b and LINK_ID_JOIN not in b):
        return link_id
    return pair_text(node_a, node_b, netdev_a, netdev_b)


@dataclass(frozen=True)
class LinkEnd:
    """One end of a fabric link as the report shows it; unknown values are None."""

    host: str
    netdev: str
    address: str | None = None  # IPv4 CIDR
    rdma_device: str | None = None
    port: int | None = None
    gid_index: int | None = None  # the RoCE v2 IPv4 GID's index
    mtu: int | None = None
    speed_mbps: int | None = None
    active_mtu: int | None = None
    link_layer: str | None = None
    pci_address: str | None = None
    nic: str | None = None
    bus: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "host": self.host, "netdev": self.netdev, "address": self.address,
            "rdma_device": self.rdma_device, "port": self.port, "gid_index": self.gid_index,
            "mtu": self.mtu, "speed_mbps": self.speed_mbps, "active_mtu": self.active_mtu,
            "link_layer": self.link_layer, "pci_address": self.pci_address, "nic": self.nic,
            "bus": self.bus,
        }


@dataclass(frozen=True)
class LinkReport:
    """A fabric link of the report: both ends, its transport, and its checks' verdicts."""

    id: str
    ends: tuple[LinkEnd, LinkEnd]
    transport: str  # roce-v2|roce-v1|infiniband|iwarp|link-layer-mismatch|thunderbolt-net|ethernet
    rdma: bool  # RCCL/NCCL, llama.cpp RDMA and perftest can run over it
    evidence: str
    status: Status
    checks: tuple[CheckResult, ...] = ()
    stacks: tuple[str, ...] = ()  # the stacks that can use it (topology.STACKS)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "ends": [end.to_json() for end in self.ends],
            "transport": self.transport,
            "rdma": self.rdma,
            "stacks": list(self.stacks),
            "evidence": self.evidence,
            "status": self.status.value,
            "checks": [r.to_json() for r in self.checks],
        }

"""Fabric health counters sampled before and after a live test run, and what their deltas say.

Before the first program starts and after the last one ends, each node's fabric interfaces
are read through the one collector (`Host.collect` with a small spec: `ethtool -S IF` and the
RDMA ports' hw_counters and counters), parsed by the declared outputs of
`strixwizard/facts/counters.py`. The deltas become one `Measurement` of kind "counters"
(its `detail["counters"]` is the report's "counters" list). When retransmits or sequence
errors grew while a test passed its bar, that measurement is a WARN: the fabric is lossy,
PFC is not doing its job. Otherwise it is a reference, shown but not judged.

Beside the health counters, each RDMA port's packet counters are kept (rxe's `sent_pkts` and
`rcvd_pkts`, the IB port counters' `port_xmit_packets` and `port_rcv_packets`): how many
packets the test sent and received over RDMA, per port (`detail["rdma_packets"]`, the
report's "rdma_packets" list). They are reported, never judged.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from strixwizard.facts import NodeFacts
from strixwizard.facts.counters import (
    ERROR_KINDS,
    RDMA_PACKETS,
    CounterSet,
    FabricCounters,
    counter_kind,
    fabric_counters,
)
from strixwizard.live.hosts import HostError
from strixwizard.live.results import Measurement, verdicts
from strixwizard.model import Status
from strixwizard.site import Site
from strixwizard.topology import fabric_ports, in_use

if TYPE_CHECKING:
    from strixwizard.probe import Probe

KIND = "counters"
TOOL = "ethtool -S, hw_counters"  # and the netdev statistics in sysfs (kept: a report key)
#: Counter kinds whose growth during a passing test makes the run a warning: retransmits,
#: sequence errors and discards (packets the fabric lost).
LOSSY_KINDS = ERROR_KINDS
LOSSY = "the fabric is lossy: PFC is not doing its job"
#: When frames arrived damaged (netdev CRC, frame or length errors), the cable or link is the
#: suspect, not flow control.
CORRUPT = "frames arrived damaged (CRC, frame or length errors): suspect the cable or link"


@runtime_checkable
class Collects(Protocol):
    """A node session that can collect (every `Host` the services build can)."""

    def collect(self, spec: Mapping[str, Any] | None = None) -> Probe: ...


@dataclass(frozen=True)
class Target:
    """What to read on one node: its fabric interfaces and their RDMA ports."""

    netdevs: tuple[str, ...]
    ports: tuple[tuple[str, int], ...]

    def spec(self) -> dict[str, Any]:
        """The collector spec that reads these counters and nothing else."""
        files = [f"/sys/class/infiniband/{device}/ports/{port}/{directory}/*"
                 for device, port in self.ports for directory in ("hw_counters", "counters")]
        files += [f"/sys/class/net/{netdev}/statistics/*" for netdev in self.netdevs]
        return {"files": files, "links": ["/sys/class/infiniband/*", "/sys/class/net/*"],
                "commands": [{"argv": ["ethtool", "-S", netdev]} for netdev in self.netdevs]}


def targets(site: Site, facts: Mapping[str, NodeFacts], nodes: Sequence[str]) -> dict[str, Target]:
    """Per node: the fabric interfaces in use and the RDMA ports on them (from discovery)."""
    found = {}
    for name in nodes:
        node = facts.get(name)
        if node is None:
            continue
        ports = [f for f in fabric_ports(node, site) if in_use(f)]
        found[name] = Target(tuple(f.netdev.name for f in ports),
                             tuple((f.port.device, f.port.number) for f in ports if f.port))
    return found


@dataclass(frozen=True)
class Sample:
    counters: FabricCounters | None
    note: str = ""


def sample(host: Collects, target: Target) -> Sample:
    """Read a node's counters now (a snapshot over SSH, or this machine's files at once)."""
    try:
        probe = host.collect(target.spec())
        return Sample(fabric_counters(probe, target.netdevs, target.ports))
    except HostError as error:
        return Sample(None, f"counters not read: {error}")


def sample_all(hosts: Mapping[str, object], wanted: Mapping[str, Target]) -> dict[str, Sample]:
    found = {}
    for name, target in wanted.items():
        host = hosts.get(name)
        if isinstance(host, Collects):
            found[name] = sample(host, target)
    return found


@dataclass(frozen=True)
class CounterDelta:
    host: str
    device: str
    counter: str
    before: int
    after: int

    @property
    def reset(self) -> bool:
        """The counter went backwards (NIC reset, driver reload, wrap, NIC replaced): its
        growth during the test is unknown."""
        return self.after < self.before

    @property
    def delta(self) -> int:
        """The growth; after a reset, the growth since the reset (a lower bound)."""
        return self.after if self.reset else self.after - self.before

    @property
    def said(self) -> str:
        """`+5`, or `reset during the test: growth unknown (at least 7 since the reset)`."""
        if self.reset:
            return (f"reset during the test: growth unknown (at least {self.after} since the "
                    "reset)")
        return f"+{self.delta}"

    @property
    def kind(self) -> str:
        return counter_kind(self.counter)

    def to_json(self) -> dict[str, Any]:
        return {"host": self.host, "device": self.device, "counter": self.counter,
                "before": self.before, "after": self.after, "delta": self.delta, "kind": self.kind,
                **({"reset": True} if self.reset else {})}

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> CounterDelta:
        return CounterDelta(data["host"], data["device"], data["counter"], int(data["before"]),
                            int(data["after"]))


def _by_device(counters: FabricCounters) -> dict[str, dict[str, int]]:
    merged: dict[str, dict[str, int]] = {}
    for found in counters.sets:
        values = merged.setdefault(found.device, {})
        for name, value in found.values.items():
            values.setdefault(name, value)
    return merged


def _kept(values: dict[str, int]) -> dict[str, int]:
    """The health and RDMA packet counters of a device; a device with none (a veth) keeps
    all it has."""
    found = CounterSet("", "", values)
    return {**found.health, **found.packets} or values


def deltas(host: str, before: FabricCounters, after: FabricCounters) -> list[CounterDelta]:
    """Per device and counter read both times: before, after (health counters only, unless
    the device has none)."""
    rows = []
    old = _by_device(before)
    for device, values in _by_device(after).items():
        if device not in old:
            continue
        for name, value in _kept(values).items():
            if name in old[device]:
                rows.append(CounterDelta(host, device, name, old[device][name], value))
    return rows


def _text(rows: Sequence[CounterDelta]) -> str:
    return ", ".join(f"{r.host}:{r.device} {r.counter} {r.said}" for r in rows)


@dataclass(frozen=True)
class PortPackets:
    """The packets one RDMA port sent and received during the test (None: not counted)."""

    host: str
    device: str
    sent: CounterDelta | None
    received: CounterDelta | None

    @property
    def said(self) -> str:
        """"sent +1200, received +1180" (a reset says so)."""
        return ", ".join(f"{way} {d.said}" for way, d in (("sent", self.sent),
                                                          ("received", self.received)) if d)

    def to_json(self) -> dict[str, Any]:
        reset = any(d.reset for d in (self.sent, self.received) if d)
        return {"host": self.host, "device": self.device,
                "sent": self.sent.delta if self.sent else None,
                "received": self.received.delta if self.received else None,
                **({"reset": True} if reset else {})}


def rdma_packets(rows: Sequence[CounterDelta]) -> list[PortPackets]:
    """Per RDMA port read both times, the packets it sent and received (`RDMA_PACKETS`)."""
    ports: dict[tuple[str, str], dict[str, CounterDelta]] = {}
    for r in rows:
        way = RDMA_PACKETS.get(r.counter)
        if way is not None:
            ports.setdefault((r.host, r.device), {}).setdefault(way, r)
    return [PortPackets(host, device, ways.get("sent"), ways.get("received"))
            for (host, device), ways in ports.items()]


def _packets_text(ports: Sequence[PortPackets]) -> str:
    """"; over RDMA: node-a:rocep194s0/1 sent +1200, received +1180 packets" or ""."""
    if not ports:
        return ""
    return "; over RDMA: " + "; ".join(f"{p.host}:{p.device} {p.said} packets" for p in ports)


RESET = "a counter went backwards during the test: the loss it would show is unknown"


def counters_measurement(before: Mapping[str, Sample], after: Mapping[str, Sample],
                         results: Sequence[Measurement], pair: tuple[str, str]) -> Measurement:
    """The run's counter deltas, judged: WARN when retransmits or sequence errors grew while a
    test passed; else a reference that reports them."""
    rows: list[CounterDelta] = []
    notes = [s.note for s in (*before.values(), *after.values()) if s.note]
    for host, first in before.items():
        last = after.get(host)
        if first.counters is None or last is None or last.counters is None:
            continue
        rows += deltas(host, first.counters, last.counters)
        notes += [f"{host}: {note}" for note in last.counters.notes]
    grown = [r for r in rows if r.kind in LOSSY_KINDS and r.delta > 0 and not r.reset]
    resets = [r for r in rows if r.reset]
    passed = [m for m in verdicts(results) if m.status is Status.PASS and m.kind != KIND]
    passing = [m for m in passed if m.transport == "rdma" or m.kind == "rccl"] or passed
    changed = [r for r in rows if (r.delta or r.reset) and r.kind != "packets"]
    ports = rdma_packets(rows)
    packets = _packets_text(ports)
    detail: dict[str, Any] = {"counters": [r.to_json() for r in rows]}
    if ports:
        detail["rdma_packets"] = [p.to_json() for p in ports]
    if notes:
        detail["notes"] = "; ".join(dict.fromkeys(notes))
    hosts = len({r.host for r in rows})
    if resets:  # never "no error grew": what the counters would show is not known
        lossy = f"; {LOSSY}: {_text(grown)}" if grown and passing else ""
        return Measurement(KIND, "fabric", TOOL, pair, Status.WARN,
                           f"{RESET}: {_text(resets[:6])}"
                           + (f" (and {len(resets) - 6} more)" if len(resets) > 6 else "")
                           + lossy + packets, detail=detail)
    if grown and passing:
        tests = ", ".join(dict.fromkeys(f"{m.transport.upper()} {m.kind} {m.pair_label}"
                                        for m in passing))
        why = CORRUPT if any(r.kind == "corrupt" for r in grown) else LOSSY
        return Measurement(KIND, "fabric", TOOL, pair, Status.WARN,
                           f"{why}: {_text(grown)} while {tests} passed{packets}", detail=detail)
    if not rows:
        summary = "fabric counters: none read before and after the run"
    elif grown:
        summary = f"fabric counters: {_text(grown)} (no test passed to judge){packets}"
    else:
        moved = f"; changed: {_text(changed[:6])}" if changed else ""
        summary = (f"fabric counters: {len(rows)} read on {hosts} node(s) before and after, "
                   f"no retransmit or sequence error grew{packets}{moved}")
    return Measurement(KIND, "fabric", TOOL, pair, None, summary, role="reference", detail=detail)


def delta_lines(m: Measurement, limit: int = 12) -> list[str]:
    """The counters that changed, errors first: "node-b:enp194s0np0 link_xoff_tx.nic 5120 ->
    6323 (+1203, pause)"; then how many were read unchanged."""
    rows = [CounterDelta.from_json(r) for r in m.detail.get(KIND, [])]
    changed = sorted((r for r in rows if r.delta or r.reset),
                     key=lambda r: (not r.reset, r.kind not in LOSSY_KINDS, r.host))
    lines = [f"{r.host}:{r.device} {r.counter} {r.before} -> {r.after} "
             f"({r.said if r.reset else f'{r.delta:+d}'}, {r.kind})" for r in changed[:limit]]
    if len(changed) > limit:
        lines.append(f"... and {len(changed) - limit} more changed")
    if rows:
        lines.append(f"{len(rows) - len(changed)} of {len(rows)} counters read did not change")
    return lines


def counter_rows(results: Sequence[Measurement]) -> list[dict[str, Any]]:
    """The report's "counters" list: the deltas of the run's counters measurement(s)."""
    return [row for m in results if m.kind == KIND for row in m.detail.get("counters", [])]


def packet_rows(results: Sequence[Measurement]) -> list[dict[str, Any]]:
    """The report's "rdma_packets" list: per RDMA port, the packets sent and received over
    RDMA during the run ({host, device, sent, received}, `reset` when a counter went back)."""
    return [row for m in results if m.kind == KIND for row in m.detail.get("rdma_packets", [])]


def sampled(stream: Iterator[Measurement], hosts: Mapping[str, object], wanted: Mapping[str, Target],
            pair: tuple[str, str], cancelled: Callable[[], bool] = lambda: False
            ) -> Iterator[Measurement]:
    """`stream`, with the counters read before it starts and after it ends, and their deltas
    as a last measurement. A stream closed early, or cancelled, reads nothing after."""
    before = sample_all(hosts, wanted) if wanted else {}
    if not before:
        yield from stream
        return
    results = []
    for measurement in stream:
        results.append(measurement)
        yield measurement
    if not cancelled():
        yield counters_measurement(before, sample_all(hosts, wanted), results, pair)


def recorded(data: Mapping[str, Any], results: Sequence[Measurement], pair: tuple[str, str],
             source: str) -> Measurement:
    """The counters measurement of a recording (the demo's `recordings/counters.json`:
    per host, "before" and "after" lists of {device, source, values})."""
    def counters(sets: Sequence[Mapping[str, Any]]) -> Sample:
        return Sample(FabricCounters(tuple(CounterSet(s["device"], s["source"], dict(s["values"]))
                                           for s in sets)))

    hosts = data["hosts"]
    before = {name: counters(sides["before"]) for name, sides in hosts.items()}
    after = {name: counters(sides["after"]) for name, sides in hosts.items()}
    measured = counters_measurement(before, after, results, pair)
    return Measurement(measured.kind, measured.transport, measured.tool, measured.pair,
                       measured.status, measured.summary, role=measured.role, source=source,
                       detail={**measured.detail, "recording": "demo/recordings/counters.json"})

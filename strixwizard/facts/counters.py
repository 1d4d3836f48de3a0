"""Fabric health counters: `ethtool -S IF` and the RDMA port counters in sysfs.

Three sources, each declared once:
- `ethtool -S IF` prints `name: value` lines under a "NIC statistics:" header (published
  excerpts are often `grep`ped, without the header). PFC pause counters per priority are
  `rx_priority_N_xon.nic`/`tx_priority_N_xoff.nic` on ice (E810; `link_xon_rx.nic` for
  link-level pause), `rx_prioN_pause`/`rx_prioN_pause_duration` on mlx5 with
  `rx_pause_ctrl_phy`/`tx_pause_ctrl_phy` for global pause;
- `/sys/class/infiniband/DEV/ports/P/hw_counters/NAME`: one number per file, names per
  driver. irdma (drivers/infiniband/hw/irdma/verbs.c, `irdma_hw_stat_descs`): `cnpHandled`,
  `cnpSent`, `RxECNMrkd`, `ip4InDiscards`, `tcpRetransSegs`; the GEN3 statistics patch
  ("RDMA/irdma: Add GEN3 HW statistics support", 2025) renamed the TCP and RDMA ones
  (`RetransSegs`, `InRdmaWrites`, ...) and added `Nak Sequence Error`, `RTO`, `Rcvd Out of
  order packets` (names with spaces). mlx5: `out_of_sequence`, `packet_seq_err`,
  `local_ack_timeout_err`, `out_of_buffer`, `np_cnp_sent`, `rp_cnp_handled`,
  `np_ecn_marked_roce_packets`. rxe (drivers/infiniband/sw/rxe/rxe_hw_counters.c):
  `out_of_seq_request` (`out_of_sequence` before 4.19), `rcvd_seq_err`, `retry_exceeded_err`...
  `lifespan` is the cache time of the others, not a counter;
- `/sys/class/infiniband/DEV/ports/P/counters/NAME`: the IB port counters
  (`port_xmit_discards`, `symbol_error`, `port_rcv_errors`, ...);
- `/sys/class/net/IF/statistics/NAME`: the kernel's netdev statistics (struct
  rtnl_link_stats64, Documentation/networking/statistics.rst), one unsigned 64-bit number per
  file, for every driver. thunderbolt-net has no `ethtool -S` counters of its own: these are
  its only error counters (drivers/net/thunderbolt/main.c, `tbnet_check_frame`: a frame the
  NHI flagged with a CRC error counts `rx_crc_errors`, a buffer overrun `rx_over_errors`, a
  bad size `rx_length_errors`, a frame out of sequence in a packet `rx_frame_errors`; each
  such frame is dropped and the packet it belonged to lost).

Every counter gets a kind (pause, retransmit, sequence, cnp, ecn, discard, packets, other):
what a grown counter means for a lossless fabric. Retransmits, sequence errors and discards
are errors; pauses, CNPs and ECN marks are the flow control at work; `packets` are the RDMA
port's own packet counts (`RDMA_PACKETS`), what crossed the fabric over RDMA, never judged.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from strixwizard.facts.outputs import Output, command_output, file_output, read_output, run_output
from strixwizard.probe import Probe

IB = "/sys/class/infiniband"
#: hw_counters entries that are not counters.
NOT_COUNTERS = frozenset({"lifespan"})
KINDS = ("pause", "retransmit", "sequence", "cnp", "ecn", "discard", "corrupt", "dropped", "packets",
         "other")
#: Kinds that mean packets were lost, damaged or resent: the fabric is not lossless.
ERROR_KINDS = frozenset({"retransmit", "sequence", "discard", "corrupt"})
NET = "/sys/class/net"
#: The netdev statistics read as health counters (the rest, bytes and packets, are "other").
#: `rx_dropped` counts frames the stack did not take (an unknown protocol, no memory): shown,
#: not judged. https://docs.kernel.org/networking/statistics.html
NETDEV_KINDS: dict[str, str] = {
    "rx_crc_errors": "corrupt", "rx_frame_errors": "corrupt", "rx_length_errors": "corrupt",
    "rx_errors": "discard", "tx_errors": "discard", "rx_over_errors": "discard",
    "rx_missed_errors": "discard", "rx_fifo_errors": "discard", "tx_fifo_errors": "discard",
    "tx_aborted_errors": "discard", "tx_carrier_errors": "discard",
    "tx_heartbeat_errors": "discard", "tx_window_errors": "discard",
    "rx_dropped": "dropped", "tx_dropped": "dropped", "rx_nohandler": "dropped",
}

#: The RDMA port's packet counters, sent or received: the packets that went over RDMA, not
#: the netdev's. rxe (drivers/infiniband/sw/rxe/rxe_hw_counters.c) counts each packet it hands
#: to the network (`sent_pkts`, rxe_net.c rxe_xmit_packet) and each it takes in (`rcvd_pkts`);
#: the IB port counters (counters/, mlx5 among them) name theirs `port_xmit_packets` and
#: `port_rcv_packets`.
RDMA_PACKETS: dict[str, str] = {"sent_pkts": "sent", "rcvd_pkts": "received",
                                "port_xmit_packets": "sent", "port_rcv_packets": "received"}

_STAT_LINE = re.compile(r"^\s*(?P<name>\S(?:.*\S)?)\s*:\s+(?P<value>-?\d+)\s*$")

#: Exact names, per driver, and what they count.
_NAMED: dict[str, str] = {
    # irdma (both the names before and after the GEN3 statistics rename)
    "cnpHandled": "cnp", "cnpSent": "cnp", "cnpIgnored": "cnp", "RxECNMrkd": "ecn",
    "ip4InDiscards": "discard", "ip6InDiscards": "discard",
    "tcpRetransSegs": "retransmit", "RetransSegs": "retransmit", "RTO": "retransmit",
    "Nak Sequence Error": "sequence", "Nak Sequence Error Implied": "sequence",
    "Rcvd Out of order packets": "sequence", "CRC errors": "discard",
    # mlx5
    "out_of_sequence": "sequence", "packet_seq_err": "sequence", "implied_nak_seq_err": "sequence",
    "local_ack_timeout_err": "retransmit", "duplicate_request": "retransmit",
    "rnr_nak_retry_err": "retransmit", "req_transport_retries_exceeded": "retransmit",
    "roce_adp_retrans": "retransmit", "roce_adp_retrans_to": "retransmit",
    "out_of_buffer": "discard", "rx_out_of_buffer": "discard",
    "np_cnp_sent": "cnp", "rp_cnp_handled": "cnp", "rp_cnp_ignored": "cnp",
    "np_ecn_marked_roce_packets": "ecn", "rx_ecn_mark": "ecn",
    "rx_discards_phy": "discard", "tx_discards_phy": "discard",
    # rxe
    "out_of_seq_request": "sequence", "rcvd_seq_err": "sequence",
    "retry_exceeded_err": "retransmit", "retry_rnr_exceeded_err": "retransmit",
    "completer_retry_err": "retransmit",
    # IB port counters (counters/)
    "port_xmit_discards": "discard", "port_rcv_errors": "discard", "symbol_error": "discard",
    "link_downed": "discard", "local_link_integrity_errors": "discard",
    "excessive_buffer_overrun_errors": "discard",
    # netdev statistics (/sys/class/net/IF/statistics)
    **NETDEV_KINDS,
    # the RDMA port's packets (rxe hw_counters, IB port counters)
    **dict.fromkeys(RDMA_PACKETS, "packets"),
}
_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^(rx|tx)_priority_\d_(xon|xoff)(\.nic)?$"), "pause"),  # ice per priority
    (re.compile(r"^link_(xon|xoff)_(rx|tx)(\.nic)?$"), "pause"),  # ice link-level pause
    (re.compile(r"^(rx|tx)_prio\d_pause(_duration|_transition)?$"), "pause"),  # mlx5 per priority
    (re.compile(r"^(rx|tx)_(global_)?pause(_ctrl_phy|_duration|_transition)?$"), "pause"),
    (re.compile(r"^(rx|tx)_prio\d_(buf|cong)_discard$"), "discard"),
    (re.compile(r"^(rx|tx)_prio\d_marked$"), "ecn"),
)


def counter_kind(name: str) -> str:
    """What a counter of that name counts: one of KINDS."""
    named = _NAMED.get(name)
    if named is not None:
        return named
    return next((kind for pattern, kind in _PATTERNS if pattern.match(name)), "other")


#: The kernel's counters are unsigned 64-bit (`u64` in `struct ethtool_stats`, sysfs).
U64_MAX = 2**64 - 1


class EthtoolStats(dict[str, int]):
    """Counter name → value, and the names whose value was not an unsigned 64-bit number
    (dropped: a value no kernel prints is no measurement)."""

    dropped: tuple[str, ...] = ()


def _u64(digits: str) -> int | None:
    if len(digits.lstrip("-")) > 20:  # longer than 2**64 ever is: never converted
        return None
    value = int(digits)
    return value if 0 <= value <= U64_MAX else None


def parse_ethtool_stats(text: str) -> EthtoolStats:
    """`ethtool -S IF`: counter name → value, in the order printed. Lines that are not
    `name: number` (the header, `grep` context) are skipped; a value that is not an unsigned
    64-bit number is dropped and named in `dropped`; no counter line at all is an error."""
    values = EthtoolStats()
    dropped: list[str] = []
    matched = False
    for line in text.splitlines():
        match = _STAT_LINE.match(line)
        if match:
            matched = True
            value = _u64(match.group("value"))
            if value is None:
                dropped.append(match.group("name"))
            else:
                values.setdefault(match.group("name"), value)
    if not matched:
        raise ValueError("no `name: value` counter line")
    values.dropped = tuple(dict.fromkeys(dropped))
    return values


def parse_counter(text: str) -> int:
    """One sysfs counter file: a decimal number, unsigned 64-bit."""
    value = text.strip()
    if not re.fullmatch(r"\d+", value) or _u64(value) is None:
        raise ValueError(f"not a counter value: {value[:40]!r}")
    return int(value)


STATISTICS: Output[EthtoolStats] = command_output(
    "ethtool.statistics", ("ethtool", "-S", "{netdev}"), parse_ethtool_stats)
HW_COUNTER: Output[int] = file_output(
    "rdma.hw_counter", IB + "/{rdmadev}/ports/{port}/hw_counters/{counter}", parse_counter)
PORT_COUNTER: Output[int] = file_output(
    "rdma.port_counter", IB + "/{rdmadev}/ports/{port}/counters/{counter}", parse_counter)
NETDEV_STATISTIC: Output[int] = file_output(
    "netdev.statistic", NET + "/{netdev}/statistics/{counter}", parse_counter)


@dataclass(frozen=True)
class CounterSet:
    """The counters of one interface or RDMA port, read at one moment."""

    device: str  # "enp194s0np0" (ethtool -S) or "rocep194s0/1" (hw_counters, counters)
    source: str  # "ethtool -S", "hw_counters", "counters", "statistics"
    values: dict[str, int] = field(default_factory=dict)

    def of_kind(self, *kinds: str) -> dict[str, int]:
        return {n: v for n, v in self.values.items() if counter_kind(n) in kinds}

    @property
    def health(self) -> dict[str, int]:
        """The counters that say something about the fabric's health (every kind but
        "packets" and "other")."""
        return {n: v for n, v in self.values.items() if counter_kind(n) not in ("packets", "other")}

    @property
    def packets(self) -> dict[str, int]:
        """The RDMA port's packet counters (`RDMA_PACKETS`) it has."""
        return self.of_kind("packets")


@dataclass(frozen=True)
class FabricCounters:
    """Every counter set read from a node's fabric interfaces, and what could not be read."""

    sets: tuple[CounterSet, ...]
    notes: tuple[str, ...] = ()


def _port_files(probe: Probe, out: Output[int], directory: str, device: str, port: int
                ) -> dict[str, int]:
    values: dict[str, int] = {}
    for name in sorted(probe.listdir(f"{IB}/{device}/ports/{port}/{directory}")):
        if name in NOT_COUNTERS:
            continue
        value = read_output(probe, out, rdmadev=device, port=str(port), counter=name)
        if value is not None:
            values[name] = value
    return values


def netdev_counters(probe: Probe, netdev: str) -> tuple[CounterSet | None, str]:
    """`ethtool -S` of one interface, or None with the reason."""
    reading = run_output(probe, STATISTICS, netdev=netdev)
    if reading.value is None:
        return None, reading.note
    dropped = getattr(reading.value, "dropped", ())
    note = (f"{netdev}: dropped {', '.join(dropped[:5])}{' …' if len(dropped) > 5 else ''}: "
            "not an unsigned 64-bit value" if dropped else "")
    return CounterSet(netdev, "ethtool -S", dict(reading.value)), note


def sysfs_statistics(probe: Probe, netdev: str) -> CounterSet | None:
    """The error and drop counters of /sys/class/net/IF/statistics (None when none was read)."""
    values: dict[str, int] = {}
    for name in sorted(probe.listdir(f"{NET}/{netdev}/statistics")):
        if name not in NETDEV_KINDS:
            continue
        value = read_output(probe, NETDEV_STATISTIC, netdev=netdev, counter=name)
        if value is not None:
            values[name] = value
    return CounterSet(netdev, "statistics", values) if values else None


def port_counters(probe: Probe, device: str, port: int) -> tuple[CounterSet, ...]:
    """The hw_counters and counters of one RDMA port (the directories that exist)."""
    found = []
    for directory, out in (("hw_counters", HW_COUNTER), ("counters", PORT_COUNTER)):
        values = _port_files(probe, out, directory, device, port)
        if values:
            found.append(CounterSet(f"{device}/{port}", directory, values))
    return tuple(found)


def fabric_counters(probe: Probe, netdevs: Sequence[str], ports: Sequence[tuple[str, int]]
                    ) -> FabricCounters:
    """The counters of the given interfaces (`ethtool -S`, then the netdev statistics in sysfs)
    and RDMA ports (sysfs)."""
    sets: list[CounterSet] = []
    notes: list[str] = []
    for netdev in dict.fromkeys(netdevs):
        found, note = netdev_counters(probe, netdev)
        statistics = sysfs_statistics(probe, netdev)
        if found is not None:
            sets.append(found)
        if note and (found is not None or statistics is None):  # dropped values, or nothing at all
            notes.append(note)
        if statistics is not None:
            sets.append(statistics)
    for device, port in dict.fromkeys(ports):
        found_ports = port_counters(probe, device, port)
        sets.extend(found_ports)
        if not found_ports:
            notes.append(f"{device}/{port}: no hw_counters or counters in sysfs")
    return FabricCounters(tuple(sets), tuple(notes))

"""ConnectX QoS as the node holds it: `mlnx_qos -i IF` and the RoCE traffic class in sysfs.

- `mlnx_qos -i IF` (MLNX_OFED's mlnx-tools; absent on most distribution installs) prints
  `Priority trust state: dscp|pcp` (older releases: `Priority trust mode:`), the dscp2prio
  table, `PFC configuration:` with an `enabled 0 0 0 1 0 0 0 0` row (and, newer, a
  `buffer` row), and one `tc: N ratelimit: ..., tsa: ...` block per traffic class listing
  its `priority:  P` lines. Layout from att/netarbiter
  nvmf/OUTPUTSAMPLE.setup-nic-lossless-layer3.sh.md.
- `/sys/class/infiniband/DEV/tc/1/traffic_class` (MLNX_OFED's mlx5 `traffic_class_show`):
  `Global tclass=106` when a global RoCE traffic class is set (ToS byte: DSCP << 2 | ECN),
  empty when not; rule lines may follow.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from strixwizard.facts.outputs import Output, command_output, file_output

_TRUST = re.compile(r"^\s*Priority trust (?:state|mode)\s*:\s*(\S+)", re.MULTILINE)
_DCBX = re.compile(r"^\s*DCBX mode\s*:\s*(.+?)\s*$", re.MULTILINE | re.IGNORECASE)
_TC = re.compile(r"^\s*tc:\s*(\d+)\b")
_PRIORITY = re.compile(r"^\s*priority:\s*(\d+)\s*$")
_ENABLED = re.compile(r"^\s*enabled((?:\s+[01])+)\s*$")
_TCLASS = re.compile(r"^Global tclass=(-?\d+)\s*$")


@dataclass(frozen=True)
class MlnxQos:
    """`mlnx_qos -i IF`: trust, DCBX mode, PFC and the priority to traffic-class map."""

    trust: str | None  # "dscp" or "pcp"
    dcbx_mode: str | None  # "OS controlled", "Firmware controlled"
    pfc_enabled: tuple[int, ...] | None  # priorities with PFC on
    priority_tc: dict[int, int]  # priority -> traffic class


def parse_mlnx_qos(text: str) -> MlnxQos:
    trust = _TRUST.search(text)
    dcbx = _DCBX.search(text)
    pfc: tuple[int, ...] | None = None
    priority_tc: dict[int, int] = {}
    tc: int | None = None
    for line in text.splitlines():
        enabled = _ENABLED.match(line)
        if enabled and pfc is None:
            flags = enabled.group(1).split()
            pfc = tuple(p for p, flag in enumerate(flags) if flag == "1")
            continue
        head = _TC.match(line)
        if head:
            tc = int(head.group(1))
            continue
        priority = _PRIORITY.match(line)
        if priority and tc is not None:
            priority_tc.setdefault(int(priority.group(1)), tc)
    if trust is None and pfc is None:
        raise ValueError("neither a `Priority trust state` line nor a PFC `enabled` row")
    return MlnxQos(trust.group(1).lower() if trust else None,
                   dcbx.group(1) if dcbx else None, pfc, priority_tc)


@dataclass(frozen=True)
class TrafficClass:
    """The ToS byte RoCE traffic of an RDMA device is sent with."""

    global_tclass: int | None  # the ToS byte RoCE traffic is sent with; None: not set

    @property
    def dscp(self) -> int | None:
        return self.global_tclass >> 2 if self.global_tclass is not None else None


def parse_traffic_class(text: str) -> TrafficClass:
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return TrafficClass(None)
    match = _TCLASS.match(lines[0].strip())
    if match is None:
        raise ValueError(f"not `Global tclass=N`: {lines[0][:60]!r}")
    value = int(match.group(1))
    return TrafficClass(value if value >= 0 else None)


#: root: MLNX_OFED's tool is not shown to read without privileges; kept behind sudo.
MLNX_QOS: Output[MlnxQos] = command_output("mlnx_qos", ("mlnx_qos", "-i", "{netdev}"), parse_mlnx_qos,
                                           root=True)
TRAFFIC_CLASS: Output[TrafficClass] = file_output(
    "rdma.traffic_class", "/sys/class/infiniband/{rdmadev}/tc/{tc}/traffic_class", parse_traffic_class)

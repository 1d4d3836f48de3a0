"""Parse rccl-tests / nccl-tests `all_reduce_perf` output and the `NCCL_DEBUG=INFO` log.

Table layouts (read from the header, never by position):
- current: `size count type redop root | time algbw busbw #wrong | time algbw busbw #wrong`
- older:   `size count type redop      | time algbw busbw error  | time algbw busbw error`
  (`error` is a float such as `0e+00`; `N/A` when validation is off).

The transport comes from the log: `NET/IB : Using [0]rocep1s0f0:1/RoCE ...`,
`Using network IB|Socket`, `Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0`.
Any `NET/Socket` channel, or `Using network Socket`, is a TCP fallback:
however fast it looked, the cluster is not using RDMA. `NET/IB : No device
found.` may appear harmlessly before the IB `Using` line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: The older layout prints the largest deviation seen; rounding gives ~1e-7.
ERROR_TOLERANCE = 1e-3


@dataclass(frozen=True)
class CollectiveRow:
    size_bytes: int
    count: int
    dtype: str
    redop: str
    root: int | None
    out_time_us: float
    out_algbw_gbs: float  # GB/s, as the tool prints (10^9 bytes)
    out_busbw_gbs: float
    out_wrong: float | None  # #wrong count, or the older max error; None = "N/A"
    in_time_us: float
    in_algbw_gbs: float
    in_busbw_gbs: float
    in_wrong: float | None

    def wrong(self, layout: str) -> bool:
        """Wrong results: a #wrong count above 0, or (older layout) a max error above
        ERROR_TOLERANCE (float sums legitimately show errors such as 2e-07)."""
        limit = 0.0 if layout == "root/#wrong" else ERROR_TOLERANCE
        return any(w is not None and w > limit for w in (self.out_wrong, self.in_wrong))


@dataclass(frozen=True)
class CollectiveTable:
    layout: str  # "root/#wrong" or "error"
    rows: tuple[CollectiveRow, ...]
    avg_busbw_gbs: float | None  # "# Avg bus bandwidth : x"; None when cut short
    out_of_bounds_ok: bool | None
    version: str | None  # "2.28.3-gfx1151-rccl:a188cf2"
    errors: tuple[str, ...]  # "Test NCCL failure ...", "NCCL WARN ..." lines

    @property
    def complete(self) -> bool:
        return self.avg_busbw_gbs is not None

    @property
    def wrong_rows(self) -> tuple[CollectiveRow, ...]:
        return tuple(r for r in self.rows if r.wrong(self.layout))

    @property
    def max_busbw_gbs(self) -> float | None:
        return max((max(r.out_busbw_gbs, r.in_busbw_gbs) for r in self.rows), default=None)


@dataclass(frozen=True)
class TransportEvidence:
    network: str | None  # "IB" or "Socket" from `Using network X`
    ib_devices: tuple[str, ...]  # ("rocep1s0f0:1",) from `NET/IB : Using [0]dev:port/RoCE`
    socket_devices: tuple[str, ...]  # ("eth0",) from `NET/Socket : Using [0]eth0:...`
    channels: tuple[str, ...]  # "NET/IB/0", "NET/Socket/0", "P2P/IPC" ... one per distinct kind
    lines: tuple[str, ...]  # the lines that gave it away, for the report

    @property
    def transport(self) -> str | None:
        """"NET/IB", "NET/Socket", or None when the log says nothing (not INFO level)."""
        if self.network == "Socket" or any(c.startswith("NET/Socket") for c in self.channels):
            return "NET/Socket"
        if self.network == "IB" or any(c.startswith("NET/IB") for c in self.channels) or self.ib_devices:
            return "NET/IB"
        return None


class RcclOutputError(ValueError):
    pass


def _number(text: str) -> float | None:
    if text.upper() == "N/A":
        return None
    return float(text)


def parse_all_reduce(text: str) -> CollectiveTable:
    columns: list[str] | None = None
    rows: list[CollectiveRow] = []
    avg = None
    bounds = None
    version = None
    errors: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if line.startswith("#"):
            body = line.lstrip("#").strip()
            words = body.split()
            if words[:2] == ["size", "count"]:
                columns = words
            elif body.startswith("Avg bus bandwidth"):
                avg = float(body.split(":", 1)[1])
            elif body.startswith("Out of bounds values"):
                bounds = body.rstrip().endswith("OK")
            continue
        if line.startswith(("RCCL version", "NCCL version")) and ":" in line and version is None:
            version = line.split(":", 1)[1].strip()
            continue
        if "NCCL WARN" in line or "failure" in line.lower():
            errors.append(line)
            continue
        if columns is None:
            continue
        cells = line.split()
        if len(cells) != len(columns) or not cells[0].isdigit():
            continue
        rows.append(_row(columns, cells))
    if columns is None:
        raise RcclOutputError("no all_reduce_perf table in the output"
                              + (f" ({errors[-1]})" if errors else ""))
    layout = "root/#wrong" if "root" in columns else "error"
    return CollectiveTable(layout, tuple(rows), avg, bounds, version, tuple(errors))


def _row(columns: list[str], cells: list[str]) -> CollectiveRow:
    first = columns.index("time")
    second = columns.index("time", first + 1)
    out = dict(zip(columns[first:second], cells[first:second], strict=True))
    inp = dict(zip(columns[second:], cells[second:], strict=True))
    wrong_key = "#wrong" if "#wrong" in columns else "error"
    root = cells[columns.index("root")] if "root" in columns else None
    return CollectiveRow(
        size_bytes=int(cells[0]), count=int(cells[1]), dtype=cells[2], redop=cells[3],
        root=int(root) if root is not None else None,
        out_time_us=float(out["time"]), out_algbw_gbs=float(out["algbw"]),
        out_busbw_gbs=float(out["busbw"]), out_wrong=_number(out[wrong_key]),
        in_time_us=float(inp["time"]), in_algbw_gbs=float(inp["algbw"]),
        in_busbw_gbs=float(inp["busbw"]), in_wrong=_number(inp[wrong_key]),
    )


_USING_NETWORK = re.compile(r"NCCL INFO Using network (\w+)")
_IB_USING = re.compile(r"NET/IB\s*:\s*Using\s+(.*?)(?:;|$)")
_SOCKET_USING = re.compile(r"NET/Socket\s*:\s*Using\s+(.*?)$")
_DEVICE = re.compile(r"\[\d+\]([^\s/\[;]+)")
_CHANNEL = re.compile(r"\bvia\s+(\S+)")


def parse_transport(log: str) -> TransportEvidence:
    network = None
    ib: list[str] = []
    sockets: list[str] = []
    channels: list[str] = []
    evidence: list[str] = []
    for raw in log.splitlines():
        if "NCCL INFO" not in raw:
            continue
        line = raw.strip()
        if (m := _USING_NETWORK.search(line)) is not None:
            network = network if network == "Socket" else m.group(1)
            evidence.append(line)
        elif (m := _IB_USING.search(line)) is not None:
            ib += [d for d in _DEVICE.findall(m.group(1)) if d not in ib]
            evidence.append(line)
        elif (m := _SOCKET_USING.search(line)) is not None:
            names = [d.split(":")[0].split("<")[0] for d in _DEVICE.findall(m.group(1))]
            sockets += [d for d in names if d not in sockets]
            evidence.append(line)
        elif "Channel" in line and (m := _CHANNEL.search(line)) is not None:
            kind = m.group(1)
            if kind not in channels:
                channels.append(kind)
                evidence.append(line)
    return TransportEvidence(network, tuple(ib), tuple(sockets), tuple(channels), tuple(evidence))

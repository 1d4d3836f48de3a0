"""Parse rccl-tests / nccl-tests `*_perf` output and the `NCCL_DEBUG=INFO` log.

Lines may carry a launcher prefix, removed first: `srun -l` (` 0: `), Open MPI
`--tag-output` (`[1,0]<stdout>:`), `mpirun -prepend-rank` (`[0] `), or a
timestamp (`[2025-10-16 22:16:08] `).

Table layouts (columns named by the header, never taken by position):
- current: `size count type redop root | time algbw busbw #wrong | time algbw busbw #wrong`
- older:   `size count type redop      | time algbw busbw error  | ...`
  (`error` is a float such as `0e+00`; `N/A` when validation is off);
- collectives without a reduction (all_gather, broadcast) lack `redop`, and
  all_to_all leaves the `redop` cell empty in its rows.

A binary built without MPI and started with `mpirun -np N` runs N single-rank
tests: each prints its own header (`# nThread ...`) and lists itself as
`Rank 0`; `single_rank_copies` says how many.

The transport comes from the log: `Using network IB|Socket|<plugin>` (2.29+:
`Assigned NET plugin X to comm`), `NET/IB : Using [0]rocep1s0f0:1/RoCE ...`,
`Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0` and, before NCCL 2.6,
`Ring 00 : 0 -> 1 [send] via NET/Socket/0`. Any `NET/Socket` channel, or
`Using network Socket`, is a TCP fallback. With no `Using network` line and
no channel line, the network set up tells: `NET/IB : Using [0]dev` means IB,
`NET/Socket : Using [0]eth0` alone means the socket fallback (NCCL 2.4 prints
both when IB works). `NET/IB : No device found.` may appear harmlessly before
the IB `Using` line. Third-party net plugins (`Using network AWS Libfabric`,
`IBext` is NVIDIA's own IB plugin) are named, not guessed; a network is the first
word after `Using network` (whatever follows it), `AWS Libfabric` excepted.

NCCL 2.23+ and RCCL 7 (ROCm 7 / TheRock, since ROCm/rccl PR #2110 enabled NCCL's
virtual devices) list each device as it is opened, `NET/IB: [0]
rocep1s0f0:uverbs0:1/RoCE provider=Mlx5 speed=200000 ...`, then `NET/IB : Made
virtual device [0] name=rocep1s0f0 ...`: both name the devices in use, with or
without the later `NET/IB : Using` line.

Why IB was not used, when the log says it, is kept as written for the verdict:
`Failed to open libibverbs.so[.1]` (an INFO line; a WARN in NCCL 2.8), `NET/IB : No
device found.`, `NCCL_IB_DISABLE set by environment to 1.`, `Failed to initialize
NET plugin IB` (NCCL 2.29). RCCL 7.0 in the rocm/vllm container of ROCm/ROCm issue
5656 prints the first, then `NET/Socket : Using` and `Using network Socket`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

#: The older layout prints the largest deviation seen; rounding gives ~1e-7.
ERROR_TOLERANCE = 1e-3

_LAUNCHER_PREFIX = re.compile(
    r"^(?:\s*\d+:(?:\s|$)|\[\d+,\d+\]<std(?:out|err)>:|\[\d+\]\s|\[\d{4}-\d\d-\d\d[ T][\d:.]+\]\s)")
_VERSION = re.compile(r"(?<![\w-])(?:NCCL|RCCL) version\s*:?\s*(\d[^\s,]*)")
_RANK_LINE = re.compile(r"^#\s*Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+(\d+)\s+on\s+(\S+)")
_NRANKS = re.compile(r"\bn[Rr]anks (\d+)\b")


def strip_launcher_prefix(line: str) -> str:
    """One output line without the prefix its launcher added (applied repeatedly)."""
    for _ in range(3):
        match = _LAUNCHER_PREFIX.match(line)
        if match is None:
            break
        line = line[match.end():]
    return line


@dataclass(frozen=True)
class CollectiveRow:
    size_bytes: int
    count: int
    dtype: str
    redop: str | None  # None: the collective has no reduction (all_gather, broadcast)
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
class RankLine:
    rank: int
    pid: int
    host: str


@dataclass(frozen=True)
class CollectiveTable:
    layout: str  # "root/#wrong" (a #wrong count) or "error" (the older max deviation)
    rows: tuple[CollectiveRow, ...]
    avg_busbw_gbs: float | None  # "# Avg bus bandwidth : x"; None when cut short
    out_of_bounds_ok: bool | None
    version: str | None  # "2.28.3-gfx1151-rccl:a188cf2", "2.21.5+cuda12.4"
    errors: tuple[str, ...]  # "Test NCCL failure ...", "NCCL WARN ..." lines
    columns: tuple[str, ...] = ()
    runs: int = 1  # "# nThread ..." headers: one per test process that printed
    ranks: tuple[RankLine, ...] = ()  # "#  Rank  0 Group  0 Pid 1234 on host device 0 ..."
    nranks: tuple[int, ...] = ()  # "nranks N" of the NCCL INFO init lines

    @property
    def complete(self) -> bool:
        return self.avg_busbw_gbs is not None

    @property
    def wrong_rows(self) -> tuple[CollectiveRow, ...]:
        return tuple(r for r in self.rows if r.wrong(self.layout))

    @property
    def non_finite(self) -> str | None:
        """The first figure that is no finite number (`inf`, `nan`, or in the `-J` document
        `Infinity` or 1e400), as "busbw inf at 134217728 B"; None when every one is finite."""
        if self.avg_busbw_gbs is not None and not math.isfinite(self.avg_busbw_gbs):
            return f"average busbw {self.avg_busbw_gbs}"
        for r in self.rows:
            for name, value in (("time", r.out_time_us), ("algbw", r.out_algbw_gbs),
                                ("busbw", r.out_busbw_gbs), ("#wrong", r.out_wrong),
                                ("time", r.in_time_us), ("algbw", r.in_algbw_gbs),
                                ("busbw", r.in_busbw_gbs), ("#wrong", r.in_wrong)):
                if value is not None and not math.isfinite(value):
                    return f"{name} {value} at {r.size_bytes} B"
        return None

    @property
    def max_busbw_gbs(self) -> float | None:
        return max((max(r.out_busbw_gbs, r.in_busbw_gbs) for r in self.rows), default=None)

    @property
    def world_size(self) -> int | None:
        """Ranks in one communicator, from the rank list or NCCL's own `nranks`."""
        sizes = [max(r.rank for r in self.ranks) + 1] if self.ranks else []
        sizes += list(self.nranks)
        return max(sizes) if sizes else None

    @property
    def single_rank_copies(self) -> int | None:
        """How many separate single-rank tests ran, when the output shows them
        (duplicate headers, or every listed process is rank 0); None otherwise."""
        zero_only = len(self.ranks) > 1 and all(r.rank == 0 for r in self.ranks)
        if zero_only and len({(r.host, r.pid) for r in self.ranks}) > 1:
            return max(len(self.ranks), self.runs)
        if self.runs > 1 and (self.world_size or 1) == 1:
            return self.runs
        return None


class RcclOutputError(ValueError):
    pass


def _number(text: str) -> float | None:
    if text.upper() == "N/A":
        return None
    return float(text)


def _is_int(text: str) -> bool:
    return text.lstrip("-").isdigit()


def parse_all_reduce(text: str) -> CollectiveTable:
    """The result table of any nccl-tests/rccl-tests `*_perf` binary (the name is historical)."""
    columns: list[str] | None = None
    rows: list[CollectiveRow] = []
    avg = None
    bounds = None
    version = None
    errors: list[str] = []
    runs = 0
    ranks: list[RankLine] = []
    nranks: list[int] = []
    for raw in text.splitlines():
        line = strip_launcher_prefix(raw).strip()
        if not line:
            continue
        if line.startswith("#"):
            body = line.lstrip("#").strip()
            words = body.split()
            if words[:2] == ["size", "count"]:
                columns = words
            elif words[:1] == ["nThread"]:
                runs += 1
            elif (m := _RANK_LINE.match(line)) is not None:
                ranks.append(RankLine(int(m.group(1)), int(m.group(2)), m.group(3)))
            elif body.startswith("Avg bus bandwidth"):
                avg = float(body.split(":", 1)[1])
            elif body.startswith("Out of bounds values"):
                bounds = body.rstrip().endswith("OK")
            continue
        if "NCCL INFO" in line and (m := _NRANKS.search(line)) is not None:
            nranks.append(int(m.group(1)))
        if version is None and "WARN" not in line and (m := _VERSION.search(line)) is not None:
            version = m.group(1)
            continue
        if "NCCL WARN" in line or "failure" in line.lower():
            errors.append(line)
            continue
        if columns is None:
            continue
        row = _row(columns, line.split())
        if row is not None:
            rows.append(row)
    if columns is None:
        raise RcclOutputError("no all_reduce_perf table in the output"
                              + (f" ({errors[-1]})" if errors else ""))
    layout = "root/#wrong" if "#wrong" in columns else "error"
    return CollectiveTable(layout, tuple(rows), avg, bounds, version, tuple(errors), tuple(columns),
                           max(runs, 1), tuple(ranks), tuple(sorted(set(nranks))))


def _row(columns: list[str], cells: list[str]) -> CollectiveRow | None:
    """One data row, its cells matched to the header's names; None for any other line.

    The measured columns (from the first `time`) are matched from the right;
    before them come size, count and type, then whichever of redop and root
    the header names (all_to_all prints an empty redop cell)."""
    if "time" not in columns or columns[:3] != ["size", "count", "type"]:
        return None
    first = columns.index("time")
    measured = columns[first:]
    if len(cells) < 3 + len(measured) or not cells[0].isdigit() or not cells[1].isdigit():
        return None
    values = cells[len(cells) - len(measured):]
    middle = cells[3:len(cells) - len(measured)]
    named = columns[3:first]
    if len(middle) > len(named):
        return None
    try:
        second = measured.index("time", 1)
        out = dict(zip(measured[:second], values[:second], strict=True))
        inp = dict(zip(measured[second:], values[second:], strict=True))
        wrong_key = "#wrong" if "#wrong" in measured else "error"
        redop: str | None = None
        root: int | None = None
        if len(middle) == len(named):
            given = dict(zip(named, middle, strict=True))
            redop = given.get("redop")
            root = int(given["root"]) if "root" in given else None
        else:  # a cell left empty: tell redop from root by its content
            for cell in middle:
                if _is_int(cell) and "root" in named:
                    root = int(cell)
                else:
                    redop = cell
        return CollectiveRow(
            size_bytes=int(cells[0]), count=int(cells[1]), dtype=cells[2], redop=redop, root=root,
            out_time_us=float(out["time"]), out_algbw_gbs=float(out["algbw"]),
            out_busbw_gbs=float(out["busbw"]), out_wrong=_number(out[wrong_key]),
            in_time_us=float(inp["time"]), in_algbw_gbs=float(inp["algbw"]),
            in_busbw_gbs=float(inp["busbw"]), in_wrong=_number(inp[wrong_key]),
        )
    except (ValueError, KeyError):
        return None


@dataclass(frozen=True)
class TransportEvidence:
    network: str | None  # "IB", "Socket", "IBext", "AWS Libfabric" from `Using network X`
    ib_devices: tuple[str, ...]  # ("rocep1s0f0:1",) from `NET/IB : Using [0]dev:port/RoCE`
    socket_devices: tuple[str, ...]  # ("eth0",) from `NET/Socket : Using [0]eth0:...`
    channels: tuple[str, ...]  # "NET/IB/0", "NET/Socket/0", "P2P/IPC" ... one per distinct kind
    lines: tuple[str, ...]  # the lines that gave it away, for the report
    networks: tuple[str, ...] = ()  # every network named, in order of appearance
    ib_missing: bool = False  # `NET/IB : No device found.`
    version: str | None = None  # "2.21.5+cuda12.4" from `NCCL version ...`, any layout
    virtual_devices: tuple[str, ...] = ()  # `Made virtual device [0] name=X` (X may be a+b)
    #: why IB was not used, each message as the log says it ("Failed to open libibverbs.so[.1]")
    ib_unavailable: tuple[str, ...] = ()

    @property
    def channel_nets(self) -> tuple[str, ...]:
        """The networks the channels ran over: "NET/IB/0/GDRDMA" -> "IB"."""
        nets: list[str] = []
        for kind in self.channels:
            if kind.startswith("NET/"):
                name = kind[4:].split("/")[0]
                if name not in nets:
                    nets.append(name)
        return tuple(nets)

    @property
    def plugin(self) -> str | None:
        """A third-party net plugin that carried the traffic ("AWS Libfabric"), else None."""
        named = [n for n in (*self.networks, *self.channel_nets) if n and not _builtin(n)]
        if not named or self.transport is not None:
            return None
        return named[0]

    @property
    def transport(self) -> str | None:
        """"NET/IB", "NET/Socket", or None: nothing said (not INFO level) or a third-party
        plugin carried it (see `plugin`)."""
        said = [*self.networks, *self.channel_nets]
        if any(_socket(n) for n in said):
            return "NET/Socket"
        if any(_ib(n) for n in said):
            return "NET/IB"
        if said:
            return None
        if self.ib_devices:
            return "NET/IB"
        if self.socket_devices:
            return "NET/Socket"
        return None

    @property
    def how(self) -> str:
        """How the transport was told, for the report."""
        if self.networks:
            return f"`Using network {self.networks[-1]}`"
        if self.channel_nets:
            return "the channel lines"
        if self.transport == "NET/Socket":
            return "`NET/Socket : Using` with no IB device set up"  # why: see why_not_ib
        if self.transport == "NET/IB":
            return "`NET/IB : Using`"
        return "nothing"

    @property
    def why_not_ib(self) -> str:
        """Why IB was not used, quoted from the log with what it means; "" when the log
        does not say."""
        if not self.ib_unavailable:
            return ""
        said = self.ib_unavailable[0]
        meaning = next((m for start, m in _IB_UNAVAILABLE_MEANS if said.startswith(start)), "")
        return f"the log says why not IB: `{said}`" + (f" ({meaning})" if meaning else "")


#: what each reason the log gives for not using IB means, by how the message starts
_IB_UNAVAILABLE_MEANS = (
    ("Failed to open libibverbs", "libibverbs cannot be loaded where RCCL runs: install rdma-core "
     "there, in the container image too"),
    ("NET/IB", "RCCL sees no RDMA device: none is up, none is passed into the container, or "
     "NCCL_IB_HCA matches none"),
    ("NCCL_IB_DISABLE", "NCCL_IB_DISABLE switched IB off"),
)


def _socket(name: str) -> bool:
    return name == "Socket"


def _ib(name: str) -> bool:
    return name == "IB" or name.startswith("IBext")


def _builtin(name: str) -> bool:
    return _socket(name) or _ib(name)


_USING_NETWORK = re.compile(r"NCCL INFO (?:Using network|Assigned NET plugin) (.+?)(?: to comm)?\s*$")
#: plugin names with a space in them (aws-ofi-nccl); any other network is one word
_MULTIWORD_NETWORKS = ("AWS Libfabric",)
_IB_OPENED = re.compile(r"NET/IB\s*:\s*\[\d+\]\s*([^\s:\[\]]+):uverbs\d+:(\d+)/\w+")
_VIRTUAL_DEVICE = re.compile(r"NET/IB\s*:\s*Made virtual device \[\d+\] name=(\S+)")
_IB_USING = re.compile(r"NET/IB\s*:\s*Using\s+(.*?)(?:;|$)")
_IB_MISSING = re.compile(r"NET/IB\s*:\s*No device found")
_IB_UNAVAILABLE = re.compile(
    r"NCCL (?:INFO|WARN) ((?:Failed to open libibverbs|NET/IB\s*:\s*No device found"
    r"|NCCL_IB_DISABLE set by environment to [1-9]|Failed to initialize NET plugin IB\b).*?)\s*$")
_SOCKET_USING = re.compile(r"NET/Socket\s*:\s*Using\s+(.*?)$")
_DEVICE = re.compile(r"\[\d+\]([^\s/\[;]+)")
_CHANNEL = re.compile(r"\b(?:Channel|Ring)\s+\d+\S*\s+:.*?\bvia\s+(NET/[^/]+/\d+\S*|\S+)")


def parse_transport(log: str) -> TransportEvidence:
    networks: list[str] = []
    ib: list[str] = []
    sockets: list[str] = []
    channels: list[str] = []
    evidence: list[str] = []
    missing = False
    version = None
    virtual: list[str] = []
    unavailable: list[str] = []
    for raw in log.splitlines():
        if version is None and "WARN" not in raw and (v := _VERSION.search(raw)) is not None:
            version = v.group(1)
        if (u := _IB_UNAVAILABLE.search(raw)) is not None and u.group(1) not in unavailable:
            unavailable.append(u.group(1))
        if "NCCL INFO" not in raw:
            continue
        line = strip_launcher_prefix(raw).strip()
        if (m := _USING_NETWORK.search(line)) is not None:
            name = _network_name(m.group(1))
            if name and name not in networks:
                networks.append(name)
                evidence.append(line)
        elif (m := _IB_OPENED.search(line)) is not None:
            device = f"{m.group(1)}:{m.group(2)}"
            if device not in ib:
                ib.append(device)
                evidence.append(line)
        elif (m := _VIRTUAL_DEVICE.search(line)) is not None:
            if m.group(1) not in virtual:
                virtual.append(m.group(1))
                evidence.append(line)
        elif (m := _IB_USING.search(line)) is not None:
            ib += [d for d in _DEVICE.findall(m.group(1)) if d not in ib]
            evidence.append(line)
        elif _IB_MISSING.search(line):
            if not missing:
                evidence.append(line)
            missing = True
        elif (m := _SOCKET_USING.search(line)) is not None:
            names = [d.split(":")[0].split("<")[0] for d in _DEVICE.findall(m.group(1))]
            sockets += [d for d in names if d not in sockets]
            evidence.append(line)
        elif (m := _CHANNEL.search(line)) is not None:
            kind = m.group(1)
            if kind not in channels:
                channels.append(kind)
                evidence.append(line)
    network = next((n for n in networks if _socket(n)), networks[-1] if networks else None)
    return TransportEvidence(network, tuple(ib), tuple(sockets), tuple(channels), tuple(evidence),
                             tuple(networks), missing, version, tuple(virtual), tuple(unavailable))


def _network_name(rest: str) -> str:
    """ "IB" from "IB", "Socket (plugin v8)" → "Socket"; "AWS Libfabric" stays whole."""
    rest = rest.strip()
    for name in _MULTIWORD_NETWORKS:
        if rest == name or rest.startswith(name + " "):
            return name
    words = rest.split()
    return words[0].rstrip(",;:.") if words else ""


# -- the JSON document of `-J, --output_file FILE.json` ---------------------------------

#: nccl-tests (NVIDIA/nccl-tests commits ad956f1 and 00f5281, October 2025) and rccl-tests
#: since its nccl-tests 2.17.9 sync (ROCm/rocm-systems PR #3141, projects/rccl-tests) write the
#: whole run as one JSON document with `-J, --output_file <file>` (the type taken from the
#: `.json` suffix), from the main rank only; src/util.cu writes it: `version`, `args`, `env`,
#: `nccl_version` (rccl-tests: `rccl_version`) as NCCL_VERSION_CODE, `config` with `devices`,
#: `results` (one object per size: `size`, `count`, `type`, `redop`, `root` (a padded string),
#: `out_of_place`/`in_place` each `{time|cpu_time, alg_bw, bus_bw, nwrong}`, nwrong null when
#: validation is off), `out_of_bounds`, `average_bus_bandwidth {bandwidth, okay}`, `errors`.
#: Booleans are written as the strings "true"/"false". Older builds lack `-J` (their `--help`
#: does not list it) and are read from the text table. `env` holds the process environment:
#: only the figures are kept from the document, never the environment. RCCL's own Reporter
#: (`-Z json` with `-x FILE`, ROCm/rccl-tests PR #93; `-X FILE` since the 2.17.9 sync) is not
#: read: its layout changed (JSON fragments, then a list: ROCm/rccl-tests PR #140), differs
#: with MPI_SUPPORT, and builds that have it but not -J print the text table this module reads.
JSON_FILE_OPTION = "-J"
_JSON_HELP = re.compile(r"-J,\s*--output_file\b[^\n]*json", re.IGNORECASE)
_JSON_COLUMNS = ("size", "count", "type", "redop", "root",
                 "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong")


_WRITING_JSON = re.compile(r"^# Writing JSON output to (\S+)\s*$", re.MULTILINE)


def json_files_written(output: str, asked: str) -> tuple[str, ...]:
    """The files the run says it wrote (`# Writing JSON output to F`): the tool adds `.N` to
    a name already taken, and every single-rank copy of an MPI-less build writes its own.
    Only `asked` and its `.N` variants are kept: a name the output gives otherwise is never
    read or removed (the output is the node's text, not ours)."""
    ours = re.compile(re.escape(asked) + r"(?:\.\d+)?")
    return tuple(dict.fromkeys(m.group(1) for m in _WRITING_JSON.finditer(output)
                               if ours.fullmatch(m.group(1))))


def supports_json_file(help_text: str) -> bool:
    """Whether an `*_perf` binary's `--help` offers `-J, --output_file` with JSON."""
    return _JSON_HELP.search(help_text) is not None


def _version_code(code: object) -> str | None:
    """NCCL_VERSION_CODE as a version: 22803 -> "2.28.3" (X*10000+Y*100+Z since 2.9)."""
    if not isinstance(code, int) or isinstance(code, bool) or code <= 0:
        return None
    if code >= 20900:
        return f"{code // 10000}.{code // 100 % 100}.{code % 100}"
    return f"{code // 1000}.{code // 100 % 10}.{code % 100}"


def _number_of(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _measured(side: object, which: str) -> tuple[float, float, float, float | None]:
    if not isinstance(side, dict):
        raise RcclOutputError(f"a result row has no {which} figures")
    time_us = _number_of(side.get("time", side.get("cpu_time")))
    algbw, busbw = _number_of(side.get("alg_bw")), _number_of(side.get("bus_bw"))
    if time_us is None or algbw is None or busbw is None:
        raise RcclOutputError(f"a result row's {which} figures are not numbers: {side}")
    wrong = side.get("nwrong")
    if wrong is not None and _number_of(wrong) is None:
        raise RcclOutputError(f"a result row's {which} #wrong is not a number: {wrong!r}")
    return time_us, algbw, busbw, _number_of(wrong)


def _json_row(entry: object) -> CollectiveRow:
    if not isinstance(entry, dict) or not isinstance(entry.get("size"), int):
        raise RcclOutputError(f"a result row without a size: {entry!r}")
    out = _measured(entry.get("out_of_place"), "out-of-place")
    inp = _measured(entry.get("in_place"), "in-place")
    root_text = str(entry.get("root", "")).strip()
    redop = entry.get("redop")
    return CollectiveRow(
        size_bytes=int(entry["size"]), count=int(entry.get("count") or 0), dtype=str(entry.get("type")),
        redop=None if redop is None else str(redop),
        root=int(root_text) if _is_int(root_text) else None,
        out_time_us=out[0], out_algbw_gbs=out[1], out_busbw_gbs=out[2], out_wrong=out[3],
        in_time_us=inp[0], in_algbw_gbs=inp[1], in_busbw_gbs=inp[2], in_wrong=inp[3])


def parse_collective_json(text: str) -> CollectiveTable:
    """The `-J` document as the table the text reader gives; RcclOutputError on anything else
    (a run cut short leaves the document unclosed: not JSON, refused, the text table stands)."""
    import json

    try:  # Infinity and NaN are taken here and judged (`CollectiveTable.non_finite`): an ERROR
        document = json.loads(text)
    except (ValueError, RecursionError) as error:  # RecursionError: nested thousands deep
        raise RcclOutputError(f"the -J report is not JSON: {error!s:.200}") from None
    results = document.get("results") if isinstance(document, dict) else None
    if not isinstance(results, list):
        raise RcclOutputError("the -J report has no `results` list")
    rows = tuple(_json_row(entry) for entry in results)
    average = document.get("average_bus_bandwidth")
    avg = _number_of(average.get("bandwidth")) if isinstance(average, dict) else None
    bounds_doc = document.get("out_of_bounds")
    okay = bounds_doc.get("okay") if isinstance(bounds_doc, dict) else None
    bounds = None if okay is None else str(okay).lower() == "true"
    config = document.get("config")
    devices = config.get("devices") if isinstance(config, dict) else None
    ranks = tuple(RankLine(int(d["rank"]), int(d.get("pid", 0)), str(d.get("hostname", "")))
                  for d in (devices if isinstance(devices, list) else [])
                  if isinstance(d, dict) and isinstance(d.get("rank"), int))
    errors = document.get("errors")
    said = tuple(str(e) for e in (errors if isinstance(errors, list) else []) if str(e).strip())
    version = _version_code(document.get("rccl_version", document.get("nccl_version")))
    return CollectiveTable("root/#wrong", rows, avg, bounds, version, said, _JSON_COLUMNS, 1, ranks,
                           (len(ranks),) if ranks else ())

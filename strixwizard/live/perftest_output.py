"""Parse perftest's result tables (`ib_write_lat`, `ib_send_lat`, `ib_write_bw`, `ib_send_bw`).

The table is read from its own header line, never from fixed positions:
columns are `#bytes`, `#iterations`, then `name[unit]` cells whose names may
contain spaces (`99% percentile[usec]`, `BW average[MiB/sec]`). Layouts seen:

- perftest ≥ 4.x latency: t_min, t_max, t_typical, t_avg, t_stdev, 99%, 99.9%;
- older latency: t_min, t_max, t_typical only;
- duration mode (`-D`) latency: t_avg and an unbracketed `tps average` only,
  so no median (the verdict then judges the average and says so);
- bandwidth: `BW peak[...]`, `BW average[...]`, `MsgRate[Mpps]`, the unit being
  `MiB/sec`, `MB/sec` (older releases: the same 2^20 bytes, mislabelled) or
  `Gb/sec` with `--report_gbits` (10^9 bits);
- `-a`: one row per message size;
- `-D` / `--run_infinitely` bandwidth: `BW peak` printed as 0.00 (not measured),
  and with `--run_infinitely` one row per period and no closing dashes.

Anything else (the parameter block, `Conflicting CPU frequency values
detected...`, `Warning:` lines) is skipped. A table whose closing dashes
never came, or a row with too few cells, means the output was cut short; a row
with more cells than its header has columns is refused (`refused_rows`), never read
shifted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from strixwizard.live.results import LatencyStats

_CELL = re.compile(r"#\w+|[^\s\[\]][^\[\]]*?\[[^\]]*\]")
_DASHES = re.compile(r"^\s*-{20,}\s*$")
_NUMBER = re.compile(r"^-?\d+(\.\d+)?(e[-+]?\d+)?$", re.IGNORECASE)

#: bytes-per-second factor of each bandwidth unit, then to Gb/s
_BW_UNITS = {"MiB/sec": 2**20 * 8 / 1e9, "MB/sec": 2**20 * 8 / 1e9, "Gb/sec": 1.0}


class PerftestParseError(ValueError):
    """The output holds no result table; the message says what was there instead."""


@dataclass(frozen=True)
class Column:
    name: str  # "t_avg", "BW average", "#bytes"
    unit: str | None  # "usec", "MiB/sec", None for #bytes/#iterations


@dataclass(frozen=True)
class PerftestTable:
    test: str | None  # "RDMA_Write Latency Test"
    columns: tuple[Column, ...]
    rows: tuple[dict[str, float], ...]  # column name -> value, in the header's units
    complete: bool  # the closing dashes came after the rows
    params: dict[str, str] = field(default_factory=dict)  # "Device" -> "rxe0", "GID index" -> "1"
    warnings: tuple[str, ...] = ()
    truncated_row: str | None = None
    #: rows with more cells than the header has columns: not read (a shifted reading would
    #: put each figure under the wrong name), and the table is not complete
    refused_rows: tuple[str, ...] = ()

    def unit(self, name: str) -> str | None:
        return next((c.unit for c in self.columns if c.name == name), None)

    @property
    def is_latency(self) -> bool:
        return any(c.name.startswith("t_") for c in self.columns)

    @property
    def is_bandwidth(self) -> bool:
        return any(c.name.startswith("BW ") for c in self.columns)


def parse_header(line: str) -> tuple[Column, ...] | None:
    stripped = line.strip()
    if not stripped.startswith("#bytes"):
        return None
    columns = []
    end = 0
    for match in _CELL.finditer(stripped):
        cell = match.group(0).strip()
        end = match.end()
        if "[" in cell:
            name, unit = cell[:-1].split("[", 1)
            columns.append(Column(name.strip(), unit.strip()))
        else:
            columns.append(Column(cell, None))
    rest = stripped[end:].strip()
    if rest:  # duration mode's unbracketed last column, `tps average`: one column, no unit
        columns.append(Column(rest, None))
    return tuple(columns)


def _params(line: str, params: dict[str, str]) -> None:
    """` Device         : rxe0    Transport type : IB` → two entries."""
    for match in re.finditer(r"([A-Za-z][A-Za-z0-9 .\-]*?)\s*:\s*(\S+)", line):
        key = match.group(1).strip()
        if key and key not in params:
            params[key] = match.group(2)


def parse_perftest(text: str) -> PerftestTable:
    columns: tuple[Column, ...] | None = None
    rows: list[dict[str, float]] = []
    complete = False
    params: dict[str, str] = {}
    warnings: list[str] = []
    test: str | None = None
    truncated: str | None = None
    refused: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        header = parse_header(line)
        if header is not None:
            columns, rows, complete, truncated, refused = header, [], False, None, []
            continue
        if _DASHES.match(line):
            if columns is not None and rows:
                complete = True
            continue
        if columns is None:
            if line.endswith("Test") and ":" not in line:
                test = line
            elif ":" in line and "address" not in line and not line.startswith("GID:"):
                _params(raw, params)
            continue
        cells = line.split()
        if cells and _NUMBER.match(cells[0]) and all(_NUMBER.match(c) for c in cells):
            if len(cells) < len(columns):
                truncated = line
                continue
            if len(cells) > len(columns):
                refused.append(line)
                continue
            rows.append({c.name: float(v) for c, v in zip(columns, cells, strict=False)})
            complete = False
        else:
            warnings.append(line)
    if columns is None:
        last = next((w for w in reversed(text.strip().splitlines()) if w.strip()), "")
        raise PerftestParseError(f"no result table in the output (last line: {last.strip()!r})"
                                 if last else "the output is empty")
    return PerftestTable(test, columns, tuple(rows),
                         complete and truncated is None and not refused, params,
                         tuple(warnings), truncated, tuple(refused))


def _usec(value: float | None, unit: str | None) -> float | None:
    if value is None:
        return None
    factor = {"usec": 1.0, "nsec": 1e-3, "msec": 1e3, "sec": 1e6}.get(unit or "usec")
    if factor is None:
        raise PerftestParseError(f"unknown latency unit [{unit}]")
    return value * factor


def latency_stats(table: PerftestTable, row: dict[str, float]) -> LatencyStats:
    """One row of a latency table as one-way statistics in µs (perftest reports one-way)."""

    def get(name: str) -> float | None:
        return _usec(row.get(name), table.unit(name))

    iterations = row.get("#iterations")
    return LatencyStats(
        min_us=get("t_min"), median_us=get("t_typical"), avg_us=get("t_avg"),
        p99_us=get("99% percentile"), p999_us=get("99.9% percentile"), max_us=get("t_max"),
        stdev_us=get("t_stdev"), samples=int(iterations) if iterations is not None else None,
    )


def bandwidth_gbps(table: PerftestTable, row: dict[str, float], which: str = "BW average") -> float:
    unit = table.unit(which)
    if unit not in _BW_UNITS:
        raise PerftestParseError(f"unknown bandwidth unit [{unit}] in column {which!r}")
    return row[which] * _BW_UNITS[unit]


# -- perftest --out_json ----------------------------------------------------------------

#: perftest ≥ 4.5-0.2 (linux-rdma/perftest commit 45e574b, 2021) writes its report as JSON with
#: `--out_json --out_json_file=FILE`: {"test_info": {...}, "results": {...}}, the results keys
#: those of REPORT_FMT_JSON / REPORT_FMT_LAT_JSON / REPORT_FMT_LAT_DUR_JSON in
#: src/perftest_parameters.h. No units are written: latency is in usec, bandwidth in Gb/s with
#: --report_gbits (which strixwizard always passes), MB/s (2^20 bytes) without.
JSON_OPTION = "--out_json"
_JSON_COLUMNS = {
    "MsgSize": Column("#bytes", None), "n_iterations": Column("#iterations", None),
    "t_min": Column("t_min", "usec"), "t_max": Column("t_max", "usec"),
    "t_typical": Column("t_typical", "usec"), "t_avg": Column("t_avg", "usec"),
    "t_stdev": Column("t_stdev", "usec"), "percentile_99": Column("99% percentile", "usec"),
    "percentile_99.9": Column("99.9% percentile", "usec"),
    "tps_average": Column("tps average", None), "MsgRate": Column("MsgRate", "Mpps"),
}


def supports_json(help_text: str) -> bool:
    """Whether a perftest tool's `--help` offers `--out_json` (older releases do not)."""
    return re.search(rf"(?m)^\s*{JSON_OPTION}\b", help_text) is not None


def parse_perftest_json(text: str, report_gbits: bool = True) -> PerftestTable:
    """A `--out_json` report as the table the text reader gives; PerftestParseError on
    anything else (perftest's raw-QoS layout writes `sl: N` unquoted: not JSON, refused)."""
    import json

    try:
        document = json.loads(text)
    except ValueError as error:
        raise PerftestParseError(f"the --out_json report is not JSON: {error}") from None
    results = document.get("results") if isinstance(document, dict) else None
    info = document.get("test_info", {}) if isinstance(document, dict) else {}
    if not isinstance(results, dict) or not isinstance(info, dict):
        raise PerftestParseError("the --out_json report has no `results` object")
    bw_unit = "Gb/sec" if report_gbits else "MB/sec"
    columns: list[Column] = []
    row: dict[str, float] = {}
    for key, value in results.items():
        column = (Column(key.replace("_", " ", 1), bw_unit) if key in ("BW_peak", "BW_average")
                  else _JSON_COLUMNS.get(key))
        if column is None or isinstance(value, bool) or not isinstance(value, int | float):
            continue  # avg_lat / bw_avg (the -o output modes), CPU_util: not table columns
        columns.append(column)
        row[column.name] = float(value)
    if "#bytes" not in row or not any(c.name.startswith(("t_", "BW ")) for c in columns):
        raise PerftestParseError(f"the --out_json report holds no result row: {sorted(results)}")
    test = info.get("test")
    params = {str(k).replace("_", " "): str(v) for k, v in info.items()
              if isinstance(v, str | int) and not isinstance(v, bool)}
    return PerftestTable(str(test).replace("_", " ") if test else None, tuple(columns), (row,),
                         True, params)

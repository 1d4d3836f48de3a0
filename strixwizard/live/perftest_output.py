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
never came (or came shorter than the dashes lines before the table: cut inside
the line), or a row with too few cells, means the output was cut short, and
`PerftestTable.cut` says so; the rows read are kept. A row
with more cells than its header has columns is refused (`refused_rows`), never read
shifted.
"""

from __future__ import annotations

import math
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
    #: the closing dashes line came shorter than the ones before the table (its length, theirs)
    short_rule: tuple[int, int] | None = None

    def unit(self, name: str) -> str | None:
        return next((c.unit for c in self.columns if c.name == name), None)

    @property
    def cut(self) -> str | None:
        """Why the table is not complete, in words (the output was cut), or None when it is."""
        if self.complete:
            return None
        if self.refused_rows:
            return f"a row with more cells than the header has columns: {self.refused_rows[0]!r}"
        if self.truncated_row is not None:
            return f"cut in the row {self.truncated_row!r}"
        if not self.rows:
            return "cut before the first row of the table"
        if self.short_rule is not None:
            got, full = self.short_rule
            return (f"cut after {len(self.rows)} row(s), inside the closing dashes line ({got} "
                    f"dashes, where perftest prints {full}); the rows read are kept, but "
                    "no figure of an unfinished table is final")
        return (f"cut after {len(self.rows)} row(s): the table's closing dashes line never came "
                "(the rows read are kept, but no figure of an unfinished table is final)")

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
    rule = 0  # the length of the dashes lines before the table: the closing one is as long
    short_rule: int | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        header = parse_header(line)
        if header is not None:
            columns, rows, complete, truncated, refused = header, [], False, None, []
            short_rule = None
            continue
        if _DASHES.match(line):
            if columns is None:
                rule = max(rule, len(line))
            elif rows and len(line) >= rule:
                complete = True
            elif rows:  # shorter than perftest's own rule before the table: cut inside the line
                short_rule = len(line)
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
                         tuple(warnings), truncated, tuple(refused),
                         (short_rule, rule) if short_rule is not None and not complete else None)


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
#: --report_gbits (which strixwizard always passes), MB/s (2^20 bytes) without; the unit is
#: told from MsgRate x MsgSize in the same report (a published report without --report_gbits,
#: tests/data/real/perftest_ib_write_bw_out_json_mb_doca_platform.txt: BW_average 2229.27 is
#: MB/sec, 18.70 Gb/s, not 2229 Gb/s).
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


#: How far BW_average may stray from MsgRate x MsgSize in the unit it is read in: perftest
#: computes both from the same iterations and prints each rounded (2 and 6 decimals).
_UNIT_TOLERANCE = 0.05


def json_bandwidth_unit(results: dict[str, object], report_gbits: bool | None) -> str:
    """The unit of a `--out_json` report's BW figures, which the document does not name:
    derived from its own MsgRate [Mpps] x MsgSize [B], which gives the bytes per second that
    BW_average must equal in Gb/sec (`--report_gbits`, 10^9 bits) or MB/sec (2^20 bytes).
    `report_gbits`, when known (the run that asked for the report), must agree with it.
    PerftestParseError when neither unit fits, or when the figures cannot tell."""
    given = [results.get(k) for k in ("BW_average", "MsgRate", "MsgSize")]
    numbers = [float(v) for v in given if isinstance(v, int | float) and not isinstance(v, bool)
               and math.isfinite(v) and v > 0]
    if len(numbers) < 3:
        if report_gbits is None:
            raise PerftestParseError(
                "the --out_json report names no unit, and its MsgRate and MsgSize cannot tell it "
                f"(BW_average, MsgRate, MsgSize: {given!r:.80}): Gb/sec or MB/sec?")
        return "Gb/sec" if report_gbits else "MB/sec"
    average, rate, size = numbers
    bytes_per_s = rate * 1e6 * size
    fits = {unit: abs(average * factor * 1e9 / 8 / bytes_per_s - 1) <= _UNIT_TOLERANCE
            for unit, factor in (("Gb/sec", _BW_UNITS["Gb/sec"]), ("MB/sec", _BW_UNITS["MB/sec"]))}
    found = [unit for unit, fit in fits.items() if fit]
    if len(found) != 1:
        raise PerftestParseError(
            f"the --out_json report's BW_average {average:g} fits neither Gb/sec nor MB/sec as "
            f"MsgRate {rate:g} Mpps x MsgSize {size:g} B gives ({bytes_per_s * 8 / 1e9:.2f} Gb/s): "
            "which unit it is in cannot be told")
    unit = found[0]
    if report_gbits is not None and (unit == "Gb/sec") != report_gbits:
        raise PerftestParseError(
            f"the --out_json report is in {unit} by its MsgRate x MsgSize, but the run "
            f"{'asked' if report_gbits else 'did not ask'} for --report_gbits")
    return unit


def parse_perftest_json(text: str, report_gbits: bool | None = None) -> PerftestTable:
    """A `--out_json` report as the table the text reader gives; PerftestParseError on
    anything else (perftest's raw-QoS layout writes `sl: N` unquoted: not JSON, refused).
    The bandwidth unit is derived from the report's own figures (`json_bandwidth_unit`);
    `report_gbits` is what the run asked for, when it is known."""
    from strixwizard.readback import ReadBackError, loads

    try:
        document = loads(text, "the --out_json report", max_bytes=1 << 20)
    except ReadBackError as error:
        raise PerftestParseError(str(error)) from None
    results = document.get("results") if isinstance(document, dict) else None
    info = document.get("test_info", {}) if isinstance(document, dict) else {}
    if not isinstance(results, dict) or not isinstance(info, dict):
        raise PerftestParseError("the --out_json report has no `results` object")
    bw_unit = json_bandwidth_unit(results, report_gbits) if "BW_average" in results else None
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

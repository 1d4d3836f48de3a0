"""`advise --llama-bench FILE`: a llama-bench run as the measured compute term. Pure.

Reads the three layouts llama-bench prints: the markdown table (`-o md`, the default; any
set of columns, `tg128` or the older `tg 128`, depth tests `tg32 @ d32768`), `-o json` (an
array of objects) and `-o jsonl` (one object per line). The decode speed is the short-context
text-generation row (`tg`, depth 0) of the one model in the file; a row printed twice counts
once. A run that produced no such row is refused with its cause (the error line of the log:
an RPC server that crashed, a lost device, a model that failed to load), and so is a run over
RPC (backend `...,RPC`: several nodes, not one node's compute).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from strixwizard.errors import UsageError
from strixwizard.readback import MAX_DEPTH, ReadBackError, loads, nesting_depth

MAX_BYTES = 16 * 2**20
_TEST = re.compile(r"^(pp|tg)\s*(\d+)(?:\s*@\s*d(\d+))?$")
_SPEED = re.compile(r"^([0-9.]+)(?:\s*±\s*([0-9.]+))?$")
#: Lines that say why a run produced no row, as llama.cpp and the ggml backends print them.
CAUSE_PATTERNS = tuple(re.compile(p, re.IGNORECASE) for p in (
    r"RPC server crashed", r"failed to connect", r"failed to load model", r"HSA_STATUS_ERROR",
    r"ErrorDeviceLost", r"vk::\w*Error", r"out of memory", r"error:", r"GGML_ASSERT",
    r"Segmentation fault", r"terminate called",
))
_LOCATION = re.compile(r"^\S+:\d+: ")


@dataclass(frozen=True)
class BenchRow:
    model: str
    backend: str
    test: str  # "tg128", "pp512", "tg32 @ d32768"
    kind: str  # pp | tg
    tokens: int
    depth: int
    tok_s: float
    stddev: float | None
    size_gib: float | None


@dataclass(frozen=True)
class BenchRun:
    rows: tuple[BenchRow, ...]
    build: str | None
    layout: str  # markdown | json | jsonl

    def decode(self, path: Path) -> BenchRow:
        """The one short-context decode row (UsageError with the cause otherwise)."""
        decode = [r for r in self.rows if r.kind == "tg" and r.depth == 0]
        if not decode:
            depths = sorted({r.test for r in self.rows if r.kind == "tg"})
            what = (f"only depth tests ({', '.join(depths)})" if depths else
                    f"no text-generation test ({', '.join(sorted({r.test for r in self.rows}))})")
            raise UsageError(f"--llama-bench {path}: {what}; run llama-bench with -n 128 (depth 0)")
        models = sorted({r.model for r in decode})
        if len(models) > 1:
            raise UsageError(f"--llama-bench {path}: {len(models)} models in one run ({'; '.join(models)}); "
                             "give a run of the one model advised")
        rpc = [r for r in decode if "RPC" in r.backend.split(",")]
        if rpc:
            raise UsageError(f"--llama-bench {path}: the run went over RPC (backend {rpc[0].backend}): "
                             "several nodes, not one node's compute; give a one-node run")
        return min(decode, key=lambda r: (r.tokens != 128, r.tokens))


def _cause(text: str) -> str:
    """The log's first line that says why (its source location and `what():` cut), printable."""
    lines = text.splitlines()
    for pattern in CAUSE_PATTERNS:
        for line in lines:
            if pattern.search(line):
                cause = _LOCATION.sub("", line.strip()).removeprefix("what():").strip()
                return "".join(c if c.isprintable() else "?" for c in cause)[:300]
    return "no row and no error line"


def _markdown(text: str) -> list[BenchRow]:
    rows: list[BenchRow] = []
    header: list[str] | None = None
    for line in text.splitlines():
        if not line.startswith("|"):
            header = None if header is not None and rows else header
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if "model" in cells and "t/s" in cells and "test" in cells:
            header = cells
            continue
        if header is None or set("".join(cells)) <= set("-: ") or len(cells) != len(header):
            continue
        row = dict(zip(header, cells, strict=True))
        test, speed = _TEST.match(row["test"]), _SPEED.match(row["t/s"])
        if test is None or speed is None:
            continue
        size = re.match(r"^([0-9.]+) (GiB|MiB)$", row.get("size", ""))
        gib = float(size.group(1)) / (1024 if size.group(2) == "MiB" else 1) if size else None
        rows.append(BenchRow(row["model"], row.get("backend", ""), row["test"], test.group(1),
                             int(test.group(2)), int(test.group(3) or 0), float(speed.group(1)),
                             float(speed.group(2)) if speed.group(2) else None, gib))
    return rows


def _from_object(item: Any) -> BenchRow | None:
    if not isinstance(item, dict):
        return None
    try:
        n_prompt, n_gen = int(item.get("n_prompt", 0)), int(item.get("n_gen", 0))
        depth, speed = int(item.get("n_depth", 0)), float(item["avg_ts"])
    except (KeyError, TypeError, ValueError):
        return None
    if not math.isfinite(speed) or speed <= 0:  # "nan", "inf" or a negative speed: no result
        return None
    kind, tokens = ("tg", n_gen) if n_gen and not n_prompt else ("pp", n_prompt)
    size = item.get("model_size")
    return BenchRow(str(item.get("model_type", "")), str(item.get("backends", "")),
                    f"{kind}{tokens}" + (f" @ d{depth}" if depth else ""), kind, tokens, depth, speed,
                    float(item["stddev_ts"]) if isinstance(item.get("stddev_ts"), (int, float)) else None,
                    float(size) / 2**30 if isinstance(size, (int, float)) else None)


def parse(text: str, what: str = "llama-bench output") -> BenchRun:
    """Rows of a run. JSON is read by the read-back rule: nested deeper than any llama-bench
    output raises ReadBackError (never a RecursionError); a document that is not JSON, or holds
    NaN or a number beyond a float, is read as text, where it has no rows."""
    stripped = text.lstrip()
    layout, objects = "markdown", None
    if stripped.startswith(("[", "{")) and (depth := nesting_depth(stripped)) > MAX_DEPTH:
        raise ReadBackError(f"{what}: nested {depth} levels deep, more than {MAX_DEPTH}")
    if stripped.startswith("["):
        try:
            objects, layout = loads(stripped, what), "json"
        except ReadBackError:
            objects = None
    elif stripped.startswith("{"):
        try:
            objects, layout = [loads(line, what) for line in stripped.splitlines() if line.strip()], "jsonl"
        except ReadBackError:
            objects = None
    if isinstance(objects, list):
        rows = [row for row in map(_from_object, objects) if row is not None]
        first = objects[0] if objects and isinstance(objects[0], dict) else {}
        build = f"{first.get('build_commit')} ({first.get('build_number')})" if first else None
    else:
        rows = _markdown(text)
        found = re.search(r"^build: (\S+ \(\d+\))", text, re.MULTILINE)
        build = found.group(1) if found else None
    unique = tuple(dict.fromkeys(rows))  # a row printed twice (two logs pasted together) is one
    return BenchRun(unique, build, layout)


def read(path: Path) -> tuple[BenchRun, BenchRow]:
    """The run in `path` and its decode row (UsageError: unreadable, failed, or not one node)."""
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_BYTES + 1)
    except OSError as error:
        raise UsageError(f"--llama-bench {path}: cannot read it ({error.strerror})") from error
    if len(raw) > MAX_BYTES:
        raise UsageError(f"--llama-bench {path}: larger than {MAX_BYTES // 2**20} MiB: not a llama-bench log")
    text = raw.decode("utf-8", errors="replace")
    run = parse(text, f"--llama-bench {path}")
    if not run.rows:
        raise UsageError(f"--llama-bench {path}: the run produced no result: {_cause(text)}")
    return run, run.decode(path)

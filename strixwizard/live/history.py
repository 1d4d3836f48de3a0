"""A local SQLite history of test runs, and "compare with the last good run".

One row per measurement that counts (verdicts and references), keyed by site,
kind, transport, tool and the pair (unordered). The default file is
`~/.local/state/strixwizard/history.sqlite` (XDG_STATE_HOME is honoured);
`--history FILE` overrides it. Replayed recordings (demo) are never stored.
"""

from __future__ import annotations

import math
import os
import sqlite3
import stat
from dataclasses import dataclass
from pathlib import Path

from strixwizard.files import state_dir
from strixwizard.live.results import FIGURE, MEASURED, Measurement
from strixwizard.model import Status
from strixwizard.readback import ReadBackError, dumps, loads, number

#: A stored measurement's document is a few kB (an RCCL run's rows and log lines the most).
MAX_DOCUMENT = 1 << 20

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    started_at TEXT NOT NULL,
    site TEXT NOT NULL,
    command TEXT NOT NULL,
    status TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS results (
    run_id INTEGER NOT NULL REFERENCES runs(id),
    pair_key TEXT NOT NULL,
    kind TEXT NOT NULL,
    transport TEXT NOT NULL,
    tool TEXT NOT NULL,
    status TEXT,
    figure REAL,
    unit TEXT NOT NULL,
    document TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS results_key ON results(pair_key, kind, transport, tool);
"""


def default_history_path() -> Path:
    return state_dir() / "history.sqlite"


def demo_history_path() -> Path:
    """The demo's runs, beside the real history and never in it: a demo's TCP is this machine's
    loopback, no site's link."""
    return default_history_path().with_name("demo-history.sqlite")


def pair_key(pair: tuple[str, str]) -> str:
    return "|".join(sorted(pair))


@dataclass(frozen=True)
class Comparison:
    """A figure beside the same measurement's figure in the last run where it passed."""

    measurement: Measurement
    last_good_figure: float | None
    last_good_at: str | None
    change: float | None  # new / old - 1, e.g. +0.25 = 25% higher

    @property
    def compared(self) -> bool:
        return (self.last_good_figure is not None and self.measurement.figure is not None
                and self.change is not None)

    @property
    def worse(self) -> bool:
        """At least 10% worse than the last good run (latency up, bandwidth down)."""
        if not self.compared or self.change is None:
            return False
        up_is_worse = self.measurement.kind == "latency"
        return abs(self.change) >= 0.1 and ((self.change > 0) == up_is_worse)

    @property
    def summary(self) -> str:
        m = self.measurement
        if not self.compared or self.change is None:
            return f"{m.pair_label} {m.transport} {m.kind} ({m.tool}): no earlier good run to compare with"
        word = "worse" if self.worse else "about the same" if abs(self.change) < 0.1 else "better"
        return (f"{m.pair_label} {m.transport} {m.kind} ({m.tool}): {m.figure:.2f} {m.unit} now, "
                f"{self.last_good_figure:.2f} {m.unit} on {self.last_good_at} ({self.change:+.0%}, {word})")

    def to_json(self) -> dict[str, object]:
        m = self.measurement
        return {"pair": list(m.pair), "kind": m.kind, "transport": m.transport, "tool": m.tool,
                "figure": m.figure, "unit": m.unit, "last_good_figure": self.last_good_figure,
                "last_good_at": self.last_good_at, "change": self.change, "summary": self.summary}


@dataclass(frozen=True)
class StoredResult:
    """One stored measurement with the run it belongs to."""

    run_id: int
    started_at: str
    site: str
    run_status: str
    pair_key: str
    kind: str
    transport: str
    tool: str
    status: str | None
    figure: float | None
    unit: str
    document: str

    @property
    def series_key(self) -> tuple[str, str, str, str, str]:
        return (self.site, self.pair_key, self.kind, self.transport, self.tool)

    @property
    def where(self) -> str:
        return f"run #{self.run_id} ({self.started_at:.40}) {self.pair_key:.80} {self.kind:.20}"

    @property
    def measurement(self) -> Measurement:
        """The stored document, held to the read-back rule (ReadBackError otherwise)."""
        if self.figure is not None:
            number(self.figure, "stored figure", FIGURE)
        return Measurement.from_json(loads(self.document, "stored document", max_bytes=MAX_DOCUMENT))


@dataclass(frozen=True)
class ReadBack:
    """What the history holds that can be read: each stored row beside its measurement, and
    a note for each one skipped because it breaks the read-back rule (a disk or a hand
    that changed the file: one bad row never hides the others, nor stops the command)."""

    rows: list[tuple[StoredResult, Measurement]]
    skipped: list[str]


def read_back(rows: list[StoredResult]) -> ReadBack:
    good: list[tuple[StoredResult, Measurement]] = []
    skipped: list[str] = []
    for row in rows:
        try:
            good.append((row, row.measurement))
        except ReadBackError as error:
            skipped.append(f"skipped a stored measurement of {row.where}: {error}")
    return ReadBack(good, skipped)


def _column_figure(value: object) -> float | None:
    """The figure column as stored; SQLite keeps whatever was put in, and text there is
    NaN here, which the read-back rule then refuses (`StoredResult.measurement`)."""
    if value is None:
        return None
    return float(value) if isinstance(value, int | float) else math.nan


def refuse_unless_regular(path: Path) -> None:
    """ValueError unless `path` is missing or a regular file (not a link, device, FIFO or
    folder): a history handed `/dev/null` or a pipe must not chmod it or block on it."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISREG(mode):
        kind = ("a symbolic link" if stat.S_ISLNK(mode) else "a folder" if stat.S_ISDIR(mode)
                else "a FIFO" if stat.S_ISFIFO(mode) else "a device" if stat.S_ISCHR(mode)
                or stat.S_ISBLK(mode) else "not a regular file")
        raise ValueError(f"{path} is {kind}; a test history is a regular file (nothing was changed)")


class History:
    def __init__(self, path: Path, read_only: bool = False) -> None:
        """`read_only`: open an existing file and never create or change it (sqlite3.Error
        when it is missing or not a history)."""
        self.path = path
        if read_only:
            self._db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
            self._db.execute("SELECT run_id, pair_key, kind, transport, tool, status, figure, unit, "
                             "document FROM results LIMIT 0")
            self._db.execute("SELECT id, started_at, site, command, status FROM runs LIMIT 0")
            return
        refuse_unless_regular(path)  # before anything is made or changed
        missing = [folder for folder in (path.parent, *path.parent.parents) if not folder.exists()]
        for folder in reversed(missing):  # each made 0700: `mkdir(parents=True)` would not
            folder.mkdir(mode=0o700, exist_ok=True)
            os.chmod(folder, 0o700)
        # private: it names the site's hosts; SQLite gives its journal files the same mode. The
        # mode is set through the descriptor, of what was opened (no link followed, no FIFO
        # waited on), and only once that is known to be a regular file.
        fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_NOFOLLOW | os.O_NONBLOCK, 0o600)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):  # it changed since the check above
                raise ValueError(f"{path} is not a regular file; a test history is a regular file "
                                 "(nothing was changed)")
            if os.fstat(fd).st_mode & 0o077:
                os.fchmod(fd, 0o600)
        finally:
            os.close(fd)
        self._db = sqlite3.connect(str(path))
        self._db.executescript(SCHEMA)

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> History:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def last_good(self, site: str, m: Measurement, before_run: int | None = None) -> tuple[float, str] | None:
        """The figure and time of the latest run where `m`'s measurement passed (before run
        `before_run` when given)."""
        row = self._db.execute(
            "SELECT r.figure, runs.started_at FROM results r JOIN runs ON runs.id = r.run_id "
            "WHERE runs.site = ? AND r.pair_key = ? AND r.kind = ? AND r.transport = ? AND r.tool = ? "
            "AND r.figure BETWEEN 0 AND 1e15 "  # as read back: finite, not negative
            "AND (r.status = 'pass' OR (r.status IS NULL AND runs.status = 'pass')) "
            "AND (? IS NULL OR r.run_id < ?) ORDER BY r.run_id DESC LIMIT 1",
            (site, pair_key(m.pair), m.kind, m.transport, m.tool, before_run, before_run),
        ).fetchone()
        return (float(row[0]), str(row[1])) if row else None

    def compare_one(self, site: str, m: Measurement, before_run: int | None = None) -> Comparison:
        """`m` beside the last good run of the same measurement (before run `before_run`)."""
        found = self.last_good(site, m, before_run)
        if found is None or m.figure is None:
            return Comparison(m, None, None, None)
        old, when = found
        return Comparison(m, old, when, (m.figure / old - 1) if old else None)

    def compare(self, site: str, results: list[Measurement]) -> list[Comparison]:
        """Each figure of `results` beside the last good one (before this run is recorded)."""
        return [self.compare_one(site, m) for m in results if m.figure is not None and m.source == MEASURED]

    def stored(self, site: str | None = None) -> list[StoredResult]:
        """Every stored measurement (of one site), oldest run first."""
        query = ("SELECT r.run_id, runs.started_at, runs.site, runs.status, r.pair_key, r.kind, "
                 "r.transport, r.tool, r.status, r.figure, r.unit, r.document "
                 "FROM results r JOIN runs ON runs.id = r.run_id")
        args: tuple[str, ...] = ()
        if site is not None:
            query += " WHERE runs.site = ?"
            args = (site,)
        rows = self._db.execute(query + " ORDER BY r.run_id, r.rowid", args)
        return [StoredResult(int(row[0]), str(row[1]), str(row[2]), str(row[3]), str(row[4]), str(row[5]),
                             str(row[6]), str(row[7]), None if row[8] is None else str(row[8]),
                             _column_figure(row[9]), str(row[10]), str(row[11]))
                for row in rows]

    def record(self, site: str, command: str, started_at: str, status: Status,
               results: list[Measurement]) -> int | None:
        """Store the run's measured results. Nothing that breaks the read-back rule is ever
        stored: a non-finite or negative figure, or anything `stored` would skip, is a
        ValueError or ReadBackError, and the run is not written."""
        stored = [m for m in results if m.source == MEASURED]
        if not stored:
            return None
        documents = [dumps(m.to_json()) for m in stored]  # ValueError on NaN or infinity
        for m, document in zip(stored, documents, strict=True):  # only what reads back
            if m.figure is not None:
                number(m.figure, f"{m.pair_label} {m.kind} figure", FIGURE)
            Measurement.from_json(loads(document, "measurement to store", max_bytes=MAX_DOCUMENT))
        with self._db:
            cursor = self._db.execute(
                "INSERT INTO runs (started_at, site, command, status) VALUES (?, ?, ?, ?)",
                (started_at, site, command, status.value))
            run_id = cursor.lastrowid
            self._db.executemany(
                "INSERT INTO results (run_id, pair_key, kind, transport, tool, status, figure, unit, "
                "document) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(run_id, pair_key(m.pair), m.kind, m.transport, m.tool,
                  m.status.value if m.status else None, m.figure, m.unit, document)
                 for m, document in zip(stored, documents, strict=True)])
        return run_id

    def runs(self, site: str | None = None) -> list[tuple[int, str, str, str, str]]:
        query = "SELECT id, started_at, site, command, status FROM runs"
        args: tuple[str, ...] = ()
        if site is not None:
            query += " WHERE site = ?"
            args = (site,)
        return [tuple(row) for row in self._db.execute(query + " ORDER BY id", args)]


@dataclass(frozen=True)
class Recorded:
    """What writing a run to the history gave: where, its id, and the comparisons made."""

    path: Path
    run_id: int | None  # None: nothing measured to store (replayed recordings are not stored)
    comparisons: list[Comparison]

    def to_json(self) -> dict[str, object]:
        return {"path": str(self.path), "run_id": self.run_id,
                "compared": [c.to_json() for c in self.comparisons]}


def record_run(site: str, command: str, started_at: str, results: list[Measurement],
               path: Path | None = None) -> Recorded:
    """Compare a finished run with the last good one, then store it. Raises HistoryError."""
    from strixwizard.live.results import overall_status

    where = path or default_history_path()
    try:
        with History(where) as history:
            comparisons = history.compare(site, results)
            run_id = history.record(site, command, started_at, overall_status(results), results)
    except (OSError, ValueError, ReadBackError, sqlite3.Error) as error:
        raise HistoryError(f"history not written to {where} ({error})") from None
    return Recorded(where, run_id, comparisons)


class HistoryError(Exception):
    """The history file could not be read or written; the run itself is unaffected."""

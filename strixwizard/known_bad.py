"""The table of software versions known to break RDMA inference on these nodes.

The data is `strixwizard/data/known_bad.json`, shipped in the package: each entry names
a component (`rdma-core`, `linux-firmware`, `kernel`, `nic-firmware`), what it applies to,
which versions it matches, the status it gives (`fail`: known to break; `warn`: older
than what is known to work), and its public source (a URL and what it says there). The
checks in `checks/versions.py` evaluate it; this module only reads and matches.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from strixwizard.files import package_text

FORMAT = "strixwizard-known-bad/1"
COMPONENTS = ("rdma-core", "linux-firmware", "kernel", "nic-firmware")
_NUMBERS = re.compile(r"\d+(?:\.\d+)*")


def version_tuple(text: str | None) -> tuple[int, ...] | None:
    """The leading dotted number of a version: "50.0-2build2" -> (50, 0), "6.18.5-200.fc43"
    -> (6, 18, 5), "4.91 0x800214b5 1.3909.0" -> (4, 91), "20251125-1.fc43" -> (20251125,)."""
    match = _NUMBERS.match((text or "").strip())
    return tuple(int(part) for part in match.group(0).split(".")) if match else None


@dataclass(frozen=True)
class Source:
    """A public source of an entry: where, and what it says there."""

    url: str
    says: str


@dataclass(frozen=True)
class Entry:
    """One entry of the known-bad table."""

    id: str
    component: str
    applies_to: dict[str, Any]
    match: dict[str, Any]
    status: str  # "fail" or "warn"
    what: str
    advice: str
    source: Source

    def matches(self, version: tuple[int, ...]) -> bool:
        if "major" in self.match:
            return version[:1] == (int(self.match["major"]),)
        if "release" in self.match:
            return version[:1] == (int(self.match["release"]),)
        below = version_tuple(str(self.match["below"]))
        assert below is not None
        width = max(len(version), len(below))
        return version + (0,) * (width - len(version)) < below + (0,) * (width - len(below))

    @property
    def threshold(self) -> str:
        """The matched versions in words: "50.x", "20251125", "older than 62"."""
        if "major" in self.match:
            return f"{self.match['major']}.x"
        if "release" in self.match:
            return str(self.match["release"])
        return f"older than {self.match['below']}"


def _entry(data: dict[str, Any]) -> Entry:
    component = data["component"]
    if component not in COMPONENTS:
        raise ValueError(f"known-bad entry {data.get('id')!r}: unknown component {component!r}")
    if data["status"] not in ("fail", "warn"):
        raise ValueError(f"known-bad entry {data['id']!r}: status must be fail or warn")
    match = data["match"]
    if len(match) != 1 or next(iter(match)) not in ("major", "release", "below"):
        raise ValueError(f"known-bad entry {data['id']!r}: match is one of major, release, below")
    source = data["source"]
    if not str(source.get("url", "")).startswith("https://"):
        raise ValueError(f"known-bad entry {data['id']!r}: a source URL is required")
    return Entry(data["id"], component, dict(data.get("applies_to", {})), dict(match),
                 data["status"], data["what"], data["advice"],
                 Source(source["url"], source["says"]))


def parse_table(text: str) -> tuple[Entry, ...]:
    data = json.loads(text)
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"not a strixwizard known-bad table ({FORMAT})")
    entries = tuple(_entry(e) for e in data["entries"])
    ids = [e.id for e in entries]
    if len(set(ids)) != len(ids):
        raise ValueError("known-bad entry ids repeat")
    return entries


@cache
def table() -> tuple[Entry, ...]:
    """The shipped table (read once)."""
    text = package_text("strixwizard", "data/known_bad.json")
    return parse_table(text)


def entries_for(component: str) -> tuple[Entry, ...]:
    return tuple(e for e in table() if e.component == component)


def first_match(component: str, version: tuple[int, ...],
                applies: dict[str, Any] | None = None) -> Entry | None:
    """The first entry of `component` that applies (every `applies_to` key equals the value
    in `applies`) and matches `version`."""
    for entry in entries_for(component):
        if applies is not None and any(applies.get(k) != v for k, v in entry.applies_to.items()):
            continue
        if entry.matches(version):
            return entry
    return None

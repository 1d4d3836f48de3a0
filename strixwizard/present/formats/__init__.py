"""The output formats of `doctor`, one module each, declared once and found by name.

A format (`base.Format`) is a name, a media type, a file extension and the function that
writes a run; `doctor --format NAME` offers every one listed in `ALL`, and the wizard's
Report step writes its files with the same ones, so a report reads the same from either
front door. A new format is a module here and a line in `ALL` (docs/extending/format.md).
Each module imports its renderer only when it writes, so `doctor` loads what it prints.
"""

from __future__ import annotations

from strixwizard.present.formats import html_page, json_document, markdown, prom, text
from strixwizard.present.formats.base import DoctorRun, Format

__all__ = ["ALL", "JSON", "DoctorRun", "Format", "by_name", "names"]

#: Every format, in the order `doctor --help` lists them; the first is the default.
ALL: tuple[Format, ...] = (
    text.FORMAT,
    json_document.FORMAT,
    markdown.FORMAT,
    html_page.FORMAT,
    prom.FORMAT,
)

#: The format `--json` stands for (and that makes a failed run's error a JSON document too).
JSON = json_document.FORMAT.name


def _registered() -> tuple[Format, ...]:
    # read at call time, so a format added to ALL (or patched in by a test) is seen everywhere
    import strixwizard.present.formats as registry

    return registry.ALL


def names() -> tuple[str, ...]:
    return tuple(f.name for f in _registered())


def by_name(name: str) -> Format:
    """The format called `name`; KeyError naming the known ones for any other."""
    for candidate in _registered():
        if candidate.name == name:
            return candidate
    raise KeyError(f"no output format {name!r} (known: {', '.join(names())})")

"""What an output format of `doctor` is: a name, a media type and file extension, and how it
writes one run. A format is given the run as plain data (`DoctorRun`): the check engine's
`Report`, which lies below this layer, and the JSON documents the wizard adds (live tests,
soak, deploy) as dicts, so no type of the services or deploy layers above is needed."""

from __future__ import annotations

import io
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from strixwizard.checking.engine import Report


@dataclass(frozen=True)
class DoctorRun:
    """One doctor run as every format is given it."""

    report: Report
    exit_code: int
    strict: bool = False
    verbose: bool = False
    #: the options that chose the site, for the next command the text suggests (None: none)
    site_options: Sequence[str] | None = None
    verbose_again: str | None = None  # the command run again with -v, for the text's hint
    notes: tuple[str, ...] = ()  # lines the text shows before the report (a level's left-out checks)
    extra: Mapping[str, str] = field(default_factory=dict)  # header lines of a report (its source)
    #: the wizard's optional top-level documents (`live_tests`, `soak`, `deploy`), none None
    sections: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Format:
    """One output format. `terminal`: written for a person at a terminal (colour, wrapping,
    the verdict's last line); the others are documents, whose no-verdict reason the command
    line says on stderr."""

    name: str
    media_type: str
    extension: str
    summary: str  # in `doctor --help`
    write: Callable[[DoctorRun, TextIO], None]
    terminal: bool = False

    def text(self, run: DoctorRun) -> str:
        """The whole output as one string (what a file of this format holds)."""
        out = io.StringIO()
        self.write(run, out)
        return out.getvalue()

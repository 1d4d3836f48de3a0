"""The report in Markdown (`present/report.py`), as the wizard's Report step saves it."""

from __future__ import annotations

from typing import TextIO

from strixwizard.present.formats.base import DoctorRun, Format


def _write(run: DoctorRun, out: TextIO) -> None:
    from strixwizard.present.report import to_markdown

    out.write(to_markdown(run.report, dict(run.extra), dict(run.sections)))


FORMAT = Format("md", "text/markdown", "md", "the report in Markdown", _write)

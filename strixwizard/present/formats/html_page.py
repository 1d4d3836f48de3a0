"""The report as one HTML page with its charts (`present/report.py`), as the wizard's Report
step saves it."""

from __future__ import annotations

from typing import TextIO

from strixwizard.present.formats.base import DoctorRun, Format


def _write(run: DoctorRun, out: TextIO) -> None:
    from strixwizard.present.report import to_html

    out.write(to_html(run.report, dict(run.extra), dict(run.sections)))


FORMAT = Format("html", "text/html", "html", "the report as an HTML page", _write)

"""`doctor`'s default: the report for a terminal (`present/doctor_text.py`)."""

from __future__ import annotations

from typing import TextIO

from strixwizard.present.formats.base import DoctorRun, Format


def _write(run: DoctorRun, out: TextIO) -> None:
    from strixwizard.present.doctor_text import render

    out.writelines(f"{note}\n" for note in run.notes)
    render(run.report, out, verbose=run.verbose, strict=run.strict, site_options=run.site_options,
           verbose_again=run.verbose_again)


FORMAT = Format("text", "text/plain", "txt", "for a terminal", _write, terminal=True)

"""The `doctor --json` document (schema/doctor.schema.json), the wizard's sections added as
optional top-level fields."""

from __future__ import annotations

import json
from typing import TextIO

from strixwizard.present.formats.base import DoctorRun, Format


def _write(run: DoctorRun, out: TextIO) -> None:
    out.write(json.dumps({**run.report.to_json(), **run.sections}, indent=2, allow_nan=False) + "\n")


FORMAT = Format("json", "application/json", "json", "the JSON document (as --json)", _write)

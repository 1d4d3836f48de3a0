"""The one JSON envelope and the one exit-code rule of every command.

Every `--json` document starts with the same header (schema version, tool, time,
site); every command exits 0 (done, no failure), 1 (a failure) or 2 (no verdict). The rule
and the version are defined once in `strixwizard/model.py`, where the engines' own
documents (doctor's report, the test report) take them too; front ends take them here.
"""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO

from strixwizard.model import (
    EXIT_FAIL,
    EXIT_NO_VERDICT,
    EXIT_OK,
    SCHEMA_VERSION,
    ExitCode,
    document_header,
    exit_code,
)

__all__ = ["EXIT_FAIL", "EXIT_NO_VERDICT", "EXIT_OK", "SCHEMA_VERSION", "ExitCode", "emit", "envelope",
           "exit_code"]


def envelope(site: str | None, **fields: Any) -> dict[str, Any]:
    """The header every JSON document shares (`model.document_header`: the schema version, the
    tool, the time, the site), then the command's own fields."""
    return {**document_header(site), **fields}


def emit(document: dict[str, Any], stream: TextIO | None = None) -> None:
    """Write one JSON document (and a newline) to stdout."""
    out = stream or sys.stdout
    out.write(json.dumps(document, indent=2, allow_nan=False) + "\n")  # one write, not one per JSON token

"""The one JSON envelope and the one exit-code rule of every command.

Every `--json` document starts with the same header (schema version, tool, time,
site); every command exits 0 (done, no failure), 1 (a failure) or 2 (no verdict).
"""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO

from strixwizard.model import document_header

EXIT_OK, EXIT_FAIL, EXIT_NO_VERDICT = 0, 1, 2
SCHEMA_VERSION = 1


def exit_code(ok: bool | None) -> int:
    """0 done without a failure, 1 a failure, 2 no verdict (None)."""
    if ok is None:
        return EXIT_NO_VERDICT
    return EXIT_OK if ok else EXIT_FAIL


def envelope(site: str | None, schema_version: int = SCHEMA_VERSION, **fields: Any) -> dict[str, Any]:
    """The header every JSON document shares (`model.document_header`), then the command's
    own fields."""
    return {**document_header(site, schema_version), **fields}


def emit(document: dict[str, Any], stream: TextIO | None = None) -> None:
    """Write one JSON document (and a newline) to stdout."""
    out = stream or sys.stdout
    json.dump(document, out, indent=2)
    out.write("\n")

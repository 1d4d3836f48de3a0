"""The Report step's files: JSON (the `doctor --json` schema), Markdown and HTML, written
privately and atomically into the wizard's folder. What they say is the presentation layer's
(`present/formats`), the very formats `doctor --format json|md|html` prints with.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from strixwizard.checking.engine import Report
from strixwizard.present.formats import DoctorRun, by_name
from strixwizard.tui.saved import private_folder, write_private

#: The formats the Report step saves (each found in the presentation layer's table of formats).
FORMATS = ("json", "md", "html")


def report_stem(site: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", site).strip("-") or "site"
    return f"strixwizard-report-{safe}"


def report_run(report: Report, extra: dict[str, str] | None = None,
               sections: dict[str, Any] | None = None) -> DoctorRun:
    """The report as the formats are given it: `sections` (`live_tests`, `soak`, `deploy`) that
    are None left out; they become optional top-level JSON fields and sections of the
    Markdown and HTML."""
    present = {k: v for k, v in (sections or {}).items() if v is not None}
    return DoctorRun(report, report.exit_code(), extra=dict(extra or {}), sections=present)


def save_report(report: Report, directory: Path, extra: dict[str, str] | None = None,
                sections: dict[str, Any] | None = None) -> dict[str, Path]:
    """Write the three files into `directory` (created if missing); returns format -> path.
    Each file is written 0600 and atomically (a folder created for them 0700). Raises OSError
    with the reason when the folder cannot be written."""
    private_folder(directory)
    stem = report_stem(report.site)
    run = report_run(report, extra, sections)
    written = {}
    for name in FORMATS:
        output = by_name(name)
        path = directory / f"{stem}.{output.extension}"
        write_private(path, output.text(run))
        written[name] = path
    return written

"""The Report step's files: JSON (the `doctor --json` schema), Markdown and HTML, written
privately and atomically into the wizard's folder. What they say is the presentation layer's
(`present/report.py`), the very functions `doctor --format md|html` prints with.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from strixwizard.checking.engine import Report
from strixwizard.present.report import to_html, to_markdown
from strixwizard.tui.saved import private_folder, write_private

FORMATS = ("json", "md", "html")
def report_stem(site: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", site).strip("-") or "site"
    return f"strixwizard-report-{safe}"


def save_report(report: Report, directory: Path, extra: dict[str, str] | None = None,
                sections: dict[str, Any] | None = None) -> dict[str, Path]:
    """Write the three files into `directory` (created if missing); returns format -> path.
    `sections` (`live_tests`, `soak`, `deploy`) become optional top-level JSON fields and sections of
    the Markdown and HTML. Each file is written 0600 and atomically (a folder created for them
    0700). Raises OSError with the reason when the folder cannot be written."""
    private_folder(directory)
    stem = report_stem(report.site)
    present = {k: v for k, v in (sections or {}).items() if v is not None}
    texts = {
        "json": json.dumps({**report.to_json(), **present}, indent=2) + "\n",
        "md": to_markdown(report, extra, present),
        "html": to_html(report, extra, present),
    }
    written = {}
    for fmt, text in texts.items():
        path = directory / f"{stem}.{fmt}"
        write_private(path, text)
        written[fmt] = path
    return written

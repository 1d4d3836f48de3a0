"""The README's install commands, read from its fenced blocks marked `<!-- install: TOOL ... -->`,
so the install test runs exactly what a reader copies."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def install_commands(tool: str, text: str | None = None) -> list[str]:
    """The command lines (comments cut) of the fenced block after `<!-- install: TOOL`."""
    text = README.read_text(encoding="utf-8") if text is None else text
    found = re.search(r"^<!-- install: " + re.escape(tool) + r"\b[^\n]*-->\n```sh\n(.*?)^```",
                      text, re.MULTILINE | re.DOTALL)
    if found is None:
        raise LookupError(f"README.md has no block marked `<!-- install: {tool}`")
    lines = [line.split("  #", 1)[0].strip() for line in found.group(1).splitlines()]
    return [line for line in lines if line]

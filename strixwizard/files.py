"""The head's own private folders: journals, dry-run copies, history (0700, as the README says)."""

from __future__ import annotations

import os
from pathlib import Path


def private_dir(path: Path) -> Path:
    """`path` and its missing parents created 0700; an existing `path` made 0700."""
    if not path.is_dir():
        if not path.parent.exists():
            private_dir(path.parent)
        path.mkdir(mode=0o700, exist_ok=True)
    if path.stat().st_mode & 0o077:
        os.chmod(path, 0o700)
    return path

"""The Python interpreters this machine has, found as scripts/test_pythons.sh finds them: python3.X
on PATH, else the newest pyenv build of 3.X."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

#: What nodes run (their own python3, from 3.8 on) and what the head runs (3.11 and up).
NODE_VERSIONS = ("3.8", "3.9", "3.10", "3.11", "3.12", "3.13", "3.14")
HEAD_VERSIONS = ("3.11", "3.12", "3.13", "3.14")


def _runs(python: str) -> bool:
    try:
        return subprocess.run([python, "-c", ""], capture_output=True, timeout=30).returncode == 0
    except OSError:
        return False


def find_python(version: str) -> str | None:
    """An interpreter of `version` ("3.12"), or None when this machine has none."""
    found = shutil.which(f"python{version}")
    if found and _runs(found):
        return found
    versions = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    builds = sorted(versions.glob(f"{version}.*/bin/python{version}"),
                    key=lambda path: [int(n) for n in re.findall(r"\d+", path.parts[-3])])
    for build in reversed(builds):
        if _runs(str(build)):
            return str(build)
    return None


def available(versions: tuple[str, ...]) -> dict[str, str]:
    """Version → interpreter, for those of `versions` this machine has."""
    return {version: python for version in versions if (python := find_python(version))}

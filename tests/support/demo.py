"""The demo as a user meets it from a shell: its site file copied as the user's own (in another
directory, the nodes still snapshots), the environment of a fresh state folder and an 80-column
terminal, and the lines a command printed."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.support.cli import CliResult

DEMO = Path(__file__).resolve().parents[2] / "strixwizard" / "demo"


def demo_site_copy(tmp_path: Path) -> Path:
    """The demo site as a user's own site file in another directory (snapshot nodes)."""
    for name in ("node-a.tar.gz", "node-b.tar.gz"):
        (tmp_path / "snapshots").mkdir(exist_ok=True)
        shutil.copy(DEMO / "snapshots" / name, tmp_path / "snapshots" / name)
    site = tmp_path / "my site.yaml"
    site.write_text((DEMO / "site.yaml").read_text().replace("site: demo", "site: mine"))
    return site


def state_env(tmp_path: Path) -> dict[str, str]:
    """A state folder of the test's own and an 80-column terminal."""
    return {"XDG_STATE_HOME": str(tmp_path / "state"), "COLUMNS": "80"}


def printed_lines(result: CliResult) -> list[str]:
    """The lines of standard output that are not blank."""
    return [line for line in result.stdout.splitlines() if line.strip()]

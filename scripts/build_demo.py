"""Rebuild the bundled demo snapshots from `strixwizard/demo/scenarios.py`.

Run after changing the scenarios: `python scripts/build_demo.py`. A test
checks that the committed snapshots match what this writes. They are written
as `.tar.gz` archives: sysfs symlinks (some of them loops) survive in a tar,
not in a wheel.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from strixwizard.demo.scenarios import demo_nodes

SNAPSHOTS = Path(__file__).resolve().parent.parent / "strixwizard" / "demo" / "snapshots"


def main() -> None:
    SNAPSHOTS.mkdir(parents=True, exist_ok=True)
    for name, node in demo_nodes().items():
        old_dir = SNAPSHOTS / name
        if old_dir.is_dir():
            shutil.rmtree(old_dir)
        out = SNAPSHOTS / f"{name}.tar.gz"
        node.capture(out, as_tar=True)
        print(f"wrote {out}")


if __name__ == "__main__":
    main()

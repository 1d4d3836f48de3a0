"""Rebuild the bundled demo snapshots from `strixwizard/demo/scenarios.py`.

Run after changing the scenarios: `python scripts/build_demo.py`. A test
checks that the committed snapshots match what this writes.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from strixwizard.demo.scenarios import demo_nodes

SNAPSHOTS = Path(__file__).resolve().parent.parent / "strixwizard" / "demo" / "snapshots"


def main() -> None:
    for name, node in demo_nodes().items():
        out = SNAPSHOTS / name
        if out.exists():
            shutil.rmtree(out)
        out.mkdir(parents=True)
        node.capture(out)
        print(f"wrote {out}")


if __name__ == "__main__":
    main()

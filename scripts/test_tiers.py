"""The closing table of scripts/test.sh: one row per tier from its pytest junit report, then
the whole run's count as pytest words it ("N passed, N failed, N skipped").

    python scripts/test_tiers.py REPORT_DIR [WALL_SECONDS]
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from pathlib import Path

#: the order scripts/test.sh runs them in; reports of other names (interpreter-3.12) follow
ORDER = ("unit", "lab", "llama", "vm", "reboot", "pythons")


@dataclass
class Tier:
    name: str
    tests: int
    failed: int
    skipped: int
    seconds: float

    @property
    def passed(self) -> int:
        return self.tests - self.failed - self.skipped


def read(report: Path) -> Tier:
    """One junit report (pytest's: a <testsuites> holding one <testsuite>)."""
    root = ElementTree.parse(report).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    total = Tier(report.stem, 0, 0, 0, 0.0)
    for suite in suites:
        total.tests += int(suite.get("tests", 0))
        total.failed += int(suite.get("failures", 0)) + int(suite.get("errors", 0))
        total.skipped += int(suite.get("skipped", 0))
        total.seconds += float(suite.get("time", 0.0))
    return total


def main(argv: list[str]) -> int:
    if not 2 <= len(argv) <= 3:
        print(__doc__, file=sys.stderr)
        return 2
    reports = sorted(Path(argv[1]).glob("*.xml"),
                     key=lambda p: (ORDER.index(p.stem) if p.stem in ORDER else len(ORDER), p.stem))
    tiers = [read(report) for report in reports]
    if not tiers:
        print("test.sh: no tier ran")
        return 0
    print(f"\n{'tier':<18}{'tests':>7}{'passed':>8}{'failed':>8}{'skipped':>9}{'minutes':>9}")
    for tier in tiers:
        print(f"{tier.name:<18}{tier.tests:>7}{tier.passed:>8}{tier.failed:>8}{tier.skipped:>9}"
              f"{tier.seconds / 60:>9.1f}")
    if len(argv) == 3:
        print(f"{'(wall, with ruff, mypy and installs)':<50}{int(argv[2]) / 60:>9.1f}")
    passed = sum(t.passed for t in tiers)
    failed = sum(t.failed for t in tiers)
    skipped = sum(t.skipped for t in tiers)
    print(f"total: {passed} passed, {failed} failed, {skipped} skipped")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

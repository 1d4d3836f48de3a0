"""Where the table of real texts per declared tool output and file lives (tests/data/fact_cases,
its README says how a case is written; tests/test_fact_cases.py runs every case)."""

from __future__ import annotations

from pathlib import Path

CASES_DIR = Path(__file__).resolve().parents[1] / "data" / "fact_cases"

"""Every fix with its plan function, in the order plans run (declared in `fixes`)."""

from __future__ import annotations

from fixes import FIXES, PLANS

__all__ = ["FIXES", "PLANS"]

"""The supervisor every test program runs under lives with the node seam:
`strixwizard/onnode/supervisor.py` (sent to nodes as `python3 -c SOURCE ARGV_JSON SECONDS`)."""

from __future__ import annotations

from strixwizard.onnode.supervisor import MARK, main

__all__ = ["MARK", "main"]

"""The bundled demo site as a site file of a test's own, beside a copy of its snapshots, so a
test can add keys to it (`stack: llama-rpc`)."""

from __future__ import annotations

import shutil
from pathlib import Path

from strixwizard.services.nodes import DEMO_SITE


def demo_site_with(folder: Path, extra: str) -> Path:
    """The demo site file in `folder`, beside its snapshots, with `extra` appended."""
    shutil.copytree(DEMO_SITE.parent / "snapshots", folder / "snapshots")
    site = folder / "site.yaml"
    site.write_text(DEMO_SITE.read_text(encoding="utf-8") + extra, encoding="utf-8")
    return site

"""Hostile variants of the demo's snapshots: the demo nodes, their words replaced by a hostile
node's (kernel release, hostname, NIC firmware versions, the bundle's site name)."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

DEMO = Path(__file__).resolve().parents[3] / "strixwizard" / "demo" / "snapshots"


def hostile_snapshot(name: str, out: Path, kernel: str, firmware: str, host: str | None = None,
                     site: dict[str, object] | None = None) -> Path:
    """The demo's snapshot `name` as a directory under `out`, saying `kernel`, `firmware` (every
    NIC's `ethtool -i` firmware-version), and `host`/`site` in its meta.json when given."""
    root = out / name
    with tarfile.open(DEMO / f"{name}.tar.gz") as tar:
        tar.extractall(root)  # the demo's own archive (this Python has no extraction filters)
    (root / "fs/proc/sys/kernel/osrelease").write_text(kernel + "\n")
    commands = json.loads((root / "commands.json").read_text())
    for command in commands:
        if command["argv"][:2] == ["ethtool", "-i"]:
            command["stdout"] = "\n".join(
                f"firmware-version: {firmware}" if line.startswith("firmware-version:") else line
                for line in command["stdout"].split("\n"))
    (root / "commands.json").write_text(json.dumps(commands))
    meta = json.loads((root / "meta.json").read_text())
    if host is not None:
        meta["host"] = host
    if site is not None:
        meta["site"] = site
    (root / "meta.json").write_text(json.dumps(meta))
    return root


def hostile_bundle(out: Path, kernel: str, firmware: str, site_name: str = "bundle",
                   nodes: dict[str, dict[str, object]] | None = None) -> list[Path]:
    """A site's bundle (`capture --site`) of the two demo nodes: each meta.json names the site
    `site_name` and the node (its fields from `nodes`, by demo node name, override the rest)."""
    paths = []
    for index, name in enumerate(("node-a", "node-b")):
        node: dict[str, object] = {"name": site_name, "node": name, "host": f"10.99.250.{index + 1}",
                                   "fabric_address": f"192.168.100.{index + 1}", "fabric": {},
                                   "thresholds": {}, "allow_soft_rdma": False}
        node.update((nodes or {}).get(name, {}))
        paths.append(hostile_snapshot(name, out, kernel, firmware, site=node))
    return paths

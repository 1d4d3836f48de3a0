"""Turn the command line (site file, snapshots, demo) into the nodes of a run."""

from __future__ import annotations

import socket
from collections.abc import Sequence
from pathlib import Path

from strixwizard.engine import Node, local_node
from strixwizard.errors import UsageError
from strixwizard.model import HostReport
from strixwizard.probe.snapshot import SnapshotError, SnapshotProbe
from strixwizard.site import Site, load_site

DEMO_SITE = Path(__file__).parent / "demo" / "site.yaml"


def demo_site() -> Site:
    return load_site(DEMO_SITE)


def _unique(name: str, taken: set[str]) -> str:
    candidate, index = name, 2
    while candidate in taken:
        candidate, index = f"{name}-{index}", index + 1
    taken.add(candidate)
    return candidate


def _load_snapshot(path: Path) -> SnapshotProbe:
    try:
        return SnapshotProbe.load(path)
    except SnapshotError as error:
        raise UsageError(str(error)) from None


def site_nodes(site: Site) -> list[Node]:
    nodes: list[Node] = []
    for spec in site.nodes:
        if spec.snapshot is not None:
            path = site.resolve(spec.snapshot)
            nodes.append(local_node(spec.name, _load_snapshot(path), str(path), "snapshot"))
        elif spec.is_local:
            from strixwizard.probe.local import LocalProbe

            nodes.append(local_node(spec.name, LocalProbe(spec.name), "local", "local"))
        else:
            nodes.append(Node(
                HostReport(
                    name=spec.name, address=spec.host or "", source="ssh", reachable=False,
                    error="probing over SSH is not available in this build",
                ),
                None,
            ))
    return nodes


def resolve_run(site_file: Path | None, snapshots: Sequence[Path], demo: bool
                ) -> tuple[Site, list[Node]]:
    """The site and its nodes; with nothing given, this machine is the one node."""
    if demo and site_file is not None:
        raise UsageError("--demo and --site are exclusive: the demo is a site of its own")
    site = demo_site() if demo else load_site(site_file) if site_file else None
    nodes = site_nodes(site) if site else []
    taken = {n.report.name for n in nodes}
    for path in snapshots:
        probe = _load_snapshot(path)
        name = _unique(probe.host or path.name, taken)
        nodes.append(local_node(name, probe, str(path), "snapshot"))
    if site is None:
        site = Site(name="snapshots" if snapshots else "local")
    if not nodes:
        from strixwizard.probe.local import LocalProbe

        host = socket.gethostname()
        nodes.append(local_node(host, LocalProbe(host), "local", "local"))
    return site, nodes

"""Turn the command line (site file, inventory, snapshots, demo) into the nodes of a run.

Remote nodes are collected over SSH in parallel, one exec each; a node that
cannot be reached becomes an unreachable host with the reason, and the others
still get their verdicts.
"""

from __future__ import annotations

import re
import socket
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from strixwizard.checking.engine import Node, local_node
from strixwizard.errors import UsageError
from strixwizard.facts import NodeFacts
from strixwizard.model import HostReport
from strixwizard.probe.snapshot import SnapshotError, SnapshotProbe
from strixwizard.site import NodeSpec, Site, load_site

if TYPE_CHECKING:
    from strixwizard.node.session import Connector
    from strixwizard.probe.ssh import SshTarget

DEMO_SITE = Path(__file__).parent / "demo" / "site.yaml"


def ssh_parallel(site: Site | None = None) -> int:
    """How many nodes are collected at once: `ssh: {parallel: N}` when the site says, else a
    pool sized for the head's CPUs (`node.target.default_parallel`)."""
    from strixwizard.node.target import default_parallel

    wanted = site.ssh.parallel if site is not None else None
    return wanted if wanted is not None else default_parallel()


MAX_PARALLEL_SSH = 32  # the largest default pool (node.target.default_parallel)

#: Called as progress(node name, event, message); events: "start", "done", "failed".
Progress = Callable[[str, str, str], None]


@dataclass(frozen=True)
class RunRequest:
    site_file: Path | None = None
    inventory: Path | None = None
    snapshots: Sequence[Path] = field(default_factory=tuple)
    demo: bool = False
    trust_new_hosts: bool = False
    #: `--allow-soft-rdma`: as `allow_soft_rdma: true` in the site file
    allow_soft_rdma: bool = False


def demo_site() -> Site:
    return load_site(DEMO_SITE)


def _unique(name: str, taken: set[str]) -> str:
    candidate, index = name, 2
    while candidate in taken:
        candidate, index = f"{name}-{index}", index + 1
    taken.add(candidate)
    return candidate


def _snapshot_name(host: str | None, path: Path, index: int) -> str:
    """A plain snapshot's node name: the host its meta.json names when that is a node name (a
    site file's rule: it becomes file names and is shown), else the snapshot's file name made
    one, else `snapshot-N`."""
    from strixwizard.site import NAME_MAX, name_problem

    if host and name_problem(host) is None:
        return host
    stem = re.sub(r"[^A-Za-z0-9._-]", "_", path.name.removesuffix(".tar.gz"))[:NAME_MAX]
    return stem if name_problem(stem) is None else f"snapshot-{index + 1}"


def _load_snapshot(path: Path) -> SnapshotProbe:
    try:
        return SnapshotProbe.load(path)
    except SnapshotError as error:
        raise UsageError(str(error)) from None


def ssh_target(site: Site, spec: NodeSpec, trust_new_hosts: bool,
               trust_fingerprint: str | None = None) -> SshTarget:
    """How to reach a node; `trust_fingerprint` accepts an unknown key only if it is that one."""
    from strixwizard.probe.ssh import SshTarget

    return SshTarget(
        name=spec.name,
        host=spec.host or spec.name,
        user=spec.user,
        port=spec.port,
        key_file=str(site.resolve(spec.key)) if spec.key else None,
        known_hosts=site.resolve(site.ssh.known_hosts),
        trust_new_hosts=trust_new_hosts,
        trust_fingerprint=trust_fingerprint,
        connect_timeout=site.ssh.connect_timeout,
        deadline=site.ssh.deadline,
    )


def _collect_remote(site: Site, specs: Sequence[NodeSpec], trust_new_hosts: bool,
                    progress: Progress | None, fingerprints: Mapping[str, str],
                    connector: Connector | None = None, parallel: int | None = None
                    ) -> dict[str, Node]:
    if not specs:
        return {}  # and paramiko is never imported
    from strixwizard.probe.ssh import SshError, collect_ssh

    def one(spec: NodeSpec) -> Node:
        target = ssh_target(site, spec, trust_new_hosts, fingerprints.get(spec.name))
        address = f"{target.user}@{target.host}" + (f":{target.port}" if target.port != 22 else "")
        if progress:
            progress(spec.name, "start", f"collecting over SSH from {address}")
        started = time.monotonic()
        try:
            probe = collect_ssh(target, connector=connector)
        except SshError as error:
            if progress:
                progress(spec.name, "failed", str(error))
            return Node(HostReport(spec.name, address, "ssh", reachable=False, error=str(error)), None)
        if progress:
            progress(spec.name, "done", f"collected in {time.monotonic() - started:.1f} s")
        return Node(HostReport(spec.name, address, "ssh", reachable=True), NodeFacts(spec.name, probe))

    workers = max(1, min(parallel or ssh_parallel(site), len(specs)))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return dict(zip([s.name for s in specs], pool.map(one, specs), strict=True))


def site_nodes(site: Site, trust_new_hosts: bool = False, progress: Progress | None = None,
               trusted_fingerprints: Mapping[str, str] | None = None,
               connector: Connector | None = None, parallel: int | None = None) -> list[Node]:
    """The nodes of a site, remote ones collected over SSH in parallel (at most `parallel` at
    once; see `ssh_parallel`), each through a session from `connector` (SSH by default).

    `trusted_fingerprints` (node name → SHA256 fingerprint) trusts exactly the unknown host
    keys a user confirmed, and nothing else.
    """
    remote = [s for s in site.nodes if s.snapshot is None and not s.is_local]
    collected = _collect_remote(site, remote, trust_new_hosts, progress, trusted_fingerprints or {},
                                connector, parallel)
    nodes: list[Node] = []
    for spec in site.nodes:
        if spec.snapshot is not None:
            path = site.resolve(spec.snapshot)
            nodes.append(local_node(spec.name, _load_snapshot(path), str(path), "snapshot"))
        elif spec.is_local and connector is not None:
            from strixwizard.node.target import LocalTarget

            probe = connector(LocalTarget(spec.name)).collect()
            nodes.append(local_node(spec.name, probe, "local", "local"))
        elif spec.is_local:
            from strixwizard.probe.local import LocalProbe

            nodes.append(local_node(spec.name, LocalProbe(spec.name), "local", "local"))
        else:
            nodes.append(collected[spec.name])
    return nodes


def resolve_site(request: RunRequest) -> Site | None:
    """The site of a run, with the inventory's hosts as its nodes when one is given."""
    if request.demo and (request.site_file or request.inventory):
        raise UsageError("--demo is a site of its own: it cannot be combined with --site or --inventory")
    if request.demo:
        return demo_site()
    site = None
    if request.site_file:
        site = load_site(request.site_file, require_nodes=request.inventory is None)
    if request.inventory is not None:
        from strixwizard.inventory import load_inventory

        nodes = load_inventory(request.inventory)
        base = site or Site(name=request.inventory.stem, path=request.inventory.resolve())
        site = replace(base, nodes=nodes)
    return site


def resolve_run(request: RunRequest, progress: Progress | None = None,
                connector: Connector | None = None) -> tuple[Site, list[Node]]:
    """The site and its nodes; with nothing given, this machine is the one node."""
    site = resolve_site(request)
    nodes = site_nodes(site, request.trust_new_hosts, progress, connector=connector) if site else []
    from strixwizard.probe.capture import replayed_site

    taken = {n.report.name for n in nodes}
    loaded = [(path, _load_snapshot(path)) for path in request.snapshots]
    bundle = replayed_site(loaded) if site is None else None  # a site's bundle: the same site
    for index, (path, probe) in enumerate(loaded):
        name = _unique(bundle.nodes[index].name if bundle else _snapshot_name(probe.host, path, index),
                       taken)
        nodes.append(local_node(name, probe, str(path), "snapshot"))
    if site is None:
        site = bundle or Site(name="snapshots" if request.snapshots else "local")
    if request.allow_soft_rdma:
        site = replace(site, allow_soft_rdma=True)
    if not nodes:
        from strixwizard.probe.local import LocalProbe

        host = socket.gethostname()
        nodes.append(local_node(host, LocalProbe(host), "local", "local"))
    return site, nodes

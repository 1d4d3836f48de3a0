"""Turn the command line (site file, inventory, snapshots, demo) into the nodes of a run.

Every node is collected through a session for its target (`node.target.target_for`);
remote nodes over SSH in parallel, one exec each; a node that
cannot be reached becomes an unreachable host with the reason, and the others
still get their verdicts.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from strixwizard.discovery import DiscoveredNode, reached_node
from strixwizard.errors import UsageError
from strixwizard.model import HostReport
from strixwizard.node.connect import connect
from strixwizard.node.errors import NodeError, SudoRefused
from strixwizard.node.target import SshTarget, Target, ssh_parallel, target_for
from strixwizard.probe.snapshot import SnapshotError, SnapshotProbe
from strixwizard.site import Site, load_site

if TYPE_CHECKING:
    from strixwizard.node.session import Connector, Spec

DEMO_SITE = Path(__file__).resolve().parent.parent / "demo" / "site.yaml"

__all__ = ["DEMO_SITE", "MAX_PARALLEL_SSH", "Progress", "RunRequest", "collect_node", "demo_site",
           "resolve_run", "resolve_site", "site_nodes", "ssh_parallel"]


MAX_PARALLEL_SSH = 32  # the largest default pool (node.target.default_parallel)

#: Called as progress(node name, event, message); events: "start", "done", "failed".
Progress = Callable[[str, str, str], None]


@dataclass(frozen=True)
class RunRequest:
    """What a command was asked to run on: a site file, an inventory, snapshots or the demo."""

    site_file: Path | None = None
    inventory: Path | None = None
    snapshots: Sequence[Path] = field(default_factory=tuple)
    demo: bool = False
    trust_new_hosts: bool = False
    #: `--allow-soft-rdma`: as `allow_soft_rdma: true` in the site file
    allow_soft_rdma: bool = False
    #: `doctor --stack NAME`: as `stack: NAME` in the site file ("": the site's)
    stack: str = ""
    #: what to collect from nodes over SSH (None: everything, `facts/spec.py` SPEC)
    spec: Spec | None = None
    #: `doctor --llama-bin-dir`: the folder the llama.cpp survey looks in first (None: the site
    #: file's `llama_bin_dir:`, if it says one)
    llama_bin_dir: str | None = None


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


def collect_node(target: Target, connector: Connector = connect, spec: Spec | None = None) -> DiscoveredNode:
    """A node's facts through one session of `connector`, closed after. A node that cannot be
    reached is an unreachable host with the reason; a snapshot that does not load, and a node
    whose `sudo -n` refuses its login user (`SudoRefused`: the site's setup, found before
    anything ran as root), are usage errors that stop the run."""
    from strixwizard.facts.spec import SPEC

    session = connector(target)
    try:
        probe = session.collect(SPEC if spec is None else spec)
    except SudoRefused:
        raise
    except NodeError as error:
        return DiscoveredNode(HostReport(target.name, target.address, target.kind, reachable=False,
                               error=str(error)), None)
    except SnapshotError as error:
        raise UsageError(str(error)) from None
    finally:
        session.close()
    return reached_node(target.name, probe, target.address, target.kind)


def _collect_remote(targets: Sequence[Target], progress: Progress | None, connector: Connector,
                    workers: int, spec: Spec | None = None) -> dict[str, DiscoveredNode]:
    def one(target: Target) -> DiscoveredNode:
        if progress:
            progress(target.name, "start", f"collecting over SSH from {target.address}")
        started = time.monotonic()
        node = collect_node(target, connector, spec)
        if progress and not node.report.reachable:
            progress(target.name, "failed", node.report.error or "unreachable")
        elif progress:
            progress(target.name, "done", f"collected in {time.monotonic() - started:.1f} s")
        return node

    from concurrent.futures import ThreadPoolExecutor  # loads logging: not for snapshots

    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(targets)))) as pool:
        return dict(zip([t.name for t in targets], pool.map(one, targets), strict=True))


def site_nodes(site: Site, trust_new_hosts: bool = False, progress: Progress | None = None,
               trusted_fingerprints: Mapping[str, str] | None = None,
               connector: Connector | None = None, parallel: int | None = None,
               spec: Spec | None = None) -> list[DiscoveredNode]:
    """The nodes of a site, each collected through a session from `connector` (`connect` by
    default) for its target (`target_for`); remote ones over SSH in parallel (at most
    `parallel` at once; see `ssh_parallel`).

    `trusted_fingerprints` (node name → SHA256 fingerprint) trusts exactly the unknown host
    keys a user confirmed, and nothing else.
    """
    fingerprints = trusted_fingerprints or {}
    targets = [target_for(site, spec, trust_new_hosts=trust_new_hosts,
                          trust_fingerprint=fingerprints.get(spec.name)) for spec in site.nodes]
    connector = connector or connect
    remote = [t for t in targets if isinstance(t, SshTarget)]
    collected = _collect_remote(remote, progress, connector, parallel or ssh_parallel(site), spec) \
        if remote else {}
    return [collected[t.name] if isinstance(t, SshTarget) else collect_node(t, connector, spec)
            for t in targets]


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
                connector: Connector | None = None) -> tuple[Site, list[DiscoveredNode]]:
    """The site and its nodes; with nothing given, this machine is the one node."""
    site = resolve_site(request)
    bin_dir = request.llama_bin_dir or (site.llama_bin_dir if site else None)
    spec = with_llama_bin_dir(request.spec, bin_dir)
    nodes = site_nodes(site, request.trust_new_hosts, progress, connector=connector,
                       spec=spec) if site else []
    taken = {n.report.name for n in nodes}
    loaded = [(path, _load_snapshot(path)) for path in request.snapshots]
    bundle = None
    if site is None and loaded:  # a site's bundle: the same site
        from strixwizard.services.capture import replayed_site  # and tempfile: not for a site

        bundle = replayed_site(loaded)
    for index, (path, probe) in enumerate(loaded):
        name = _unique(bundle.nodes[index].name if bundle else _snapshot_name(probe.host, path, index),
                       taken)
        nodes.append(reached_node(name, probe, str(path), "snapshot"))
    if site is None:
        site = bundle or Site(name="snapshots" if request.snapshots else "local")
    if request.allow_soft_rdma:
        site = replace(site, allow_soft_rdma=True)
    if request.stack:
        site = replace(site, stack=request.stack)
    if not nodes:
        import socket

        from strixwizard.node.target import LocalTarget

        nodes.append(collect_node(LocalTarget(socket.gethostname()), spec=spec))
    for node in nodes:
        if node.facts is not None:
            node.facts.llama_bin_dir = bin_dir
    return site, nodes


def with_llama_bin_dir(spec: Spec | None, bin_dir: str | None) -> Spec | None:
    """The collection spec with the llama.cpp survey that looks in `bin_dir` first."""
    if not bin_dir:
        return spec
    from strixwizard.facts.llama_cpp import survey_argv
    from strixwizard.facts.spec import SPEC

    base = SPEC if spec is None else spec
    survey = {"argv": list(survey_argv(bin_dir)), "root": True}  # as LLAMA_PROGRAMS: root's view
    return {**base, "commands": [*base.get("commands", ()), survey]}

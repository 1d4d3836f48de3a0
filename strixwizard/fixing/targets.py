"""One runner per node of a run, and how a journal reaches its node again for a rollback."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from strixwizard.fixing.journal import NodeJournal
from strixwizard.fixing.runner import LocalRunner, Runner, SnapshotRunner, Unreachable
from strixwizard.probe.snapshot import SnapshotProbe
from strixwizard.site import NodeSpec, Site

if TYPE_CHECKING:
    from strixwizard.checking.engine import Node
    from strixwizard.fixing.engine import ApplyReport
    from strixwizard.fixing.journal import JournalStore
    from strixwizard.fixing.model import SitePlan
    from strixwizard.node.session import Connector


def copy_snapshot(source: Path, destination: Path) -> Path:
    """A private copy of a snapshot (directory or .tar.gz) for a dry run: the folders made
    for it (`dry-runs/`, the run's, the copy's own) are 0700, as the journals' are."""
    from strixwizard.fixing.journal import private_dir

    private_dir(destination.parent)
    if source.is_dir():
        shutil.copytree(source, destination, symlinks=True)
    else:
        # Through the snapshot loader rather than tarfile.extractall: paths are normalised
        # inside the snapshot, and Debian 12's Python 3.11.2 has no extraction filters.
        SnapshotProbe.load(source).write_dir(destination)
    private_dir(destination)
    return destination


def runner_for(site: Site, spec: NodeSpec, *, trust_new_hosts: bool, node_journal_dir: str,
               dry_run_root: Path, connector: Connector | None = None
               ) -> tuple[Runner, dict[str, Any]]:
    """The runner for one node of the site, and the descriptor its journal keeps; remote nodes
    are reached through a session from `connector` (SSH by default)."""
    if spec.snapshot is not None:
        copy = copy_snapshot(site.resolve(spec.snapshot), dry_run_root / spec.name)
        return SnapshotRunner(spec.name, copy), {"kind": "snapshot", "root": str(copy)}
    if spec.is_local:
        from strixwizard.node.target import LocalTarget

        session = connector(LocalTarget(spec.name)) if connector is not None else None
        return LocalRunner(spec.name, journal_dir=node_journal_dir, session=session), {
            "kind": "local", "journal_dir": node_journal_dir}
    from strixwizard.fixing.ssh import SshRunner
    from strixwizard.targets import ssh_target

    target = ssh_target(site, spec, trust_new_hosts)
    return SshRunner(target, node_journal_dir, connector), {
        "kind": "ssh", "host": target.host, "user": target.user, "port": target.port,
        "key_file": target.key_file, "known_hosts": str(target.known_hosts),
        "connect_timeout": target.connect_timeout, "deadline": target.deadline,
        "journal_dir": node_journal_dir,
    }


def runner_from_journal(journal: NodeJournal, connector: Connector | None = None) -> Runner:
    """Reach the node a journal was written for, as the run reached it."""
    desc = journal.runner
    kind = desc.get("kind")
    if kind == "snapshot":
        root = Path(desc["root"])
        if not root.is_dir():
            raise Unreachable(f"the dry-run copy {root} is gone")
        return SnapshotRunner(journal.node, root)
    if kind == "local":
        return LocalRunner(journal.node, journal_dir=desc.get("journal_dir", "/var/lib/strixwizard/journal"))
    if kind == "ssh":
        from strixwizard.fixing.ssh import SshRunner
        from strixwizard.probe.ssh import SshTarget

        target = SshTarget(
            name=journal.node, host=desc["host"], user=desc["user"], port=int(desc["port"]),
            key_file=desc.get("key_file"), known_hosts=Path(desc["known_hosts"]),
            connect_timeout=float(desc.get("connect_timeout", 5.0)),
            deadline=float(desc.get("deadline", 60.0)),
        )
        return SshRunner(target, desc.get("journal_dir", "/var/lib/strixwizard/journal"), connector)
    raise Unreachable(f"the journal does not say how to reach {journal.node} ({kind!r})")


def apply_site(site: Site, nodes: Sequence[Node], plan: SitePlan, store: JournalStore, *,
               node_journal_dir: str, dry_run_root: Path, run_id: str | None = None,
               trust_new_hosts: bool = False, with_reboot: bool = False,
               progress: Callable[[str, str], None] | None = None,
               connector: Connector | None = None, break_lock: bool = False) -> ApplyReport:
    """Apply a site's plan the one way the CLI and the wizard both use: a runner per node with
    changes (snapshot nodes get a dry run under `dry_run_root`), the engine's drift check,
    journal and steps, then verification against the facts seen before; runners closed."""
    from strixwizard.fixing.engine import apply_plan, verify
    from strixwizard.fixing.journal import new_run_id

    run_id = run_id or new_run_id()
    specs = {spec.name: spec for spec in site.nodes}
    runners: dict[str, Runner] = {}
    descriptors: dict[str, dict[str, Any]] = {}
    try:
        for name in [n for n in plan.nodes if any(p.steps for p in plan.for_node(n))]:
            spec = specs.get(name)
            if spec is None:  # this machine, run without a site file
                runners[name] = LocalRunner(name, journal_dir=node_journal_dir)
                descriptors[name] = {"kind": "local", "journal_dir": node_journal_dir}
            else:
                runners[name], descriptors[name] = runner_for(
                    site, spec, trust_new_hosts=trust_new_hosts, node_journal_dir=node_journal_dir,
                    dry_run_root=dry_run_root / run_id, connector=connector)
        before = {n.report.name: n.facts for n in nodes if n.facts is not None}
        return apply_plan(plan, runners, store, site, descriptors, with_reboot=with_reboot,
                          run_id=run_id, progress=progress, break_lock=break_lock,
                          verify_with=lambda after: verify(site, plan, before, after))
    finally:
        for runner in runners.values():
            runner.close()

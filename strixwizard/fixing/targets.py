"""One runner per node of a run, and how a journal reaches its node again for a rollback."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from strixwizard.fixing.journal import NodeJournal
from strixwizard.fixing.runner import LocalRunner, Runner, SnapshotRunner, Unreachable
from strixwizard.probe.snapshot import SnapshotProbe
from strixwizard.site import NodeSpec, Site


def copy_snapshot(source: Path, destination: Path) -> Path:
    """A private copy of a snapshot (directory or .tar.gz) for a dry run."""
    destination.parent.mkdir(parents=True, exist_ok=True)
    if source.is_dir():
        shutil.copytree(source, destination, symlinks=True)
    else:
        # Through the snapshot loader rather than tarfile.extractall: paths are normalised
        # inside the snapshot, and Debian 12's Python 3.11.2 has no extraction filters.
        SnapshotProbe.load(source).write_dir(destination)
    return destination


def runner_for(site: Site, spec: NodeSpec, *, trust_new_hosts: bool, node_journal_dir: str,
               dry_run_root: Path) -> tuple[Runner, dict[str, Any]]:
    """The runner for one node of the site, and the descriptor its journal keeps."""
    if spec.snapshot is not None:
        copy = copy_snapshot(site.resolve(spec.snapshot), dry_run_root / spec.name)
        return SnapshotRunner(spec.name, copy), {"kind": "snapshot", "root": str(copy)}
    if spec.is_local:
        return LocalRunner(spec.name, journal_dir=node_journal_dir), {
            "kind": "local", "journal_dir": node_journal_dir}
    from strixwizard.fixing.ssh import SshRunner
    from strixwizard.targets import ssh_target

    target = ssh_target(site, spec, trust_new_hosts)
    return SshRunner(target, node_journal_dir), {
        "kind": "ssh", "host": target.host, "user": target.user, "port": target.port,
        "key_file": target.key_file, "known_hosts": str(target.known_hosts),
        "connect_timeout": target.connect_timeout, "deadline": target.deadline,
        "journal_dir": node_journal_dir,
    }


def runner_from_journal(journal: NodeJournal) -> Runner:
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
        return SshRunner(target, desc.get("journal_dir", "/var/lib/strixwizard/journal"))
    raise Unreachable(f"the journal does not say how to reach {journal.node} ({kind!r})")

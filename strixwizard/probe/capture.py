"""`strixwizard capture`: write a snapshot of this machine."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from strixwizard import __version__
from strixwizard.errors import UsageError
from strixwizard.probe.collector import DirSink, Sink, TarSink, collect
from strixwizard.probe.snapshot import SnapshotError, SnapshotProbe
from strixwizard.probe.spec import SPEC
from strixwizard.site import NodeSpec, Site, name_problem


def capture_local(out: Path, as_tar: bool, root: str = "/") -> Path:
    """Collect this machine into `out` (a new directory, or a .tar.gz) and return the path."""
    if as_tar and not out.name.endswith((".tar.gz", ".tgz")):
        out = out.with_name(out.name + ".tar.gz")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UsageError(f"{out}: already exists; choose a new path so nothing is overwritten")
    if not out.parent.is_dir():
        raise UsageError(f"{out.parent}: no such directory")
    sink: Sink
    if as_tar:
        partial = out.with_name(out.name + ".partial")
        with os.fdopen(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb"
                       ) as stream:
            collect(dict(SPEC), TarSink(stream), __version__, root=root)
        os.replace(partial, out)
    else:
        sink = DirSink(os.fspath(out))
        collect(dict(SPEC), sink, __version__, root=root)
    return out


@dataclass
class SiteCapture:
    written: dict[str, Path] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)


def capture_site(site: Site, out: Path, trust_new_hosts: bool,
                 progress: Callable[[str, str, str], None] | None = None) -> SiteCapture:
    """One `<node>.tar.gz` per node of the site under `out`, through the same SSH collector."""
    from concurrent.futures import ThreadPoolExecutor

    from strixwizard.probe.ssh import SshError, collect_ssh_archive
    from strixwizard.targets import ssh_parallel, ssh_target

    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UsageError(f"{out}: already exists; choose a new directory so nothing is overwritten")
    out.mkdir(mode=0o700, parents=True, exist_ok=True)  # node snapshots: private until shared
    outcome = SiteCapture()

    def one(spec: NodeSpec) -> None:
        path = out / f"{spec.name}.tar.gz"
        if (problem := name_problem(spec.name)) is not None or path.parent != out:
            outcome.failed[spec.name] = f"node name {spec.name!r} {problem or 'is a path'}: " \
                f"its snapshot would not land in {out}"
            return
        if spec.snapshot is not None:
            outcome.failed[spec.name] = f"already a snapshot ({site.resolve(spec.snapshot)})"
            return
        if spec.is_local:
            capture_local(path, as_tar=True)
            outcome.written[spec.name] = path
            return
        if progress:
            progress(spec.name, "start", f"capturing over SSH from {spec.host}")
        try:
            data = collect_ssh_archive(ssh_target(site, spec, trust_new_hosts))
            SnapshotProbe.from_bytes(data, spec.name)  # refuse to write what would not load
        except (SshError, SnapshotError) as error:
            outcome.failed[spec.name] = str(error)
            if progress:
                progress(spec.name, "failed", str(error))
            return
        with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as out_:
            out_.write(data)
        outcome.written[spec.name] = path
        if progress:
            progress(spec.name, "done", f"written to {path}")

    with ThreadPoolExecutor(max_workers=max(1, min(ssh_parallel(site), len(site.nodes)))) as pool:
        list(pool.map(one, site.nodes))
    outcome.written = {n.name: outcome.written[n.name] for n in site.nodes if n.name in outcome.written}
    return outcome

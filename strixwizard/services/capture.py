"""`strixwizard capture`: write a snapshot of this machine, or of every node of a site.

A site's support bundle replays as the site it came from: each node's `meta.json`
carries a `site` object (the site's name, the node's name in it, its management `host` and
`fabric_address`, the fabric's wanted state and the thresholds), and
`doctor --snapshot` over the bundle's archives rebuilds that site from them (see
`replayed_site`), so the nodes, links and findings are the same as on the real nodes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
import tarfile
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from strixwizard import __version__
from strixwizard.errors import UsageError, os_error_line
from strixwizard.facts.spec import SPEC
from strixwizard.onnode.collector import DirSink, Sink, TarSink, collect
from strixwizard.probe.snapshot import SnapshotError, SnapshotProbe
from strixwizard.site import (
    STACKS,
    Fabric,
    FieldError,
    NodeSpec,
    Site,
    Thresholds,
    name_problem,
    node_problem,
)

#: The key of meta.json that says which site, and which node of it, a snapshot is.
SITE_KEY = "site"


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
        try:
            with os.fdopen(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb"
                           ) as stream:
                collect(dict(SPEC), TarSink(stream), __version__, root=root)
            os.replace(partial, out)
        except OSError as error:
            if error.filename is None:
                raise OSError(error.errno, error.strerror, str(out)) from error
            raise
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(partial)
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

    from strixwizard.node.connect import connect
    from strixwizard.node.errors import NodeError
    from strixwizard.node.target import ssh_parallel, target_for

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
            try:
                local = capture_local(out / f".{spec.name}.local.tar.gz", as_tar=True)
                data = with_site_meta(local.read_bytes(), site_meta(site, spec))
                local.unlink()
                _write_private(path, data)
            except OSError as error:
                outcome.failed[spec.name] = f"not written: {os_error_line(error)}"
                return
            outcome.written[spec.name] = path
            return
        if progress:
            progress(spec.name, "start", f"capturing over SSH from {spec.host}")
        try:
            session = connect(target_for(site, spec, trust_new_hosts=trust_new_hosts))
            try:
                archive = session.collect_archive(SPEC)
            finally:
                session.close()
            data = with_site_meta(archive, site_meta(site, spec))
            SnapshotProbe.from_bytes(data, spec.name)  # refuse to write what would not load
        except (NodeError, SnapshotError) as error:
            outcome.failed[spec.name] = str(error)
            if progress:
                progress(spec.name, "failed", str(error))
            return
        try:
            _write_private(path, data)
        except OSError as error:
            outcome.failed[spec.name] = f"not written: {os_error_line(error)}"
            if progress:
                progress(spec.name, "failed", outcome.failed[spec.name])
            return
        outcome.written[spec.name] = path
        if progress:
            progress(spec.name, "done", f"written to {path}")

    pool = ThreadPoolExecutor(max_workers=max(1, min(ssh_parallel(site), len(site.nodes))))
    try:
        list(pool.map(one, site.nodes))
    finally:  # a stop (a signal) goes on at once: nodes not started are not, the rest end alone
        pool.shutdown(wait=False, cancel_futures=True)
    outcome.written = {n.name: outcome.written[n.name] for n in site.nodes if n.name in outcome.written}
    return outcome


def _write_private(path: Path, data: bytes) -> None:
    """`data` as a new file `path`, 0600, whole or not at all: written to a temporary file in
    the same folder, flushed, then linked to `path` (never over an existing file) and the
    temporary name removed; on any failure nothing is left. An OSError names `path`."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.link(tmp, path)
    except OSError as error:
        if error.filename is None or error.filename == tmp:
            raise OSError(error.errno, error.strerror, str(path)) from error
        raise
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def site_meta(site: Site, spec: NodeSpec) -> dict[str, Any]:
    """What meta.json says of the site a node's snapshot was captured from."""
    return {"name": site.name, "node": spec.name, "host": spec.host, "fabric_address": spec.fabric_address,
            "fabric": dataclasses.asdict(site.fabric), "thresholds": dataclasses.asdict(site.thresholds),
            "allow_soft_rdma": site.allow_soft_rdma, "stack": site.stack}


def with_site_meta(archive: bytes, site: dict[str, Any]) -> bytes:
    """The .tar.gz `archive` with `site` added to its meta.json (every other entry as it was)."""
    out = io.BytesIO()
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:*") as source, \
            tarfile.open(fileobj=out, mode="w:gz") as target:
        for member in source:
            if member.isfile() and member.name.strip("./").split("/")[-1] == "meta.json" \
                    and member.name.strip("./").count("/") <= 1:
                handle = source.extractfile(member)
                meta = json.loads(handle.read() if handle else b"{}")
                meta[SITE_KEY] = site
                payload = (json.dumps(meta, indent=1, allow_nan=False) + "\n").encode()
                member.size = len(payload)
                target.addfile(member, io.BytesIO(payload))
            elif member.isfile():
                target.addfile(member, source.extractfile(member))
            else:
                target.addfile(member)
    return out.getvalue()


def _stack(name: object, path: Path) -> str:
    """The stack a bundle's meta.json names ("" when it names none: captured before `stack:`)."""
    if name in (None, ""):
        return ""
    if not isinstance(name, str) or name not in STACKS:
        raise UsageError(f"{path}: meta.json names the stack {name!r}, which is not one of "
                         f"{', '.join(STACKS)}")
    return name


def replayed_site(snapshots: Sequence[tuple[Path, SnapshotProbe]]) -> Site | None:
    """The site a bundle's snapshots were captured from, when every one says the same site
    (name, fabric, thresholds) and names a different node of it; otherwise None (snapshots
    from here and there replay as plain snapshots, named by their hosts)."""
    metas = [probe.meta.get(SITE_KEY) for _, probe in snapshots]
    if not metas or not all(isinstance(m, dict) for m in metas):
        return None
    shared = {json.dumps({k: m.get(k) for k in ("name", "fabric", "thresholds", "allow_soft_rdma",
                                                 "stack")},
                         sort_keys=True, allow_nan=False) for m in metas if isinstance(m, dict)}
    names = [m.get("node") for m in metas if isinstance(m, dict)]
    if len(shared) != 1 or len(set(names)) != len(names):
        return None
    first = metas[0]
    assert isinstance(first, dict)
    try:
        nodes = []
        for (path, _), meta in zip(snapshots, metas, strict=True):
            assert isinstance(meta, dict)
            name = meta.get("node")
            if not isinstance(name, str) or name_problem(name) is not None:
                raise UsageError(f"{path}: meta.json names its node {name!r}, which is not a "
                                 "node name")
            address, host = meta.get("fabric_address"), meta.get("host")
            node = NodeSpec(name=name, host=host if isinstance(host, str) else None,  # its SSH address
                            fabric_address=address if isinstance(address, str) else None,
                            snapshot=str(path))
            if (problem := node_problem(node)) is not None:  # a site file's rules
                raise UsageError(f"{path}: meta.json's node {name!r}: {problem}")
            nodes.append(node)
        site_name = first.get("name") or "snapshots"
        if not isinstance(site_name, str) or (problem := name_problem(site_name)) is not None:
            raise UsageError(f"{snapshots[0][0]}: meta.json names its site {site_name!r}, "
                             f"which is not a site name ({problem or 'not a string'})")
        return Site(name=site_name, nodes=tuple(nodes),
                    fabric=Fabric(**(first.get("fabric") or {})),
                    thresholds=Thresholds(**(first.get("thresholds") or {})),
                    allow_soft_rdma=first.get("allow_soft_rdma") is True,
                    stack=_stack(first.get("stack"), snapshots[0][0]))
    except (FieldError, TypeError, ValueError) as error:
        raise UsageError(f"{snapshots[0][0]}: meta.json's site is not a site ({error})") from None

"""`strixwizard capture`: write a snapshot of this machine."""

from __future__ import annotations

import os
from pathlib import Path

from strixwizard import __version__
from strixwizard.errors import UsageError
from strixwizard.probe.collector import DirSink, Sink, TarSink, collect
from strixwizard.probe.spec import SPEC


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
        with open(partial, "wb") as stream:
            collect(dict(SPEC), TarSink(stream), __version__, root=root)
        os.replace(partial, out)
    else:
        sink = DirSink(os.fspath(out))
        collect(dict(SPEC), sink, __version__, root=root)
    return out

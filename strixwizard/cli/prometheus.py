"""`--prometheus FILE`: the node_exporter textfile of a `doctor` or `test` run, written.

What the file says is `present/prometheus.py`'s; here it is written atomically with
`prometheus_client.write_to_textfile`, which writes a temporary file next to FILE and
renames it over FILE (node_exporter never reads half a file), after FILE was checked
before the run.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from strixwizard.errors import UsageError
from strixwizard.files import not_regular
from strixwizard.present.prometheus import doctor_registry, live_test_registry

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry


def check_textfile_path(path: Path) -> None:
    """Refuse, before the run, a FILE the textfile collector would never read or that cannot be
    written: it must end in `.prom`, in an existing folder."""
    if path.suffix != ".prom":
        raise UsageError(f"--prometheus {path}: the name must end in .prom (node_exporter's textfile "
                         "collector reads only those)")
    if not path.parent.is_dir():
        raise UsageError(f"--prometheus {path}: no such folder {path.parent}")
    if (kind := not_regular(path)) is not None:
        # the new file is renamed over FILE: a device, FIFO or link there would be replaced
        raise UsageError(f"--prometheus {path}: is {kind}; name a regular file (or a new one) "
                         "in the textfile folder (nothing was changed)")


def write_metrics(path: Path, registry: CollectorRegistry) -> None:
    """Write the textfile atomically (a temporary file in the same folder, then a rename).
    Raises OSError naming the path when the folder cannot be written."""
    from prometheus_client import write_to_textfile

    try:
        # prometheus_client writes FILE.PID.TID beside FILE, renames it over FILE, and removes
        # it when anything fails: FILE is the old file or the new one, never half of one
        write_to_textfile(str(path), registry)
        path.chmod(0o644)  # node_exporter runs as its own user
    except OSError as error:
        if error.filename is None or str(error.filename).startswith(f"{path}."):
            raise OSError(error.errno, error.strerror, str(path)) from error
        raise


def export_problem(path: Path, write: Callable[[], None]) -> str | None:
    """Run `write`; the one line that says why FILE could not be written, or None."""
    from strixwizard.errors import os_error_line

    try:
        write()
    except OSError as error:
        return f"--prometheus {path} not written: {os_error_line(error)}"
    return None


def write_doctor_metrics(path: Path, document: dict[str, Any], exit_code: int | None = None) -> None:
    write_metrics(path, doctor_registry(document, exit_code))


def write_test_metrics(path: Path, document: dict[str, Any]) -> None:
    write_metrics(path, live_test_registry(document))

"""The head's own private folders: journals, dry-run copies, history (0700, as docs/safety.md says),
and the data files shipped inside the packages."""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path


def package_text(package: str, name: str) -> str:
    """The text of `name` (a `/`-separated path) shipped in `package`, as
    `importlib.resources` reads it. A package installed as files (a wheel, a checkout) is read
    straight from its folder: `importlib.resources` loads a dozen modules (tempfile and zipfile
    among them), a tenth of `doctor`'s start-up; it stays the way for any other loader."""
    module = sys.modules.get(package) or importlib.import_module(package)
    origin = getattr(module, "__file__", None)
    if origin is not None:
        path = os.path.join(os.path.dirname(origin), *name.split("/"))
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as handle:
                return handle.read()
    from importlib import resources

    return resources.files(package).joinpath(name).read_text(encoding="utf-8")


#: How messages and help texts name `state_dir()` (its default).
STATE_DIR_SHOWN = "~/.local/state/strixwizard"


def state_dir() -> Path:
    """strixwizard's own folder on this machine: journals, history, the wizard's state and
    reports; `$XDG_STATE_HOME/strixwizard` (`~/.local/state/strixwizard` by default)."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "strixwizard"


def private_dir(path: Path) -> Path:
    """`path` and its missing parents created 0700; an existing `path` made 0700."""
    if not path.is_dir():
        if not path.parent.exists():
            private_dir(path.parent)
        path.mkdir(mode=0o700, exist_ok=True)
    if path.stat().st_mode & 0o077:
        os.chmod(path, 0o700)
    return path


def display_path(path: Path | str) -> str:
    """A path as people read it: the home folder shown as `~`."""
    text = str(path)
    home = str(Path.home())
    return "~" + text[len(home):] if home != "/" and (text == home or text.startswith(home + "/")) else text

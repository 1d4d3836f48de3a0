"""The owner's top-level `checks` and `fixes` keep their names when installed
(strixwizard/toplevel.py says why); another project's package of the same name, found first on
the import path, stops strixwizard with exit status 2 naming both paths."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from strixwizard.toplevel import OWN, foreign_packages

ROOT = Path(__file__).resolve().parent.parent


def _python(code: str, cwd: Path, pythonpath: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=60, check=False)


def test_the_packages_imported_here_are_strixwizard_s_own() -> None:
    assert foreign_packages() == []
    assert [foreign_packages(ROOT / "elsewhere")[i][0] for i in range(len(OWN))] == list(OWN)


@pytest.mark.parametrize("name", OWN)
def test_another_project_s_package_first_on_the_path_stops_strixwizard(tmp_path: Path,
                                                                        name: str) -> None:
    fake = tmp_path / "other-project" / name
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise RuntimeError('another project ran')\n")
    done = _python("import strixwizard.cli.main", cwd=tmp_path, pythonpath=fake.parent)
    assert done.returncode == 2, done.stderr
    assert f"the `{name}` package Python imports is {fake}, not strixwizard's own {ROOT / name}" \
        in done.stderr
    assert "another project ran" not in done.stderr and "Traceback" not in done.stderr


def test_a_folder_without_the_name_changes_nothing(tmp_path: Path) -> None:
    (tmp_path / "other-project" / "unrelated").mkdir(parents=True)
    done = _python("import strixwizard; print(strixwizard.__version__)", cwd=tmp_path,
                   pythonpath=tmp_path / "other-project")
    assert done.returncode == 0 and done.stdout.strip() == strixwizard_version()


def strixwizard_version() -> str:
    import strixwizard

    return strixwizard.__version__

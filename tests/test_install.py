"""Install as a user on another distribution would: the README's install lines as they are (pipx
under its pip and uv backends, and uv), and, for the checks of what the wheel holds, build the
sdist and wheel (`python -m build`,
which builds the wheel from the sdist), install the wheel into a fresh virtualenv outside the
source tree, and run the installed command there: `--version`, `doctor --demo --json` and the
wizard on the demo in a real terminal (tmux).

The sources are copied to a temporary directory first, with bytecode compiled into them as in a
checkout that has been used, so the build sees what a user's would and writes nothing into this
checkout. Nothing is cached between runs but pip's own download cache.
"""

from __future__ import annotations

import compileall
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import tomllib
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import ROOT, run_cli, validate_report
from tests.support.pythons import HEAD_VERSIONS, available

pytestmark = pytest.mark.pythons

PACKAGES = ("strixwizard", "checks", "fixes")
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
NAME_VERSION = f"{PROJECT['name']}-{PROJECT['version']}"
#: What the installed program reads from its package besides modules, one sample of each kind.
DATA_FILES = ("strixwizard/demo/site.yaml", "strixwizard/demo/snapshots/node-a.tar.gz",
              "strixwizard/demo/recordings/meta.json", "strixwizard/schema/doctor.schema.json",
              "strixwizard/data/known_bad.json", "strixwizard/tui/app.tcss")


def source_files() -> list[str]:
    """The checkout's files (tracked, or new and not ignored), relative to ROOT."""
    if (ROOT / ".git").exists() and shutil.which("git"):
        listed = subprocess.run(
            ["git", "-C", str(ROOT), "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
            capture_output=True, check=True, timeout=30,
        ).stdout.decode()
        return sorted(name for name in listed.split("\0") if name and (ROOT / name).is_file())
    return sorted(str(path.relative_to(ROOT)) for path in ROOT.rglob("*")
                  if path.is_file() and "__pycache__" not in path.parts
                  and path.parts[len(ROOT.parts)] in (*PACKAGES, "pyproject.toml", "README.md"))


def package_files() -> set[str]:
    """Every file the wheel must ship: all of the three packages, modules and data alike."""
    return {name for name in source_files() if name.split("/")[0] in PACKAGES}


def clean_env(tmp: Path) -> dict[str, str]:
    """This environment without anything that would let the checkout be imported, and with
    the wizard's state and config in `tmp`."""
    env = {key: value for key, value in os.environ.items()
           if key not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV", "NO_COLOR")}
    env.update(XDG_STATE_HOME=str(tmp / "state"), XDG_CONFIG_HOME=str(tmp / "config"),
               XDG_CACHE_HOME=str(tmp / "cache"), TERM="xterm-256color")
    return env


#: The interpreters the wheel is installed with: .venv's (Debian's python3) and the newest 3.12+
#: (the head of an Ubuntu 24.04 or Fedora site), when this machine has one.
NEWER = [python for version, python in available(HEAD_VERSIONS).items() if version != "3.11"][-1:]
PYTHONS = [sys.executable, *NEWER]


@dataclass(frozen=True)
class Built:
    sdist: Path
    wheel: Path
    seconds: dict[str, float]


@dataclass(frozen=True)
class Installed:
    wheel: Path
    venv: Path
    elsewhere: Path
    env: dict[str, str]

    def run(self, *argv: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(self.venv / "bin" / argv[0]), *argv[1:]], cwd=self.elsewhere,
                              env=self.env, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL, check=False)


def timed(seconds: dict[str, float], step: str, argv: list[str], **kwargs: Any) -> None:
    started = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          check=False, **kwargs)
    seconds[step] = round(time.monotonic() - started, 1)
    assert done.returncode == 0, f"{step} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    tmp = tmp_path_factory.mktemp("build")
    source, dist = tmp / "source", tmp / "dist"
    for name in source_files():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, source / name)
    for package in PACKAGES:
        assert compileall.compile_dir(source / package, quiet=1, force=True)
    seconds: dict[str, float] = {}
    timed(seconds, "build", [sys.executable, "-m", "build", "--outdir", str(dist), str(source)],
          cwd=tmp, env=clean_env(tmp), timeout=300)
    (wheel,) = dist.glob("*.whl")
    (sdist,) = dist.glob("*.tar.gz")
    return Built(sdist, wheel, seconds)


@pytest.fixture(scope="module", params=PYTHONS, ids=lambda python: Path(python).name)
def installed(built: Built, request: pytest.FixtureRequest,
              tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """The wheel in a fresh virtualenv of `python` (no system site-packages), run from a directory
    outside the source tree."""
    python: str = request.param
    tmp = tmp_path_factory.mktemp("install")
    venv, elsewhere = tmp / "venv", tmp / "elsewhere"
    elsewhere.mkdir()
    env = clean_env(tmp)
    seconds = dict(built.seconds)
    timed(seconds, "venv", [python, "-m", "venv", str(venv)], cwd=elsewhere, env=env, timeout=120)
    timed(seconds, "pip install", [str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
                                   "--no-input", "--disable-pip-version-check", str(built.wheel)],
          cwd=elsewhere, env=env, timeout=300)
    print(f"install test with {python}: {seconds} s")
    return Installed(built.wheel, venv, elsewhere, env)


def test_the_wheel_ships_every_module_and_data_file_and_nothing_else(built: Built) -> None:
    with zipfile.ZipFile(built.wheel) as wheel:
        names = set(wheel.namelist())
        (info,) = {name.split("/")[0] for name in names if name.split("/")[0].endswith(".dist-info")}
        entry_points = wheel.read(f"{info}/entry_points.txt").decode()
        metadata = wheel.read(f"{info}/METADATA").decode()
    shipped = {name for name in names if not name.startswith(f"{info}/")}
    expected = package_files()
    assert set(DATA_FILES) <= expected
    assert expected - shipped == set(), "files the installed package would miss"
    assert shipped - expected == set(), "files in the wheel that are not the package's (bytecode?)"
    assert re.search(r"^strixwizard = strixwizard\.cli\.main:main$", entry_points, re.M)
    assert f"Requires-Python: {PROJECT['requires-python']}" in metadata


def test_the_sdist_holds_what_a_build_from_it_needs(built: Built) -> None:
    with tarfile.open(built.sdist) as sdist:
        names = {name.removeprefix(f"{NAME_VERSION}/") for name in sdist.getnames()}
    assert {"pyproject.toml", "README.md", "PKG-INFO"} <= names
    assert package_files() - names == set()
    assert not [name for name in names if "__pycache__" in name or name.endswith(".pyc")]


def test_the_installed_package_is_the_one_that_runs(installed: Installed) -> None:
    done = installed.run("python", "-c", "import strixwizard; print(strixwizard.__file__)")
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()).is_relative_to(installed.venv)
    version = installed.run("strixwizard", "--version")
    assert (version.returncode, version.stdout.strip()) == (0, f"strixwizard {PROJECT['version']}")


def test_installed_doctor_on_the_demo_reports_as_the_checkout_does(installed: Installed) -> None:
    done = installed.run("strixwizard", "doctor", "--demo", "--json")
    assert done.returncode == 1, done.stderr  # the demo's faults are there on purpose
    package = Path(installed.run("python", "-c", "import strixwizard; print(strixwizard.__file__)")
                   .stdout.strip()).parent
    report = json.loads(done.stdout)
    validate_report(report, json.loads((package / "schema" / "doctor.schema.json").read_text()))
    from_checkout = run_cli("doctor", "--demo", "--json")

    def comparable(text: str, package_dir: Path) -> Any:
        document = json.loads(text.replace(str(package_dir), "<package>"))
        document.pop("generated_at")
        return document

    assert comparable(done.stdout, package) == comparable(from_checkout.stdout, ROOT / "strixwizard")


class Tmux:
    """A tmux server of its own (`-S`, its socket in the test's directory): nothing is shared
    with other tmux users, and nothing is left behind."""

    def __init__(self, socket: Path, env: dict[str, str]) -> None:
        self.socket, self.env = socket, env

    def __call__(self, *args: str) -> str:
        return subprocess.run(["tmux", "-S", str(self.socket), *args], capture_output=True, text=True,
                              timeout=10, check=True, env=self.env).stdout

    def wait(self, predicate: Any, what: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return
            time.sleep(0.2)
        pane = self("display-message", "-p", "-t", "app",
                    "pid #{pane_pid}, dead #{pane_dead}, status #{pane_dead_status}").strip()
        pid = pane.split(",")[0].removeprefix("pid ")
        proc = Path(f"/proc/{pid}")
        threads = sorted(path.read_text().strip() for path in proc.glob("task/*/comm"))
        status = (proc / "status").read_text().splitlines() if proc.exists() else []
        state = next((line for line in status if line.startswith("State:")), "gone")
        raise AssertionError(f"{what} not seen after {timeout} s ({pane}; process {state}; "
                             f"threads {threads}):\n{self('capture-pane', '-p', '-t', 'app')}")


@pytest.fixture
def tmux(installed: Installed) -> Iterator[Tmux]:
    server = Tmux(installed.elsewhere.parent / "tmux.socket", installed.env)
    try:
        yield server
    finally:
        subprocess.run(["tmux", "-S", str(server.socket), "kill-server"], capture_output=True,
                       timeout=10, check=False)
        server.socket.unlink(missing_ok=True)


#: Runs argv[2:] and writes its exit status to argv[1]: tmux can take long to reap a pane's
#: process and note the status.
EXIT_STATUS_TO_FILE = ("import subprocess, sys; status = subprocess.call(sys.argv[2:]); "
                       "open(sys.argv[1], 'w').write(str(status))")


def test_the_installed_wizard_opens_the_demo_and_quits(installed: Installed, tmux: Tmux) -> None:
    # A holding session starts the server, so the app's pane is kept, screen and all, after it ends.
    tmux("new-session", "-d", "-s", "hold", "sleep", "120")
    tmux("set-option", "-g", "remain-on-exit", "on")
    status = installed.elsewhere / "wizard.status"
    tmux("new-session", "-d", "-s", "app", "-x", "100", "-y", "30", "-c", str(installed.elsewhere),
         str(installed.venv / "bin" / "python"), "-c", EXIT_STATUS_TO_FILE, str(status),
         str(installed.venv / "bin" / "strixwizard"), "--demo")

    def screen() -> str:
        return tmux("capture-pane", "-p", "-t", "app")

    def first_step() -> bool:
        shown = screen()
        assert not status.exists(), f"the wizard ended before its first screen:\n{shown}"
        return "1 Site" in shown and "node-a" in shown and "node-b" in shown

    tmux.wait(first_step, "the wizard's first step with the demo's nodes", timeout=60)
    tmux("send-keys", "-t", "app", "q")
    tmux.wait(lambda: status.exists() and status.read_text() != "", "the wizard ending after q",
              timeout=20)
    assert status.read_text() == "0", screen()


def installer(name: str, tmp: Path, env: dict[str, str]) -> Path:
    """`pipx` or `uv` as the README has the user run them: on PATH or beside this interpreter
    (the test extras install both), else installed from PyPI into a virtualenv of its own in
    `tmp` — never into this machine's own Python."""
    found = shutil.which(name) or shutil.which(name, path=str(Path(sys.executable).parent))
    if found:
        return Path(found)
    tools = tmp / "installers"
    timed({}, "venv", [sys.executable, "-m", "venv", str(tools)], env=env, timeout=120)
    timed({}, f"pip install {name}", [str(tools / "bin" / "python"), "-m", "pip", "install", "-q",
                                      "--no-input", "--disable-pip-version-check", name],
          env=env, timeout=300)
    return tools / "bin" / name


#: Where each tool writes, moved into the test's directory, and the interpreter it builds on
#: named (the README's `--python /usr/bin/python3` names pipx's own); and where the tool puts
#: strixwizard's virtualenv.
TOOL_PLACES = {
    "pipx": (lambda tmp: {
        "PIPX_HOME": str(tmp / "home"), "PIPX_BIN_DIR": str(tmp / "bin"),
        "PIPX_MAN_DIR": str(tmp / "man"), "PIPX_DEFAULT_PYTHON": sys.executable,
        "UV_CACHE_DIR": str(tmp / "cache" / "uv")}, "home/venvs/strixwizard"),
    "uv": (lambda tmp: {
        "UV_TOOL_DIR": str(tmp / "home"), "UV_TOOL_BIN_DIR": str(tmp / "bin"),
        "UV_CACHE_DIR": str(tmp / "cache" / "uv"), "UV_PYTHON": sys.executable,
        "UV_PYTHON_DOWNLOADS": "never", "UV_NO_CONFIG": "1"}, "home/strixwizard"),
}


def clone(tmp: Path) -> Path:
    """The checkout's files in `tmp/clone`, as a user's clone has them."""
    source = tmp / "clone"
    for name in source_files():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, source / name)
    return source


@pytest.mark.parametrize(("tool", "backend"), [("pipx", "pip"), ("pipx", "uv"), ("uv", None)])
def test_the_readmes_install_lines_build_and_install_the_wheel(
        tool: str, backend: str | None, tmp_path: Path) -> None:
    """The README's marked install block, line by line as a reader pastes it into a shell in a
    clone (`tests/support/readme.py` reads it): the build, the install, `strixwizard --version`;
    pipx under both of its backends."""
    from tests.support.readme import install_commands

    places, venv = TOOL_PLACES[tool]
    source = clone(tmp_path)
    env = {**clean_env(tmp_path), **places(tmp_path)}
    if backend is not None:
        env["PIPX_DEFAULT_BACKEND"] = backend
    program = installer(tool, tmp_path, env)
    env["PATH"] = os.pathsep.join([str(tmp_path / "bin"), str(program.parent), env.get("PATH", "")])
    seconds: dict[str, float] = {}
    outputs = []
    for line in install_commands(tool):
        started = time.monotonic()
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", line], cwd=source, env=env,
                              capture_output=True, text=True, stdin=subprocess.DEVNULL,
                              timeout=600, check=False)
        seconds[line] = round(time.monotonic() - started, 1)
        assert done.returncode == 0, f"{line!r} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
        outputs.append(done.stdout)
    print(f"{tool} ({backend}): {seconds} s")
    assert outputs[-1].strip() == f"strixwizard {PROJECT['version']}"
    command = tmp_path / "bin" / "strixwizard"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    def run(*words: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(command), *words], cwd=elsewhere, env=env, capture_output=True,
                              text=True, timeout=120, stdin=subprocess.DEVNULL, check=False)

    where = subprocess.run([str(tmp_path / venv / "bin" / "python"), "-c",
                            "import strixwizard; print(strixwizard.__file__)"], cwd=elsewhere,
                           env=env, capture_output=True, text=True, timeout=60, check=False)
    assert Path(where.stdout.strip()).is_relative_to(tmp_path / venv), where.stderr
    doctor = run("doctor", "--demo", "--json")
    assert doctor.returncode == 1, doctor.stderr  # the demo's faults are there on purpose
    assert json.loads(doctor.stdout)["site"] == "demo"

"""The wizard's saved progress, its preferences and the reports it exports are private (0600
files, 0700 for the folders strixwizard creates) and written atomically: a failed write leaves
the old file whole; the theme picked is remembered."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from checks import ALL
from fixes import BY_ID
from strixwizard.checking.engine import Report, run_doctor
from strixwizard.discovery import Discovery
from strixwizard.services.nodes import RunRequest, resolve_run
from strixwizard.tui.export import FORMATS, save_report
from strixwizard.tui.saved import WizardState, load_state, output_dir, save_state, state_path
from tests.support.wizard import make_app, sync


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture(scope="module")
def report() -> Report:
    site, nodes = resolve_run(RunRequest(demo=True))
    return run_doctor(Discovery.of(site, nodes), ALL, BY_ID)


@pytest.fixture
def open_umask() -> Iterator[None]:
    """The most permissive umask: modes must come from the code, not from the umask."""
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)


def test_demo_state_file_and_its_new_folders_are_private(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, open_umask: None) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    path = state_path(None, True)
    assert save_state(path, WizardState(step="links")) is None
    assert mode(path) == 0o600
    assert mode(path.parent) == 0o700 and mode(tmp_path / "xdg") == 0o700
    assert load_state(path).step == "links"


def test_state_beside_the_site_file_is_private_and_the_site_folder_keeps_its_mode(
        tmp_path: Path, open_umask: None) -> None:
    site_dir = tmp_path / "lab"
    site_dir.mkdir(mode=0o755)
    site_dir.chmod(0o755)
    (site_dir / "site.yaml").write_text("site: lab\n")
    path = state_path(site_dir / "site.yaml", False)
    path.write_text("{}")
    path.chmod(0o644)  # a state file written by an older version
    assert save_state(path, WizardState(step="doctor")) is None
    assert mode(path) == 0o600 and mode(site_dir) == 0o755
    assert [p.name for p in site_dir.iterdir() if p.name.endswith(".tmp")] == []


def test_own_state_folder_left_open_is_refused_and_left_as_it_was(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, open_umask: None) -> None:
    """strixwizard changes the mode only of folders it makes: an existing state folder others
    may enter is named with the cure, and nothing is written into it."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    own = tmp_path / "xdg" / "strixwizard"
    own.mkdir(parents=True)
    own.chmod(0o755)
    (tmp_path / "xdg").chmod(0o755)
    problem = save_state(state_path(None, True), WizardState())
    assert problem and "others may enter it (mode 0755)" in problem
    assert f"`chmod 700 {own}`" in problem and "XDG_STATE_HOME" in problem
    assert mode(own) == 0o755 and list(own.iterdir()) == []
    assert mode(tmp_path / "xdg") == 0o755  # XDG_STATE_HOME itself is the user's
    own.chmod(0o700)
    assert save_state(state_path(None, True), WizardState()) is None


def test_failed_state_write_keeps_the_old_file_whole(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "state.json"
    assert save_state(path, WizardState(step="links", visited=["site", "links"])) is None
    before = path.read_bytes()

    def no_disk(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", no_disk)
    problem = save_state(path, WizardState(step="fix"))
    assert problem and "No space left on device" in problem
    assert path.read_bytes() == before and json.loads(before)["step"] == "links"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]


def test_exported_reports_are_private_in_a_new_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, report: Report, open_umask: None) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    directory = output_dir(None, True)
    written = save_report(report, directory, {"source": "demo"})
    assert sorted(written) == sorted(FORMATS)
    assert {fmt: mode(path) for fmt, path in written.items()} == {fmt: 0o600 for fmt in FORMATS}
    assert mode(directory) == 0o700 and mode(directory.parent) == 0o700
    assert json.loads(written["json"].read_text())["site"] == report.site


def test_exported_reports_replace_open_files_with_private_ones(
        tmp_path: Path, report: Report, open_umask: None) -> None:
    site_dir = tmp_path / "lab"
    site_dir.mkdir()
    site_dir.chmod(0o755)
    first = save_report(report, site_dir)
    for path in first.values():
        path.chmod(0o644)
    again = save_report(report, site_dir)
    assert again == first
    assert all(mode(path) == 0o600 for path in again.values())
    assert mode(site_dir) == 0o755
    assert sorted(p.name for p in site_dir.iterdir()) == sorted(p.name for p in first.values())


def test_failed_report_write_raises_with_the_reason(tmp_path: Path, report: Report) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("")
    with pytest.raises(OSError):
        save_report(report, blocked / "out")


@pytest.fixture
def state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """XDG_STATE_HOME in the test's own folder (where the wizard keeps its preferences)."""
    home = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(home))
    return home


@sync
async def test_the_theme_is_remembered_privately(state_home: Path) -> None:
    app = make_app(demo=True)
    async with app.run_test(size=(80, 24)) as pilot:
        assert app.theme == "textual-dark"
        await pilot.press("ctrl+t")
        await pilot.pause()
        assert app.theme == "textual-light"
    saved = state_home / "strixwizard" / "wizard-preferences.json"
    assert saved.stat().st_mode & 0o777 == 0o600
    again = make_app(demo=True)
    async with again.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert again.theme == "textual-light"


@pytest.mark.parametrize("text", [
    '{"format": "strixwizard-wizard-state/1", "step": ' + "[" * 100_000 + "]" * 100_000 + "}",
    '{"format": "strixwizard-wizard-state/1", "step": "links", "saved_at": NaN}',
    "x" * (2 << 20),
    "[1, 2]",
])
def test_a_hostile_progress_file_is_a_fresh_start_and_stays_on_disk(tmp_path: Path, text: str) -> None:
    """Nested 100,000 deep it once raised RecursionError at every start of the wizard."""
    path = tmp_path / ".strixwizard-state.json"
    path.write_text(text, encoding="utf-8")
    assert load_state(path) == WizardState()
    assert path.read_text(encoding="utf-8") == text

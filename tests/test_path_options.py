"""Paths the operator names: every path option, handed a twin of /dev/null, a FIFO, a symbolic
link and a shared 1777 folder (made by the test in its own folder), leaves each as it was —
mode, sticky bit, owner, the link's target — and refuses with exit 2 and the cure where it
cannot use it. strixwizard changes the mode only of folders it makes (0700) and of its own
files (0600); an existing folder for journals, dry runs or state must already be private
and the user's. (`test … --history /dev/null` as root chmodded the device to 0600; a 1777
`--journal-dir` became 0700 and lost its sticky bit; `capture --out .` was a traceback.)"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from strixwizard.files import FolderRefused, check_private_dir, private_dir
from tests.support.cli import CliResult, invoke
from tests.support.twins import SHARED, make_twins, modes

SITE_TEXT = "site: lab\nnodes:\n  - name: n1\n    host: local\n"


def _state(tmp_path: Path) -> dict[str, str]:
    return {"XDG_STATE_HOME": str(tmp_path / "state")}


def _refused(done: CliResult, *said: str) -> None:
    assert done.rc == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr
    for words in said:
        assert words in done.stderr, done.stderr


def test_history_option_refuses_what_is_not_a_regular_file(tmp_path: Path) -> None:
    twins = make_twins(tmp_path / "twins")
    before = modes(twins)
    for kind, path in twins.items():
        done = invoke("test", "latency", "--demo", "--level", "quick", "--history", str(path),
                      env=_state(tmp_path))
        _refused(done, f"--history {path}: is a", "nothing was changed")
        for reader in (("history", "--history", str(path)),
                       ("advise", "--model", "Llama-3.1-8B", "--history", str(path))):
            assert invoke(*reader, env=_state(tmp_path)).rc == 2, (kind, reader)
    assert modes(twins) == before
    assert not any((tmp_path / "twins" / "shared").iterdir())


def test_prometheus_option_refuses_what_a_rename_would_replace(tmp_path: Path) -> None:
    twins = make_twins(tmp_path / "twins", suffix=".prom")
    before = modes(twins)
    for path in twins.values():
        for command in (("doctor", "--demo"), ("test", "latency", "--demo", "--level", "quick")):
            done = invoke(*command, "--prometheus", str(path), env=_state(tmp_path))
            _refused(done, f"--prometheus {path}: is a", "nothing was changed")
    assert modes(twins) == before


@pytest.mark.parametrize(("command", "flag"), [
    (("fix", "--demo", "--apply", "--yes"), "--journal-dir"),
    (("fix", "--demo", "--apply", "--yes"), "--dry-run-dir"),
    (("deploy", "--demo", "--apply", "--yes"), "--journal-dir")])
def test_journal_and_dry_run_folders_are_refused_not_changed(
        tmp_path: Path, command: tuple[str, ...], flag: str) -> None:
    twins = make_twins(tmp_path / "twins")
    before = modes(twins)
    for kind, path in twins.items():
        done = invoke(*command, flag, str(path), env=_state(tmp_path))
        if kind == "shared":
            _refused(done, f"{flag} {path}: others may enter it (mode 1777)",
                     f"`chmod 700 {path}`", f"or name another folder with {flag}")
        else:
            _refused(done, f"{flag} {path}: cannot write there", "is not a folder")
    assert modes(twins) == before
    assert not any(twins["shared"].iterdir())


def test_a_shared_state_folder_is_refused_not_changed(tmp_path: Path) -> None:
    """The state folder (XDG_STATE_HOME/strixwizard) holds journals, the history, locks."""
    own = tmp_path / "state" / "strixwizard"
    own.mkdir(parents=True)
    os.chmod(own, SHARED)
    for command in (("fix", "--demo", "--apply", "--yes"), ("deploy", "--demo", "--apply", "--yes"),
                    ("test", "latency", "--demo", "--level", "quick")):
        _refused(invoke(*command, env=_state(tmp_path)), f"{own}: others may enter it (mode 1777)",
                 "XDG_STATE_HOME")
    assert stat.S_IMODE(os.lstat(own).st_mode) == SHARED and not any(own.iterdir())
    assert invoke("fix", "--demo", env=_state(tmp_path)).rc == 0  # a plan writes nothing


def test_a_private_folder_of_ones_own_is_used_as_it_is(tmp_path: Path) -> None:
    journals = tmp_path / "journals"
    journals.mkdir(mode=0o700)
    os.chmod(journals, 0o700)
    done = invoke("fix", "--demo", "--apply", "--yes", "--journal-dir", str(journals),
                  env=_state(tmp_path))
    assert done.rc == 0, done.stderr
    assert stat.S_IMODE(os.stat(journals).st_mode) == 0o700
    runs = list(journals.iterdir())
    assert runs and all(stat.S_IMODE(os.stat(run).st_mode) == 0o700 for run in runs)


def test_out_options_leave_twins_as_they_were(tmp_path: Path) -> None:
    twins = make_twins(tmp_path / "twins")
    before = modes(twins)
    for kind, path in twins.items():
        _refused(invoke("init", "--out", str(path), "--node", "a=local", env=_state(tmp_path)),
                 "already exists")
        if kind != "shared":
            _refused(invoke("capture", "--out", str(path), env=_state(tmp_path)), "already exists")
    done = invoke("capture", "--out", str(twins["shared"]), env=_state(tmp_path))
    assert done.rc == 0, done.stderr  # an empty folder is filled, its mode kept
    assert modes(twins) == before and (twins["shared"] / "meta.json").is_file()


def test_scrubbed_capture_fills_a_shared_folder_and_keeps_it(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """`capture --scrub` moved its private folder over an empty `--out`: the operator's folder
    (`.` too, the shell's own) was replaced by a new one, 0700 and without its sticky bit."""
    twins = make_twins(tmp_path / "twins")
    before, inode = modes(twins), os.stat(twins["shared"]).st_ino
    done = invoke("capture", "--out", str(twins["shared"]), "--scrub", env=_state(tmp_path))
    assert done.rc == 0, done.stderr
    assert modes(twins) == before and os.stat(twins["shared"]).st_ino == inode
    assert (twins["shared"] / "meta.json").is_file()
    here = tmp_path / "here"
    here.mkdir(mode=0o755)
    inode = os.stat(here).st_ino
    monkeypatch.chdir(here)
    done = invoke("capture", "--out", ".", "--scrub", env=_state(tmp_path))
    assert done.rc == 0, done.stderr
    assert os.stat(here).st_ino == inode and stat.S_IMODE(os.stat(here).st_mode) == 0o755
    assert (here / "meta.json").is_file() and (tmp_path / "here.scrub-map.json").is_file()


def test_timer_unit_dir_keeps_its_mode(tmp_path: Path) -> None:
    twins = make_twins(tmp_path / "twins")
    site = tmp_path / "site.yaml"
    site.write_text(SITE_TEXT)
    before = modes(twins)
    done = invoke("init", "--timer", "--site", str(site), "--unit-dir", str(twins["shared"]),
                  "--prometheus", str(tmp_path / "x.prom"), env=_state(tmp_path))
    assert done.rc == 0, done.stderr
    assert modes(twins) == before


def test_capture_out_dot_is_the_current_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    here = tmp_path / "bundle"
    here.mkdir()
    monkeypatch.chdir(here)
    done = invoke("capture", "--out", ".", "--tar", "--scrub", env=_state(tmp_path))
    assert done.rc == 0, done.stderr
    assert (tmp_path / "bundle.tar.gz").is_file() and (tmp_path / "bundle.scrub-map.json").is_file()
    assert f"snapshot written to {tmp_path / 'bundle.tar.gz'}" in done.stdout


def test_private_dir_makes_missing_folders_private_and_judges_existing_ones(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        made = private_dir(tmp_path / "a" / "b" / "c")
    finally:
        os.umask(old)
    assert [stat.S_IMODE(os.stat(p).st_mode) for p in (made.parent.parent, made.parent, made)] \
        == [0o700] * 3
    assert private_dir(made) == made
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, SHARED)
    with pytest.raises(FolderRefused, match="mode 1777"):
        private_dir(shared, "or name another one")
    assert stat.S_IMODE(os.stat(shared).st_mode) == SHARED
    assert private_dir(shared / "inside") == shared / "inside"  # made here: 0700, parent kept
    assert stat.S_IMODE(os.stat(shared).st_mode) == SHARED
    if os.geteuid() == 0:  # a folder of another user, private to them
        theirs = tmp_path / "theirs"
        theirs.mkdir(mode=0o700)
        os.chown(theirs, 65534, 65534)
        with pytest.raises(FolderRefused, match="belongs to user 65534"):
            check_private_dir(theirs, "or name another one")

"""`strixwizard init --timer`: a service and timer pair that runs `doctor --site S --prometheus
FILE` every few minutes; read back, its command is exactly the argv (spaces, quotes, `%`, `$`
in the paths), and `systemd-analyze verify` accepts both units without a word."""

from __future__ import annotations

import configparser
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from strixwizard.cli.timer import DEFAULT_TEXTFILE, doctor_argv, timer_units
from strixwizard.errors import UsageError
from tests.support.cli import invoke
from tests.support.systemd_units import command_argv

SITE_TEXT = "site: lab\nnodes:\n  - name: n1\n    host: local\n"


def _unit(text: str) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None, strict=True, comment_prefixes=("#",))
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string(text)
    return parser


@pytest.fixture
def odd_paths(tmp_path: Path) -> tuple[Path, Path, str]:
    folder = tmp_path / "my site's 100% $HOME dir"
    folder.mkdir()
    site = folder / "site.yaml"
    site.write_text(SITE_TEXT)
    textfile = tmp_path / "text files %n" / "strixwizard.prom"
    python = tmp_path / "py 100%" / "python3"
    python.parent.mkdir()
    python.symlink_to(sys.executable)
    return site, textfile, str(python)


def test_units_read_back_to_the_same_command(odd_paths: tuple[Path, Path, str]) -> None:
    site, textfile, python = odd_paths
    units = timer_units("lab", site, textfile, minutes=3, python=python)
    assert (units.service_name, units.timer_name) == ("strixwizard-doctor-lab.service",
                                                      "strixwizard-doctor-lab.timer")
    service, timer = _unit(units.service), _unit(units.timer)
    assert command_argv(service["Service"]["ExecStart"]) == doctor_argv(site, textfile, python) == [
        python, "-m", "strixwizard", "doctor", "--site", str(site), "--prometheus", str(textfile)]
    assert service["Service"]["Type"] == "oneshot" and service["Service"]["SuccessExitStatus"] == "1"
    assert timer["Timer"]["OnUnitActiveSec"] == "3min" and timer["Timer"]["Unit"] == units.service_name
    assert timer["Install"]["WantedBy"] == "timers.target"


def test_systemd_analyze_verify_accepts_both(tmp_path: Path, odd_paths: tuple[Path, Path, str]) -> None:
    site, textfile, python = odd_paths
    units = timer_units("lab", site, textfile, python=python)
    folder = tmp_path / "units"
    folder.mkdir()
    for name, text in units.files().items():
        (folder / name).write_text(text)
    analyze = shutil.which("systemd-analyze")
    assert analyze, "systemd-analyze not found: Debian's systemd package provides it"
    done = subprocess.run([analyze, "verify", "--man=no", *(str(folder / n) for n in units.files())],
                          capture_output=True, text=True, timeout=60, check=False, cwd=folder)
    assert done.returncode == 0 and not (done.stdout + done.stderr).strip(), done.stderr


def test_paths_a_unit_cannot_carry_are_refused(tmp_path: Path) -> None:
    site = tmp_path / "site.yaml"
    odd = tmp_path / "a\\x2db.yaml"  # a backslash is escaped, never read as `\x2d` = `-`
    assert command_argv(timer_units("lab", odd, DEFAULT_TEXTFILE).service.split("ExecStart=")[1]
                        .splitlines()[0])[5] == str(odd)
    with pytest.raises(UsageError, match="control"):
        timer_units("lab", tmp_path / "a\nExecStartPre=/bin/false", DEFAULT_TEXTFILE)
    with pytest.raises(UsageError, match="backslash, a quote or `\\$`"):
        timer_units("lab", site, DEFAULT_TEXTFILE, python="/opt/it's/python3")
    with pytest.raises(UsageError, match="absolute"):
        timer_units("lab", Path("site.yaml"), DEFAULT_TEXTFILE)
    with pytest.raises(UsageError, match="1440"):
        timer_units("lab", site, DEFAULT_TEXTFILE, minutes=0)


def test_init_timer_writes_the_pair_once(tmp_path: Path) -> None:
    site = tmp_path / "site.yaml"
    site.write_text(SITE_TEXT)
    units = tmp_path / "units"
    units.mkdir()
    argv = ("init", "--timer", "--site", str(site), "--unit-dir", str(units), "--every", "10",
            "--prometheus", str(tmp_path / "x.prom"))
    first = invoke(*argv)
    assert first.rc == 0, first.stderr
    assert "systemctl enable --now strixwizard-doctor-lab.timer" in first.stdout
    names = sorted(p.name for p in units.iterdir())
    assert names == ["strixwizard-doctor-lab.service", "strixwizard-doctor-lab.timer"]
    assert all(os.stat(units / n).st_mode & 0o777 == 0o644 for n in names)
    service = _unit((units / names[0]).read_text())
    assert command_argv(service["Service"]["ExecStart"])[-4:] == ["--site", str(site), "--prometheus",
                                                                  str(tmp_path / "x.prom")]
    assert invoke(*argv).rc == 0  # the same units again: nothing to refuse
    other = invoke(*argv[:-4], "--every", "15")
    assert other.rc == 2 and "already exists with other content" in other.stderr
    assert invoke("init", "--timer", "--unit-dir", str(units)).rc == 2  # which site?
    alone = invoke("init", "--site", str(site), "--out", str(tmp_path / "new.yaml"))
    assert alone.rc == 2 and "go with --timer" in alone.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text("site: [\n")
    assert invoke("init", "--timer", "--site", str(bad), "--unit-dir", str(units)).rc == 2

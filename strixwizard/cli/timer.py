"""`strixwizard init --timer`: a systemd service and timer that run `doctor` for a site every
few minutes and leave its verdicts in node_exporter's textfile folder.

Every value is written by `strixwizard.units`, the rule all of strixwizard's units share, so
a site path with spaces, quotes, backslashes, `%` or `$` reaches `doctor` unchanged; what a
unit cannot carry (a control character, a quote in the interpreter's path) is refused. Exit
status 1 (a check failed) is a verdict, carried by the metrics, not a failure of the service;
2 (no verdict) fails the unit.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from fixes.steps import unit_name
from strixwizard.errors import UsageError
from strixwizard.facts.persistence import UNIT_DIR
from strixwizard.units import command_line, label

DEFAULT_TEXTFILE = Path("/var/lib/node_exporter/textfile_collector/strixwizard.prom")
DEFAULT_MINUTES = 5
SYSTEM_UNITS = Path(UNIT_DIR)


@dataclass(frozen=True)
class TimerUnits:
    service_name: str
    service: str
    timer_name: str
    timer: str

    def files(self) -> dict[str, str]:
        return {self.service_name: self.service, self.timer_name: self.timer}


def doctor_argv(site_file: Path, textfile: Path, python: str | None = None) -> list[str]:
    """The command the service runs: this interpreter (its virtualenv), absolute paths."""
    return [python or sys.executable, "-m", "strixwizard", "doctor", "--site", str(site_file),
            "--prometheus", str(textfile)]


def timer_units(site_name: str, site_file: Path, textfile: Path = DEFAULT_TEXTFILE,
                minutes: int = DEFAULT_MINUTES, python: str | None = None) -> TimerUnits:
    if not 1 <= minutes <= 24 * 60:
        raise UsageError(f"--every {minutes}: between 1 and 1440 minutes")
    if not site_file.is_absolute() or not textfile.is_absolute():
        raise UsageError("the timer's site file and textfile need absolute paths")
    exec_start = command_line(doctor_argv(site_file, textfile, python), "the Python interpreter")
    service_name = unit_name("doctor", site_name)
    timer_name = service_name.removesuffix(".service") + ".timer"
    service = "\n".join([
        f"# Written by `strixwizard init --timer`: doctor for site {label(site_name)} every "
        f"{minutes} min; its verdicts go to {label(str(textfile))}.",
        "[Unit]",
        f"Description=strixwizard doctor for site {label(site_name)}",
        "Wants=network-online.target",
        "After=network-online.target",
        "",
        "[Service]",
        "Type=oneshot",
        f"ExecStart={exec_start}",
        "# 1: a check failed, which the metrics say; 2 (no verdict) fails the unit",
        "SuccessExitStatus=1",
        f"TimeoutStartSec={max(60, min(minutes * 60, 600))}",
        "Nice=10",
        "",
    ])
    timer = "\n".join([
        f"# Written by `strixwizard init --timer`: starts {service_name} every {minutes} min.",
        "[Unit]",
        f"Description=strixwizard doctor for site {label(site_name)} every {minutes} min",
        "",
        "[Timer]",
        "OnBootSec=2min",
        f"OnUnitActiveSec={minutes}min",
        "AccuracySec=30s",
        f"Unit={service_name}",
        "",
        "[Install]",
        "WantedBy=timers.target",
        "",
    ])
    return TimerUnits(service_name, service, timer_name, timer)


def write_units(units: TimerUnits, directory: Path) -> list[Path]:
    """Write both files into `directory`; an existing file with other content is refused."""
    if not directory.is_dir():
        raise UsageError(f"--unit-dir {directory}: no such folder")
    paths = []
    for name, text in units.files().items():
        path = directory / name
        if path.exists() and path.read_text(encoding="utf-8", errors="replace") != text:
            raise UsageError(f"{path}: already exists with other content; remove it first")
        paths.append(path)
    for path, text in zip(paths, units.files().values(), strict=True):
        path.write_text(text, encoding="utf-8")
        path.chmod(0o644)
    return paths


def run_init_timer(args: argparse.Namespace) -> int:
    """`init --timer --site FILE`: write the pair, say how to start it."""
    from strixwizard.site import load_site

    if args.site is None:
        raise UsageError("--timer needs the site to check: --site FILE")
    site_file = args.site.expanduser().resolve()
    site = load_site(site_file)
    textfile = (args.prometheus or DEFAULT_TEXTFILE).expanduser()
    if textfile.suffix != ".prom":
        raise UsageError(f"--prometheus {textfile}: the name must end in .prom")
    units = timer_units(site.name, site_file, textfile.resolve(), args.every)
    directory = (args.unit_dir or Path.cwd()).expanduser()
    written = write_units(units, directory)
    for path in written:
        print(f"written: {path}")
    install = "" if directory.resolve() == SYSTEM_UNITS else (
        f"sudo cp {' '.join(shlex.quote(str(p)) for p in written)} {SYSTEM_UNITS}/ && ")
    print(f"start it: {install}sudo systemctl daemon-reload && sudo systemctl enable --now "
          f"{units.timer_name}")
    print(f"node_exporter reads {textfile.parent} with --collector.textfile.directory={textfile.parent}")
    return 0

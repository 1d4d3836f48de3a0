"""The one rule for values in units (`strixwizard.units`), read by a running systemd: PID 1 of
the VM lab's systemd pair starts a oneshot unit written by the fix engine's writer, whose
program path holds a space and `%` and whose arguments hold what systemd would otherwise read
differently (C escapes, quotes, specifiers, variables, a lone `;`, a trailing backslash), and
the program records the argv it was given: exactly the planned one. Here systemd's own
reading of every argument is the judge, where tests/test_systemd_units.py has
`systemd-analyze verify` and a reading written from the manuals. Everything lives under /run
(a tmpfs: the VMs' persistent disks keep nothing of it) and is removed afterwards."""

from __future__ import annotations

import base64
import shlex
import subprocess

from fixes.steps import unit_text
from tests.support.systemd_units import ODD_ARGS
from tests.support.vmlab import VmLab

UNIT = "strixwizard-argv-probe.service"
UNIT_PATH = f"/run/systemd/system/{UNIT}"
FOLDER = "/run/strixwizard odd 100% dir"
PROGRAM = f"{FOLDER}/sh"
OUT = "/run/strixwizard-argv-probe.out"
#: prints each argument after the script's own `$0` (the output file) on a line of its own
RECORD = 'printf "%s\\n" "$@" > "$0"'


def test_a_running_systemd_runs_exactly_the_argv_the_unit_was_written_for(
        systemd_vms: VmLab) -> None:
    lab = systemd_vms
    vm = lab.vms[0]
    argv = [PROGRAM, "-c", RECORD, OUT, *ODD_ARGS]
    text = unit_text("probe", "argv probe, ends in a backslash\\", [argv], None,
                     before_network=False)
    setup = (f"mkdir -p {shlex.quote(FOLDER)} && ln -sf /bin/sh {shlex.quote(PROGRAM)} && "
             f"cat > {UNIT_PATH} && systemctl daemon-reload && systemctl start {UNIT} && "
             f"base64 -w0 {OUT}")
    cleanup = (f"systemctl stop {UNIT}; rm -f {UNIT_PATH} {OUT}; rm -rf {shlex.quote(FOLDER)}; "
               "systemctl daemon-reload")
    try:
        done = subprocess.run(lab.ssh_argv(vm, setup), input=text, capture_output=True,
                              text=True, timeout=120, check=False)
        assert done.returncode == 0, (done.stderr, text)
        recorded = base64.b64decode(done.stdout.strip()).decode("utf-8")
        assert recorded.split("\n")[:-1] == ODD_ARGS, text
        shown = lab.run(vm, f"systemctl show -p Description --value {UNIT}", timeout=60)
        assert shown.stdout.strip() == "strixwizard: argv probe, ends in a backslash\\x5c"
    finally:
        lab.run(vm, cleanup, timeout=120)

"""`deploy --stack llama-rpc --persist`: a systemd unit per program (ggml-rpc-server on each
worker, llama-server on the head) instead of a process started for this boot only. Pure.

Per program, three steps, undone in reverse by the rollback:
- FILE `UNIT_DIR/strixwizard-llama-rpc.service` (or `-llama-server`): a `Type=simple`
  service whose `ExecStart=` is the same argv the runtime launcher would start, with the same
  RDMA variables (`Environment=`), writing the same log file the smoke test reads
  (`StandardOutput=truncate:`, systemd 248+: emptied at every start, as the runtime launcher's
  `>LOG` does, so after a reboot or a restart the smoke test judges what the running program
  says, never an earlier boot's `RDMA activated`; the run directory is made by
  `ExecStartPre=`, so the log stays after a rollback as it does without --persist); every
  value is written by `strixwizard.units`, so systemd reads back exactly the planned argv
  (a value it cannot carry is refused: `UnitValueError`, exit 2);
- COMMAND `systemctl daemon-reload && systemctl enable --now UNIT`, state read by
  `systemctl is-active`; undo `systemctl disable --now UNIT` (stops it, removes it from boot);
- the rollback then removes the unit file: exactly the units this deploy wrote, nothing else;
- and last, `systemctl daemon-reload`, so systemd forgets the removed unit (without it
  `systemctl status` keeps a stale, loaded unit whose file is gone). That undo belongs to a
  first step that leaves a stamp (`RUN_DIR/.UNIT.reload`, on disk so it is still there
  for a rollback after a reboot): the rollback undoes steps in reverse, so the stamp's undo
  (reload, then remove the stamp) runs after the unit file is gone.

A unit names one program: the RPC server under the name the node's llama.cpp survey found
(`ggml-rpc-server`, or an older build's `rpc-server`; the newest name when the survey found
none), llama-server as is; systemd resolves a bare name on its fixed search path, and with
`--llama-bin-dir` the unit names the absolute path (llama.py: `rpc_names`, `unit_program`).
`--no-mmap` is passed as is (the runtime launcher's adaptation to `-lm none` needs the build's
--help at start time).
"""

from __future__ import annotations

from collections.abc import Sequence

from strixwizard.fixing.model import Kind, Read, Step

UNIT_DIR = "/etc/systemd/system"
RPC_UNIT = "strixwizard-llama-rpc.service"
SERVER_UNIT = "strixwizard-llama-server.service"
#: `running` while systemd has the unit active, else `stopped` (the read always exits 0).
IS_ACTIVE = 'if systemctl is-active --quiet "$0"; then echo running; else echo stopped; fi'
#: why `Restart=always`: `ggml_backend_rpc_start_server` returns after "Failed to create server
#: socket" and rpc-server's main() then returns 0 — a clean exit that `Restart=on-failure`
#: does not retry (systemd.service(5), Restart=). A worker whose fabric address comes up after
#: network-online.target (a network manager that does not wait for that link, a USB4 link
#: that appears late) would stay down for the whole boot.
RESTART_WHY = (
    "https://github.com/ggml-org/llama.cpp/blob/master/ggml/src/ggml-rpc/ggml-rpc.cpp",
    "https://github.com/ggml-org/llama.cpp/blob/master/tools/rpc/rpc-server.cpp",
    "https://www.freedesktop.org/software/systemd/man/latest/systemd.service.html#Restart=",
)
ENABLE_NOW = 'systemctl daemon-reload && exec systemctl enable --now "$0"'


def unit_path(unit_dir: str, unit: str) -> str:
    return f"{unit_dir.rstrip('/')}/{unit}"


def unit_text(description: str, binary: str, args: Sequence[str], environment: Sequence[str],
              log: str, run_dir: str) -> str:
    """A long-running service for one llama.cpp program; every value written by
    `strixwizard.units` (a value systemd cannot read back as it is raises `UnitValueError`)."""
    from strixwizard.units import command_line, label, path_value
    from strixwizard.units import environment as environment_value

    lines = [
        "# Written by `strixwizard deploy --stack llama-rpc --persist`; "
        "`strixwizard deploy --rollback` removes it.",
        "[Unit]",
        f"Description=strixwizard: {label(description)}",
        "After=network-online.target",
        "Wants=network-online.target",
        "",
        "[Service]",
        "Type=simple",
    ]
    if environment:
        lines.append(f"Environment={environment_value(environment)}")
    lines += [
        f"ExecStartPre={command_line(['/bin/mkdir', '-p', '--', run_dir])}",
        f"ExecStart={command_line([binary, *args], '--llama-bin-dir program')}",
        f"StandardOutput=truncate:{path_value(log, '--llama-run-dir log')}",
        "StandardError=inherit",
        "LimitMEMLOCK=infinity",
        # always, not on-failure: ggml-rpc-server exits 0 after "Failed to create server socket"
        # (its fabric address not there yet; RESTART_WHY), which on-failure never retries
        "Restart=always",
        "RestartSec=5",
        "",
        "[Install]",
        "WantedBy=multi-user.target",
        "",
    ]
    return "\n".join(lines)


#: `armed` while the stamp exists; argv: the stamp's path.
STAMPED = 'if [ -e "$0" ]; then echo armed; else echo unarmed; fi'
ARM = 'mkdir -p -- "$(dirname -- "$0")" && : > "$0"'
RELOAD = 'systemctl daemon-reload && rm -f -- "$0"'


def reload_stamp(run_dir: str, unit: str) -> str:
    return f"{run_dir.rstrip('/')}/.{unit}.reload"


def unit_steps(unit_dir: str, unit: str, summary: str, text: str, run_dir: str
               ) -> tuple[Step, Step, Step]:
    """Leave the reload stamp, write the unit file, then enable and start it; undone by
    disabling it, removing the file, then `systemctl daemon-reload` (the rollback undoes steps
    in reverse)."""
    from strixwizard.deploy.base import file_step

    path = unit_path(unit_dir, unit)
    stamp = reload_stamp(run_dir, unit)
    return (Step(kind=Kind.COMMAND, target=stamp,
                 summary=f"note that systemd must reload its units when {unit} is rolled back",
                 read=Read("command", argv=("sh", "-c", STAMPED, stamp), parse="text"),
                 before="unarmed", after="armed", argv=("sh", "-c", ARM, stamp),
                 undo_argv=("sh", "-c", RELOAD, stamp), before_known=False),
            file_step(path, f"write systemd unit {unit}", text),
            Step(kind=Kind.COMMAND, target=unit, summary=f"enable and start {unit}: {summary}",
                 read=Read("command", argv=("sh", "-c", IS_ACTIVE, unit), parse="text"),
                 before="stopped", after="running", argv=("sh", "-c", ENABLE_NOW, unit),
                 undo_argv=("systemctl", "disable", "--now", unit), before_known=False,
                 persistence="systemd"))

#!/usr/bin/env python3
"""Bring the multi-host test lab up or down by hand (root only).

    python scripts/lab.py up 4 --dir /tmp/lab            # foreground; Ctrl-C tears down
    python scripts/lab.py up 4 --dir /tmp/lab --detach   # leave it up, state in /tmp/lab/lab.json
    python scripts/lab.py down --dir /tmp/lab            # tear down from /tmp/lab/lab.json
    python scripts/lab.py sweep [--all]                  # tear down labs whose owner died
    python scripts/lab.py up --rdma-vms 2 --dir /tmp/vmlab [--lifetime 1800]
                                   # soft-RoCE VMs (tests/support/vmlab.py); foreground, bounded lifetime

Both ways write DIR/lab.json, so ``down`` also cleans up after a foreground run
that was killed.  See tests/support/lab.py for what the lab is.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path
from types import FrameType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.lab import Lab, LabError, require_lab_tools, sweep_stale_labs
from tests.support.vmlab import VmLab, VmLabError

STATE_FILE = "lab.json"
SITE_FILE = "site.yaml"


def _describe(lab: Lab, site: Path) -> str:
    rows = [f"{'name':8} {'netns':20} {'mgmt':14} {'fabric':14} {'peer':8} sshd"]
    for h in lab.hosts:
        rows.append(
            f"{h.name:8} {h.netns:20} {h.mgmt_addr:14} {h.fabric_addr or '-':14} "
            f"{h.fabric_peer or '-':8} {h.sshd_pid}"
        )
    first = lab.hosts[0]
    rows += [
        "",
        f"site file:  {site}",
        f"ssh:        ssh -F {lab.ssh_config} {first.name}",
        f"   or:      {' '.join(lab.ssh_argv(first))}",
        f"in the ns:  ip netns exec {first.netns} bash",
    ]
    return "\n".join(rows)


class _Stop(Exception):
    pass


def _raise_stop(signum: int, frame: FrameType | None) -> None:
    raise _Stop


def _describe_vms(lab: VmLab, site: Path) -> str:
    rows = [f"{'name':6} {'ssh':16} {'fabric':14} {'peer':6} {'boot':>6} pid"]
    for vm in lab.vms:
        boot = f"{vm.boot_seconds:.1f}s" if vm.boot_seconds is not None else "-"
        rows.append(
            f"{vm.name:6} {'127.0.0.1:' + str(vm.ssh_port):16} {vm.fabric_addr or '-':14} "
            f"{vm.fabric_peer or '-':6} {boot:>6} {vm.pid}"
        )
    kernel = lab.kernel.provenance if lab.kernel else "-"
    rows += [
        "",
        f"kernel:     {kernel}",
        f"site file:  {site}",
        f"ssh:        {' '.join(lab.ssh_argv(lab.vms[0]))}",
    ]
    return "\n".join(rows)


def cmd_up_vms(args: argparse.Namespace) -> int:
    """Boot soft-RoCE VMs, print the site file, keep them up for at most --lifetime seconds."""
    workdir: Path = args.dir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    lab = VmLab(workdir, args.rdma_vms)
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _raise_stop)
    try:
        started = time.monotonic()
        lab.up()
        site = lab.write_site_yaml(workdir / SITE_FILE)
        print(f"VMs up in {time.monotonic() - started:.1f}s\n{_describe_vms(lab, site)}", flush=True)
        print(f"\nCtrl-C to tear down (or after {args.lifetime:g} s)", flush=True)
        time.sleep(args.lifetime)
    except _Stop:
        print("\ntearing down", file=sys.stderr)
    finally:
        lab.down()
    return 0


def cmd_up(args: argparse.Namespace) -> int:
    if args.rdma_vms:
        return cmd_up_vms(args)
    if args.n is None:
        print("up: give the number of hosts, or --rdma-vms N", file=sys.stderr)
        return 2
    workdir: Path = args.dir.resolve()
    state = workdir / STATE_FILE
    if state.exists():
        print(f"{state} exists: run 'down --dir {args.dir}' first", file=sys.stderr)
        return 2
    require_lab_tools()
    for prefix in sweep_stale_labs():
        print(f"swept stale lab {prefix}*", file=sys.stderr)
    workdir.mkdir(parents=True, exist_ok=True)
    lab = Lab(workdir, args.n, prefix=args.prefix)
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):  # SIGINT: may be ignored if backgrounded
        signal.signal(signum, _raise_stop)
    try:
        started = time.monotonic()
        lab.up()
        site = lab.write_site_yaml(workdir / SITE_FILE)
        if args.detach:
            lab.detach()
        lab.save_state(state)
        print(f"lab up in {time.monotonic() - started:.2f}s\n{_describe(lab, site)}", flush=True)
        if args.detach:
            print(f"\nleft running; tear down with: {sys.argv[0]} down --dir {args.dir}")
            return 0
        print("\nCtrl-C to tear down", flush=True)
        while True:
            time.sleep(3600)
    except _Stop:
        print("\ntearing down", file=sys.stderr)
    finally:
        if lab.owner_pid is not None:  # not detached
            lab.down()
            state.unlink(missing_ok=True)
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    state = args.dir.resolve() / STATE_FILE
    if not state.exists():
        print(f"no lab recorded in {state}; nothing to do")
        return 0
    lab = Lab.from_state(state)
    lab.down()
    state.unlink()
    print(f"lab {lab.prefix}* torn down")
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    swept = sweep_stale_labs(include_detached=args.all)
    for prefix in swept:
        print(f"swept {prefix}*")
    if not swept:
        print("no stale lab")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="create N hosts")
    up.add_argument("n", type=int, nargs="?", help="number of hosts")
    up.add_argument("--dir", type=Path, required=True, help="work directory (keys, configs, lab.json)")
    up.add_argument("--detach", action="store_true", help="leave the lab up and exit")
    up.add_argument("--prefix", default="swlab", help="namespace name prefix (default: swlab)")
    up.add_argument(
        "--rdma-vms", type=int, default=0, metavar="N",
        help="instead: N qemu VMs with soft-RoCE (rxe0), see tests/support/vmlab.py",
    )  # fmt: skip
    up.add_argument(
        "--lifetime", type=float, default=1800.0, metavar="SECONDS",
        help="with --rdma-vms: tear the VMs down after this long (default 1800)",
    )  # fmt: skip
    up.set_defaults(func=cmd_up)
    down = sub.add_parser("down", help="tear down the lab recorded in DIR/lab.json")
    down.add_argument("--dir", type=Path, required=True)
    down.set_defaults(func=cmd_down)
    sweep = sub.add_parser("sweep", help="tear down labs left by processes that died")
    sweep.add_argument("--all", action="store_true", help="detached labs too")
    sweep.set_defaults(func=cmd_sweep)
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except (LabError, VmLabError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

"""Command line: `strixwizard doctor`, `strixwizard capture`, and the wizard.

Imports are deferred to the command that needs them so `doctor` starts fast
and never loads Textual or paramiko.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import os
import shlex
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from strixwizard import __version__
from strixwizard.become import BECOME_METHODS
from strixwizard.cli import shell
from strixwizard.cli.options import add_site_options, add_soft_rdma_option, node_printer
from strixwizard.errors import UsageError, os_error_line
from strixwizard.services.common import node_progress
from strixwizard.services.output import EXIT_FAIL, EXIT_NO_VERDICT, EXIT_OK, emit, envelope

if TYPE_CHECKING:
    from strixwizard.present.formats import Format


class CommandLineParser(argparse.ArgumentParser):
    """argparse without prefix matching, for the parser and every command's under it (they are
    made of its class): `--app` must not mean `--apply`, a typo must not choose a change."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)


def _parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser. With `command`, only that command's parser is under it: a
    command line that starts with the command word needs no other (`doctor` builds neither
    the eight others nor imports their modules)."""
    parser = CommandLineParser(
        prog="strixwizard",
        description="Set up and verify an RDMA cluster of AMD Strix Halo nodes.",
        # a command's own options go after it: `--demo` before one would open the wizard
        usage="strixwizard [-h] [--version] [--demo | --site FILE]   (the wizard)\n"
              "       strixwizard COMMAND [options]   (e.g. strixwizard doctor --demo)",
    )
    parser.add_argument("--version", action="version", version=f"strixwizard {__version__}")
    wizard = parser.add_mutually_exclusive_group()
    wizard.add_argument("--demo", dest="wizard_demo", action="store_true",
                        help="open the wizard on the bundled demo site (a command takes its own, "
                        "after it: `strixwizard doctor --demo`)")
    wizard.add_argument("--site", dest="wizard_site", type=Path, metavar="FILE",
                        help="open the wizard on this site file (default: ./site.yaml if present; "
                        "a command takes its own, after it: `strixwizard doctor --site FILE`)")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", prog="strixwizard")
    for name, register in _COMMANDS.items():  # in this order in --help
        if command in (None, name):
            register(commands)
    return parser


def build_parser() -> argparse.ArgumentParser:
    """The whole command line's parser, every command under it (scripts/gen_docs.py writes the
    reference pages from it)."""
    return _parser()


class _FormatChoice(argparse.Action):
    """`--format NAME`; `--format json` is `--json` (a failed run's error is a JSON document)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        from strixwizard.present.formats import JSON

        namespace.format = values
        if values == JSON:
            namespace.json = True


def _add_doctor(commands: Any) -> None:
    doctor = commands.add_parser(
        "doctor",
        help="check nodes and links; exit 0 ok, 1 a failure, 2 no verdict",
        description="Run the checks on every node of a site (this machine by default). "
        "Exit status: 0 no failure, 1 at least one failure (or a warning with --strict), "
        "a check that broke or a node unreachable (unless --allow-unreachable), 2 no verdict "
        "(bad input, nothing reachable, no check judged).",
    )
    add_site_options(doctor, demo_help="run on the bundled demo site")
    doctor.add_argument(
        "--snapshot", type=Path, action="extend", nargs="+", default=[], metavar="PATH",
        help="captured nodes (directories or .tar.gz); a site's bundle (`capture --site`) "
        "replays as that site: `--snapshot bundle/*`",
    )
    doctor.add_argument("--only", action="append", default=[], metavar="ID",
                        help="run only this check or area (repeatable)")
    doctor.add_argument("--skip", action="append", default=[], metavar="ID",
                        help="leave out this check or area (repeatable)")
    from strixwizard.site import STACKS

    doctor.add_argument("--stack", choices=tuple(STACKS), default="",
                        help="judge for this stack: run only the checks it depends on and say "
                        "which were left out (" + "; ".join(f"{name}: {label}" for name, label
                                                            in STACKS.items())
                        + "); as `stack: NAME` in the site file")
    doctor.add_argument("--llama-bin-dir", metavar="DIR",
                        help="look for the llama.cpp programs in DIR first (where `deploy "
                        "--stack llama-rpc --build` installed them with --llama-bin-dir; "
                        "default: the site file's `llama_bin_dir:`), then on root's PATH and "
                        "in the usual folders")
    doctor.add_argument("--list-checks", action="store_true", help="list the checks and exit")
    doctor.add_argument("--strict", action="store_true", help="warnings fail the run too")
    from strixwizard.services.levels import DOCTOR, DOCTOR_LEVELS

    doctor.add_argument("--level", choices=DOCTOR_LEVELS, default="full",
                        help="how much to read, as DCGM's run levels: "
                        + "; ".join(f"{name}: {level.what}" for name, level in DOCTOR.items()))
    from strixwizard.present import formats

    doctor.add_argument("--format", choices=formats.names(), action=_FormatChoice, default=None,
                        help="what to print: " + "; ".join(f"{f.name}: {f.summary}" for f in formats.ALL)
                        + f" (default {formats.ALL[0].name}; --json is --format {formats.JSON})")
    doctor.add_argument("--prometheus", type=Path, metavar="FILE.prom",
                        help="also write the verdicts as a node_exporter textfile (replaced atomically)")
    doctor.add_argument("--allow-unreachable", action="store_true",
                        help="judge the reachable nodes alone: an unreachable node does not make "
                        "the run an error (exit 1)")
    doctor.add_argument("-v", "--verbose", action="store_true",
                        help="the full text: every link, and every check in its block (passing "
                        "ones too); without it one line per area, then the failures")
    add_soft_rdma_option(doctor, "judge links on")


def _add_capture(commands: Any) -> None:
    capture = commands.add_parser(
        "capture",
        help="record nodes as snapshots (support bundle, replayable offline)",
        description="Record what the checks read, in the snapshot format: this machine, or "
        "with --site every node of a site (one .tar.gz per node under --out). "
        "`strixwizard doctor --snapshot PATH` replays a snapshot anywhere.",
    )
    capture.add_argument("--out", type=Path, required=True, metavar="PATH",
                         help="a new directory (or the archive name with --tar)")
    capture.add_argument("--tar", action="store_true", help="write a .tar.gz instead")
    capture.add_argument("--site", type=Path, metavar="FILE", help="capture every node of this site")
    capture.add_argument("--inventory", type=Path, metavar="FILE",
                         help="an Ansible YAML inventory as the node list")
    capture.add_argument("--trust-new-hosts", action="store_true",
                         help="accept and remember SSH host keys not yet in known_hosts")
    capture.add_argument("--scrub", action="store_true",
                         help="a bundle fit to share: hostnames, IP and MAC addresses, serial numbers "
                         "and user names replaced by tokens, the same value by the same token (links "
                         "still pair, verdicts replay the same); the map stays beside it, private")


def _add_init(commands: Any) -> None:
    init = commands.add_parser(
        "init",
        help="write a site file for a new site",
        description="Write a commented site.yaml to edit. Nodes come from --node or --inventory; "
        "with neither, this machine is the only node.",
    )
    init.add_argument("--out", type=Path, default=Path("site.yaml"), metavar="FILE",
                      help="the site file to write (default: ./site.yaml; never overwritten)")
    init.add_argument("--name", default=None, help="the site's name (default: the folder's name)")
    init.add_argument("--node", action="append", default=[], metavar="NAME=[USER@]HOST[:PORT]",
                      help="a node to add (repeatable); HOST `local` is this machine")
    init.add_argument("--key", metavar="PATH", help="SSH private key for the --node entries")
    init.add_argument("--become", choices=BECOME_METHODS, default=None,
                      help="the --node entries log in as a user that is not root: run every "
                      "command there through `sudo -n` (no password prompt; writes `become: "
                      "sudo` for each)")
    init.add_argument("--inventory", type=Path, metavar="FILE",
                      help="take the nodes from an Ansible YAML inventory")
    init.add_argument("--no-probe", action="store_true",
                      help="do not read the nodes: leave fabric_address for you to fill in")
    init.add_argument("--trust-new-hosts", action="store_true",
                      help="accept and remember SSH host keys not yet in known_hosts")

    timer = init.add_argument_group("monitoring (--timer)")
    timer.add_argument("--timer", action="store_true",
                       help="write a systemd service and timer running `doctor --site FILE --prometheus "
                       "FILE.prom` every few minutes, instead of a site file")
    timer.add_argument("--site", type=Path, metavar="FILE", help="the site the timer checks")
    timer.add_argument("--prometheus", type=Path, metavar="FILE.prom",
                       help="the textfile doctor writes (default "
                       "/var/lib/node_exporter/textfile_collector/strixwizard.prom)")
    timer.add_argument("--every", type=int, default=5, metavar="MINUTES", help="how often (default 5)")
    timer.add_argument("--unit-dir", type=Path, metavar="DIR",
                       help="where to write the two units (default: this folder)")


def _add_explain(commands: Any) -> None:
    explain = commands.add_parser(
        "explain", help="what a check or fix is for, how to fix by hand, sources",
        description="The page of a check or a fix: what it checks and reads, why it matters "
        "(with the numbers), how to fix it by hand, what `strixwizard fix` does and how to undo "
        "it, and public sources. Exit status: 0 shown, 2 an unknown id.")
    explain.add_argument("id", nargs="?", metavar="ID", help="a check or fix id (see --list)")
    explain.add_argument("--list", action="store_true", help="list every check and fix id")
    explain.add_argument("--json", action="store_true", help="the page as JSON")


def _add_fix(commands: Any) -> None:
    from strixwizard.cli.fix_args import add_fix_parser  # argparse only

    add_fix_parser(commands)


def _add_deploy(commands: Any) -> None:
    from strixwizard.cli.deploy import register  # argparse only

    register(commands)


def _add_test(commands: Any) -> None:
    from strixwizard.cli.live import register  # argparse only

    register(commands)


def _add_history(commands: Any) -> None:
    from strixwizard.cli.history import register  # argparse only

    register(commands)


def _add_advise(commands: Any) -> None:
    from strixwizard.cli.advise import register  # argparse only

    register(commands)


#: Each command and what adds its parser, in the order `strixwizard --help` lists them.
_COMMANDS: dict[str, Callable[[Any], None]] = {
    "doctor": _add_doctor, "capture": _add_capture, "init": _add_init, "explain": _add_explain,
    "fix": _add_fix, "deploy": _add_deploy, "test": _add_test, "history": _add_history,
    "advise": _add_advise, "help": shell.add_help, "completion": shell.add_completion,
    "man": shell.add_man,
}


def _split_ids(values: Sequence[str], flag: str) -> list[str]:
    """The ids of repeated, comma-separated `--only`/`--skip` values; one naming no id (`''`,
    `,,,`) is a mistake, not "every check"."""
    ids: list[str] = []
    for value in values:
        parts = [part.strip() for part in value.split(",") if part.strip()]
        if not parts:
            raise UsageError(f"{flag} {value!r} names no check (`strixwizard doctor --list-checks` "
                             "lists them)")
        ids.extend(parts)
    return ids


def _error_document(message: str) -> dict[str, object]:
    from strixwizard.model import Status

    return envelope(None, status="error",
                    summary={status.value: 0 for status in Status}, hosts=[], checks=[], links=[],
                    error=message)


def _list_checks(as_json: bool) -> int:
    from checks import ALL

    if as_json:
        from strixwizard.cli.explain import list_fields

        rows = [
            {"id": c.id, "title": c.title, "why": c.why, "severity": c.severity.value,
             "scope": c.scope, "fix": c.fix, **list_fields(c)}
            for c in ALL
        ]
        print(json.dumps(rows, indent=2, allow_nan=False))
        return EXIT_OK
    width = max(len(c.id) for c in ALL)
    for check in ALL:
        print(f"{check.id.ljust(width)}  {check.severity.value.ljust(8)}  {check.title}")
    return EXIT_OK


def cmd_doctor(args: argparse.Namespace) -> int:
    output = _doctor_format(args)
    if args.list_checks:
        return _list_checks(args.json)
    from checks import ALL
    from strixwizard.checking.engine import select_checks
    from strixwizard.services.discover import discover
    from strixwizard.services.levels import DOCTOR
    from strixwizard.services.nodes import RunRequest

    level = DOCTOR[args.level]
    selected = [c for c in select_checks(ALL, _split_ids(args.only, "--only"),
                                         _split_ids(args.skip, "--skip"))
                if c.id not in level.leaves_out]
    spec = None
    if level.outputs:
        from strixwizard.facts.spec import spec_without

        spec = spec_without(level.outputs)
    if args.prometheus is not None:
        from strixwizard.cli.prometheus import check_textfile_path

        check_textfile_path(args.prometheus)
    request = RunRequest(
        site_file=args.site, inventory=args.inventory, snapshots=tuple(args.snapshot),
        demo=args.demo, trust_new_hosts=args.trust_new_hosts,
        allow_soft_rdma=args.allow_soft_rdma, spec=spec, stack=args.stack,
        llama_bin_dir=args.llama_bin_dir,
    )
    on_node = None if args.json or not sys.stderr.isatty() else node_printer()
    if args.verbose:
        from strixwizard.node.log import show_ssh_log

        show_ssh_log()  # paramiko's own warnings and tracebacks too, on stderr
    report = discover(request, on_node, selected, plan=False).report
    report.allow_unreachable = args.allow_unreachable
    code = report.exit_code(strict=args.strict)
    export_failed = None
    if args.prometheus is not None:  # before the verdict is shown: what it says stays true
        from strixwizard.cli.prometheus import export_problem, write_doctor_metrics

        document = report.to_json()
        export_failed = export_problem(args.prometheus, lambda: write_doctor_metrics(
            args.prometheus, document, code))
    from strixwizard.cli.nextstep import same_command, site_options
    from strixwizard.present.formats import DoctorRun

    notes = tuple(note for note in (
        f"level {level.name}: left out {', '.join(level.leaves_out)} (`--level full` runs them)"
        if level.leaves_out else None, report.stack_note) if note is not None)
    output.write(DoctorRun(
        report, code, strict=args.strict, verbose=args.verbose,
        site_options=None if args.snapshot else site_options(args),
        verbose_again=same_command(args.argv, drop=("--verbose",), add=("-v",)), notes=notes,
        extra={"source": _report_source(args)}), sys.stdout)
    if not output.terminal and report.no_verdict is not None:
        print(f"strixwizard: {report.no_verdict}: no verdict", file=sys.stderr)
    if export_failed is not None:
        print(f"strixwizard: error: {export_failed} (exit {EXIT_NO_VERDICT})", file=sys.stderr)
        return EXIT_NO_VERDICT
    return code


def _doctor_format(args: argparse.Namespace) -> Format:
    """The format `--format` (or `--json`) asked for; both naming different ones is refused."""
    from strixwizard.present.formats import ALL, JSON, by_name

    if args.json and args.format not in (None, JSON):
        raise UsageError(f"--json is --format {JSON}: give one of --json and --format {args.format}")
    return by_name(args.format or (JSON if args.json else ALL[0].name))


def _report_source(args: argparse.Namespace) -> str:
    """Where the report's nodes came from, as the wizard's report says it for the same site."""
    from strixwizard.files import display_path
    from strixwizard.present.report import source_line

    if args.demo or args.site:
        return source_line(args.demo, args.site and args.site.expanduser().resolve())
    if args.snapshot:
        return "snapshots: " + ", ".join(display_path(path) for path in args.snapshot)
    if args.inventory:
        return f"inventory {display_path(args.inventory.expanduser().resolve())}"
    return "this machine"


def cmd_explain(args: argparse.Namespace) -> int:
    from strixwizard.cli import explain
    if args.list or args.id is None:
        if args.json:
            emit(envelope(None, **explain.listing()))
        else:
            print(explain.render_listing(explain.listing()), end="")
        return EXIT_OK
    pages = explain.pages(args.id)
    if args.json:
        emit(envelope(None, id=args.id, pages=pages))
    else:
        print("\n".join(explain.render(page) for page in pages), end="")
    return EXIT_OK


def cmd_capture(args: argparse.Namespace) -> int:
    if args.out.expanduser().name in ("", ".", ".."):  # `--out .`: the folder's own name
        args.out = args.out.expanduser().resolve()
    if args.scrub:
        _scrub_map(args.out)
    if args.site is None and args.inventory is None:
        from strixwizard.services.capture import capture_local

        if args.scrub:
            written = _scrubbed(args, lambda out: [capture_local(out, args.tar)])[0]
        else:
            written = capture_local(args.out, args.tar)
        print(f"snapshot written to {written}")
        print(f"replay it with: strixwizard doctor --snapshot {written}")
        return EXIT_OK
    from strixwizard.services.capture import SiteCapture, capture_site
    from strixwizard.services.nodes import RunRequest, resolve_site

    if args.tar:
        raise UsageError("--tar writes this machine's snapshot as one archive; with --site every "
                         "node already gets its own .tar.gz under --out (leave out --tar)")
    site = resolve_site(RunRequest(site_file=args.site, inventory=args.inventory))
    assert site is not None
    progress = node_progress(node_printer()) if sys.stderr.isatty() else None
    if args.scrub:
        captured: list[SiteCapture] = []

        def collect(out: Path) -> list[Path]:
            captured.append(capture_site(site, out, args.trust_new_hosts, progress))
            return list(captured[0].written.values())

        moved = iter(_scrubbed(args, collect, folder=True))
        outcome = captured[0]
        outcome.written = {name: next(moved) for name in outcome.written}
    else:
        outcome = capture_site(site, args.out, args.trust_new_hosts, progress)
    for name, path in outcome.written.items():
        print(f"{name}: {path}")
    for name, reason in outcome.failed.items():
        print(f"{name}: not captured: {reason}", file=sys.stderr)
    if outcome.written:
        replay = shlex.join(["strixwizard", "doctor", "--snapshot", *map(str, outcome.written.values())])
        print(f"replay as the site with: {replay}")
    if not outcome.written:
        return EXIT_NO_VERDICT
    return EXIT_FAIL if outcome.failed else EXIT_OK


def _scrub_map(out: Path) -> Path:
    """Where `capture --scrub` keeps its map; refused before anything is captured if taken."""
    from strixwizard.probe.scrub import map_path

    private = map_path(out)
    if private.exists():
        raise UsageError(f"{private}: already exists; move it away (it maps an earlier scrubbed "
                         "capture back to its names) or choose another --out")
    return private


def _scrubbed(args: argparse.Namespace, collect: Callable[[Path], list[Path]],
              folder: bool = False) -> list[Path]:
    """`collect` into a private temporary folder, scrubbed, then moved to `--out` (the paths
    it wrote, in order, where they are now); on a stop, the raw ones removed and said so."""
    from strixwizard.services.capture_scrub import scrubbed_capture

    private = _scrub_map(args.out)

    def stopped(removed: list[str], folder: Path) -> None:
        names = ", ".join(removed) if removed else "none had been written yet"
        again = shlex.join(["strixwizard", *sys.argv[1:]]) if sys.argv[1:] else "the same command"
        with contextlib.suppress(OSError):
            print(f"capture --scrub stopped before its snapshots were scrubbed and in place: "
                  f"removed the raw snapshots ({names}) with their temporary folder {folder}; "
                  f"nothing unscrubbed reached {args.out}. To capture again: {again}",
                  file=sys.stderr)

    done = scrubbed_capture(args.out, private, collect, stopped, folder)
    scrubber = done.scrubber
    print(f"scrubbed: {len(scrubber.names) + len(scrubber.placed)} name(s), "
          f"{len(scrubber.networks)} IPv4 network(s), {len(scrubber.macs)} MAC address(es), "
          f"{len(scrubber.guids)} GUID(s) replaced by tokens; the map back (private: keep "
          f"it, do not share it): {private}")
    return list(done.moved.values())


def cmd_init(args: argparse.Namespace) -> int:
    from strixwizard.services.site_file import parse_node_argument, write_site_file

    if args.timer:
        from strixwizard.cli.timer import run_init_timer

        return run_init_timer(args)
    if args.site or args.prometheus or args.unit_dir:
        raise UsageError("--site, --prometheus and --unit-dir go with --timer")
    if args.node and args.inventory:
        raise UsageError("--node and --inventory are exclusive: choose one source of nodes")
    if args.become and not args.node:
        raise UsageError("--become goes with --node (an inventory says it with `ansible_become`)")
    if args.inventory:
        from strixwizard.inventory import load_inventory

        nodes = list(load_inventory(args.inventory))
    else:
        nodes = [parse_node_argument(text, args.key, args.become) for text in args.node]
    name = args.name or args.out.resolve().parent.name or "site"
    found = None
    if nodes and not args.no_probe:
        from strixwizard.services.site_file import check_site_file, probe_nodes

        check_site_file(args.out, name, nodes)
        found = probe_nodes(nodes, args.trust_new_hosts, node_printer() if sys.stderr.isatty() else None)
        from strixwizard.present.terminal import visible

        for node, what in found.items():  # a node's words: on one line each, spelled out
            print(f"{node}: fabric_address {visible(what.address)}: {visible(what.how)}" if what.address
                  else f"{node}: no fabric_address: {visible(what.how)}", file=sys.stderr)
    written = write_site_file(args.out, name, nodes, found)
    print(f"site file written to {written}; edit it, then: strixwizard doctor --site {written}")
    return EXIT_OK


def no_terminal_words(stdin_is_terminal: bool, demo: bool, site: Path | None) -> str:
    """Why the wizard did not start, and the commands that work without a terminal, with the
    site the wizard was asked for."""
    which = "its output" if stdin_is_terminal else "its input"
    chosen = ["--demo"] if demo else ["--site", str(site)] if site is not None else []
    doctor = shlex.join(["strixwizard", "doctor", *chosen])
    fix = shlex.join(["strixwizard", "fix", *chosen])
    return (f"strixwizard: the wizard cannot start: {which} is not a terminal (it draws its "
            f"screens on one and reads keys from one).\nWithout a terminal, run a command "
            f"instead: `{doctor}` checks the nodes, `{fix}` plans the fixes; "
            "`strixwizard --help` lists every command.")


def _wizard(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """No command: the Textual wizard (only on a terminal; Textual is imported only here)."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        # it could not start: a script that runs it must not take that for success
        print(no_terminal_words(sys.stdin.isatty(), args.wizard_demo, args.wizard_site),
              file=sys.stderr)
        return EXIT_NO_VERDICT
    from strixwizard.tui.app import run

    return run(site_file=args.wizard_site, demo=args.wizard_demo)


def folder_problem(path: Path) -> str | None:
    """Why `path` cannot become a folder this process writes in (it need not exist yet), or
    None. Nothing is created: the nearest existing ancestor must be a writable folder."""
    current = path.expanduser()
    for _ in range(256):  # bounded: a path has fewer components than this
        if current.exists():
            if not current.is_dir():
                return f"{current} is not a folder"
            if not os.access(current, os.W_OK | os.X_OK):
                return f"{current} is not writable"
            return None
        if current.parent == current:
            return None
        current = current.parent
    return None


def _check_folders(args: argparse.Namespace) -> None:
    """--journal-dir / --dry-run-dir must be usable before anything is planned or changed: an
    existing one private and the user's (`files.check_private_dir`: refused, never changed),
    as the state folder the journals go to without --journal-dir, once a run will write them."""
    from strixwizard.files import FolderRefused, check_private_dir, state_dir

    for attribute, flag in (("journal_dir", "--journal-dir"), ("dry_run_dir", "--dry-run-dir")):
        value = getattr(args, attribute, None)
        if value is None:
            continue
        if (problem := folder_problem(Path(value))) is not None:
            raise UsageError(f"{flag} {value}: cannot write there: {problem}")
        if Path(value).expanduser().exists():
            try:
                check_private_dir(Path(value).expanduser(), f"or name another folder with {flag}")
            except FolderRefused as refused:
                raise FolderRefused(f"{flag} {refused}") from None
    writes = getattr(args, "apply", False) or getattr(args, "rollback", None) is not None
    if writes and getattr(args, "journal_dir", None) is None and state_dir().exists():
        check_private_dir(state_dir(), "or point XDG_STATE_HOME elsewhere (or name a folder "
                          "with --journal-dir)")


def cmd_deploy(args: argparse.Namespace) -> int:
    from strixwizard.cli.deploy import cmd_deploy as run_deploy

    _check_folders(args)
    return run_deploy(args)


def cmd_fix(args: argparse.Namespace) -> int:
    from strixwizard.cli.fix import cmd_fix as run_fix

    _check_folders(args)
    return run_fix(args)


def cmd_test(args: argparse.Namespace) -> int:
    from strixwizard.cli.live import run as run_test

    return run_test(args)


def cmd_history(args: argparse.Namespace) -> int:
    from strixwizard.cli.history import run as run_history

    return run_history(args)


def cmd_advise(args: argparse.Namespace) -> int:
    from strixwizard.cli.advise import run as run_advise

    return run_advise(args)


def _command_index(argv: Sequence[str]) -> int | None:
    """Where the command word sits in `argv` (the first word that is neither an option nor the
    FILE of the wizard's `--site`), or None when there is none."""
    index = 0
    while index < len(argv):
        word = argv[index]
        if word == "--":
            return index + 1 if index + 1 < len(argv) else None
        if not word.startswith("-"):
            return index
        if word == "--site":  # `--site FILE`
            index += 1
        index += 1
    return None


def _check_command_line(parser: argparse.ArgumentParser, argv: Sequence[str]) -> None:
    """Refuse what argparse would accept and then ignore, or explain badly: a command word
    nobody defined (suggest the close ones) and the wizard's `--demo`/`--site FILE` before a
    command, which would otherwise run that command on this machine without saying so."""
    at = _command_index(argv)
    if at is None:
        return
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    word = argv[at]
    if word not in commands.choices:
        import difflib

        close = difflib.get_close_matches(word, list(commands.choices), n=3, cutoff=0.6)
        hint = f"; did you mean {' or '.join(close)}?" if close else ""
        parser.error(f"{word!r} is not a command{hint} (`strixwizard --help` lists them)")
    before = [w for w in argv[:at] if w not in ("-h", "--help")]
    if before:
        fixed = shlex.join(["strixwizard", word, *before, *argv[at + 1:]])
        parser.error(f"{' '.join(before)} before a command opens the wizard; for `{word}` put "
                     f"it after the command: {fixed}")


def _command_parsers(parser: argparse.ArgumentParser, args: argparse.Namespace
                     ) -> list[argparse.ArgumentParser]:
    """The parser that took the command line, outermost first: the top level, the command's,
    and a command's own command (`test latency`)."""
    chain = [parser]
    while True:
        actions = [a for a in chain[-1]._actions if isinstance(a, argparse._SubParsersAction)]
        chosen = getattr(args, actions[0].dest, None) if actions and actions[0].dest else None
        if not actions or chosen not in actions[0].choices:
            return chain
        chain.append(actions[0].choices[chosen])


def _refuse_unknown(parser: argparse.ArgumentParser, args: argparse.Namespace,
                    unknown: Sequence[str]) -> None:
    """Words no parser took: a usage error from the innermost command's parser (its usage, not
    the top level's), naming the options close to a mistyped one."""
    import difflib

    chain = _command_parsers(parser, args)
    known = sorted({option for p in chain[1:] or chain for action in p._actions
                    for option in action.option_strings})
    hints = []
    for word in unknown:
        if word.startswith("-"):
            close = difflib.get_close_matches(word.split("=", 1)[0], known, n=2, cutoff=0.6)
            if close:
                hints.append(f"{word}: did you mean {' or '.join(close)}?")
    message = f"unrecognized arguments: {' '.join(unknown)}"
    chain[-1].error(message + (f" ({'; '.join(hints)})" if hints else ""))


def _on_this_machine_only(args: argparse.Namespace) -> str | None:
    """The note a site command prints when nothing named a site: it runs on this machine, and
    says so rather than falling back silently."""
    if args.command not in ("doctor", "fix", "deploy") or getattr(args, "rollback", None):
        return None
    if getattr(args, "list_checks", False):
        return None
    named = (getattr(args, "site", None), getattr(args, "inventory", None),
             getattr(args, "snapshot", None), getattr(args, "demo", False))
    if any(named):
        return None
    return (f"strixwizard {args.command}: no --site, --inventory or --demo given: this machine "
            f"only (`strixwizard {args.command} --site FILE` for a cluster, --demo for the demo)")


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    shell.complete_if_asked(_parser)
    parser = _parser(words[0] if words and words[0] in _COMMANDS else None)
    _check_command_line(parser, words)
    args, unknown = parser.parse_known_args(words)
    if unknown:
        _refuse_unknown(parser, args, unknown)
    args.argv = words  # what was run, for next-step commands
    as_json = bool(getattr(args, "json", False))
    handlers = {"doctor": cmd_doctor, "capture": cmd_capture, "init": cmd_init, "fix": cmd_fix,
                "deploy": cmd_deploy, "test": cmd_test, "explain": cmd_explain,
                "history": cmd_history, "advise": cmd_advise,
                "help": lambda args: shell.run_help(_parser(), args.topic),
                "completion": lambda args: shell.run_completion(args.shell),
                "man": lambda args: shell.run_man(_parser(), args.topic)}
    if args.command is None:
        return _wizard(parser, args)
    if (note := _on_this_machine_only(args)) is not None:
        print(note, file=sys.stderr)
    from strixwizard.node import signals
    from strixwizard.present.terminal import visible_output

    # no control character reaches the terminal raw; SIGINT, SIGTERM, SIGHUP: a change stops at
    # a step boundary
    with visible_output(stdout=not as_json), signals.installed():
        return _run(handlers[args.command], args, as_json)


def _run(handler: Callable[[argparse.Namespace], int], args: argparse.Namespace,
         as_json: bool) -> int:
    from strixwizard.node import signals

    try:
        code = handler(args)
        if (signum := signals.requested()) is not None:  # a run that ended as cancelled
            return signals.exit_status(signum)
        return code
    except UsageError as error:
        if as_json:
            emit(_error_document(str(error)))
        print(f"strixwizard: error: {error}", file=sys.stderr)
        return EXIT_NO_VERDICT
    except signals.Interrupted as interrupted:
        with contextlib.suppress(OSError):
            print(f"strixwizard: interrupted ({interrupted.why})", file=sys.stderr)
        return signals.exit_status(interrupted.signum)
    except KeyboardInterrupt:
        with contextlib.suppress(OSError):
            print("strixwizard: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_NO_VERDICT
    except OSError as error:
        if error.errno is None:
            return _internal_error(error, as_json)
        if error.filename is None and error.errno in (errno.EIO, errno.EPIPE) \
                and signals.requested() is not None:
            return signals.exit_status(signals.requested() or 0)  # the terminal is gone
        # A file or folder of this machine that cannot be made or written: the environment,
        # not a bug. One line, naming the path (when the error knows it) and the errno.
        origin = _path_origin(args, error.filename) if error.filename is not None else ""
        message = os_error_line(error) + origin
        if as_json:
            emit(_error_document(message))
        with contextlib.suppress(OSError):
            print(f"strixwizard: error: {message}", file=sys.stderr)
        return EXIT_NO_VERDICT
    except Exception as error:  # no verdict, but never a bare traceback
        return _internal_error(error, as_json)


#: Options naming a path of this machine that a command writes under.
_PATH_OPTIONS = {"journal_dir": "--journal-dir", "dry_run_dir": "--dry-run-dir", "out": "--out",
                 "target_dir": "--target-dir"}


def _path_origin(args: argparse.Namespace, filename: object) -> str:
    """` (under --journal-dir DIR)` when the failing path lies under a path option's value."""
    failing = Path(str(filename))
    for attribute, flag in _PATH_OPTIONS.items():
        value = getattr(args, attribute, None)
        if value is None:
            continue
        root = Path(str(value)).expanduser()
        if failing == root or root in failing.parents:
            return f" (under {flag} {value})"
    return ""


def _internal_error(error: BaseException, as_json: bool) -> int:
    import traceback

    message = f"internal error: {error!r}"
    if as_json:
        emit(_error_document(message))
    traceback.print_exception(error, file=sys.stderr)
    print(f"strixwizard: {message}; please report it", file=sys.stderr)
    return EXIT_NO_VERDICT

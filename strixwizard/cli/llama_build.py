"""`strixwizard deploy --stack llama-rpc --build SOURCE`: the llama.cpp build's plan and
preflight; with --apply, the build on one node and the install on every node of its machine
(`services/llama_build.py`). Exit status: 0 built and installed (or planned), 1 the build or
the install failed or the build ran past --build-timeout, 2 refused (a tool missing, not a
llama.cpp source: nothing changed), 130 interrupted.
"""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Sequence
from typing import Any


def cmd_build(args: argparse.Namespace, found: Any, settings: Any) -> int:
    """`--build SOURCE`: the build's plan and preflight; with --apply, the build and install."""
    import sys

    from strixwizard.cli.nextstep import same_command, site_options
    from strixwizard.cli.options import terminal_confirm
    from strixwizard.deploy.stacks.llama_rpc.build import BuildRefused
    from strixwizard.deploy.stacks.llama_rpc.recipe import stopped_state
    from strixwizard.errors import UsageError
    from strixwizard.present.terminal import visible
    from strixwizard.services.deploy import DeployOptions
    from strixwizard.services.llama_build import build
    from strixwizard.services.output import EXIT_NO_VERDICT, emit, envelope, exit_code

    if args.smoke or args.rollback:
        raise UsageError("--build plans (or with --apply runs) a build; it takes no --smoke")
    wanted = build_settings(args, settings, found.site.llama_bin_dir)

    def say(line: str) -> None:
        if not args.json:
            print(f"  … {visible(line)}", file=sys.stderr, flush=True)

    site = found.site.name
    options = DeployOptions(journal_dir=args.journal_dir, node_journal_dir=args.node_journal_dir,
                            trust_new_hosts=args.trust_new_hosts, break_lock=args.break_lock)
    try:
        result = build(found, wanted, settings.nodes, terminal_confirm(args.yes), options,
                       say, apply=bool(args.apply))
    except BuildRefused as refused:
        if args.json:
            emit(envelope(site, mode="build", status="refused", reason=str(refused)))
        print(f"strixwizard: deploy refused: {visible(str(refused))}", file=sys.stderr)
        return EXIT_NO_VERDICT
    if args.json:
        emit(envelope(site, mode="build", status="planned" if result.outcome is None
                      else "built" if result.ok else "failed", build=result.to_json()))
        return exit_code(result.ok)
    out = sys.stdout
    if result.outcome is None:
        for line in result.plan.lines():
            print(visible(line), file=out)
        print(f"Build and install: {same_command(args.argv, drop=('--plan',), add=('--apply',))}",
              file=out)
        return exit_code(True)
    outcome = result.outcome
    if not outcome.ok:
        longer = f"{max(args.build_timeout * 2, 60):g}"
        again = same_command(args.argv, add=("--build-timeout", longer)) \
            if outcome.state == "timed-out" else same_command(args.argv)
        if outcome.state == "failed":
            print(visible(f"The build on {result.plan.build_on} {outcome.message}. Nothing was "
                          f"installed. The log: {result.plan.settings.log} on "
                          f"{result.plan.build_on}" + (f", copied to {outcome.log_on_head}"
                                                       if outcome.log_on_head else
                                                       f" ({outcome.log_not_copied})")), file=out)
        else:
            print(visible(stopped_state(result.plan, outcome.message, outcome.log_on_head, again)),
                  file=out)
        if outcome.signal is not None:
            return 128 + int(outcome.signal)
        return EXIT_NO_VERDICT if outcome.state == "lost" else 1
    print(visible(f"Built on {result.plan.build_on} ({result.plan.backend}, "
                  f"{result.version or 'no version line'}); {outcome.progress_lines} progress "
                  f"lines; the log: {result.plan.settings.log} on {result.plan.build_on}"
                  + (f", copied to {outcome.log_on_head}" if outcome.log_on_head
                     else f" ({outcome.log_not_copied})")), file=out)
    if result.report is not None:
        from strixwizard.cli.nextstep import journal_options
        from strixwizard.present.fix_text import render_apply

        render_apply(result.report, out, shlex.join(["strixwizard", "deploy",
                                                     *journal_options(args), "--rollback"]),
                     "deploy")
    for note in result.notes:
        print(visible(note), file=out)
    if result.ok:
        print(visible(next_step(args.llama_bin_dir, wanted.site_bin_dir, site_options(args))),
              file=out)
    return exit_code(result.ok)


def build_settings(args: argparse.Namespace, settings: Any, site_bin_dir: str | None) -> Any:
    """The build's settings from the flags; the install folder is the deploy's (`settings`):
    --llama-bin-dir, else the site file's `llama_bin_dir:`, else /usr/local/bin."""
    from strixwizard.deploy.stacks.llama_rpc.llama import LlamaSettings
    from strixwizard.deploy.stacks.llama_rpc.recipe import DEFAULT_BIN_DIR, BuildSettings

    llama = settings.own(LlamaSettings)
    return BuildSettings(source=args.build, backend=args.build_backend, build_on=args.build_on,
                         timeout_s=args.build_timeout, build_dir=args.build_dir,
                         bin_dir=(llama.bin_dir if llama else None) or DEFAULT_BIN_DIR,
                         jobs=args.build_jobs, site_bin_dir=site_bin_dir)


def next_step(flag: str | None, site_bin_dir: str | None, site_words: Sequence[str] = ()) -> str:
    """The build's last line: doctor, then deploy, on the same site (`site_words`: its --site,
    --inventory or --demo), with the --llama-bin-dir given unless the site file's
    `llama_bin_dir:` already says that folder (doctor and deploy read it there)."""
    from strixwizard.deploy.stacks.llama_rpc.recipe import same_dir

    where = ["--llama-bin-dir", flag] if flag and not same_dir(flag, site_bin_dir) else []
    doctor = shlex.join(["strixwizard", "doctor", *site_words, "--stack", "llama-rpc", *where])
    deploy = shlex.join(["strixwizard", "deploy", *site_words, "--stack", "llama-rpc", "--gguf",
                         "MODEL", "--apply", *where])
    return f"Next: {doctor}, then {deploy}"

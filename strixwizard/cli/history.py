"""`strixwizard history`: past test runs per link, a sparkline each, and a regression
against the last good run. Exit status: 0 no regression, 1 a judged measurement regressed
in its latest run, 2 no verdict (no or bad history file, bad site file, no run stored)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from strixwizard.present.terminal import visible
from strixwizard.services.output import EXIT_NO_VERDICT, envelope, exit_code


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    history = commands.add_parser(
        "history",
        help="past test runs per link, with a sparkline and regressions; exit 0/1/2",
        description="The test history (written by `strixwizard test` on a real site): per link and "
        "measurement, the figures of past runs (median one-way µs, or Gb/s), a sparkline, and the "
        "latest run against the last good one (10% worse is a regression). Exit status: 0 no "
        "regression, 1 a regression, 2 no verdict (no or bad history file, nothing stored).",
    )
    history.add_argument("--site", type=Path, metavar="FILE", help="only this site's runs")
    history.add_argument("--demo", action="store_true",
                         help="the demo's runs (`strixwizard test soak --demo` stores them, in "
                         "demo-history.sqlite beside the real history, never in it)")
    history.add_argument("--history", type=Path, metavar="FILE",
                         help="SQLite history file (default ~/.local/state/strixwizard/history.sqlite)")
    history.add_argument("--runs", type=int, default=20, metavar="N",
                         help="how many of the latest runs each line shows (default 20)")
    history.add_argument("--json", action="store_true", help="one JSON document on stdout")
    return history


def run(args: argparse.Namespace) -> int:
    from strixwizard.errors import UsageError
    from strixwizard.live.history import HistoryError, default_history_path, demo_history_path
    from strixwizard.live.trends import read_trends, text_lines

    if not 1 <= args.runs <= 1000:
        raise UsageError("--runs must be between 1 and 1000")
    site = None
    if args.site is not None:
        from strixwizard.site import load_site

        site = load_site(args.site).name
    if args.demo and args.site is not None:
        raise UsageError("--demo is a site of its own: it cannot be combined with --site")
    path = args.history or (demo_history_path() if args.demo else default_history_path())
    document: dict[str, object] = envelope(site, history=str(path))
    if not path.is_file():  # a fresh install: say what fills it, and how to see one now
        return _no_verdict(args, document, first_steps(path, args.demo))
    try:
        trends, skipped = read_trends(path, site, args.runs)
    except HistoryError as error:
        return _no_verdict(args, document, str(error))
    document["skipped"] = skipped
    for note in skipped:  # said, never fatal: the rows that can be read still count
        print(f"strixwizard: note: {visible(note)}", file=sys.stderr)
    if not trends:
        return _no_verdict(args, document, f"no test run stored in {path}"
                           + (f" for site {site}" if site else "")
                           + (f" that can be read ({len(skipped)} skipped)" if skipped else ""))
    regressions = [t for t in trends if t.regression and t.counts]
    code = exit_code(not regressions)
    if args.json:
        document.update({"status": "fail" if regressions else "pass", "exit_code": code,
                         "regressions": len(regressions), "links": [t.to_json() for t in trends]})
        print(json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False))
        return code
    runs = len({p.run_id for t in trends for p in t.points})
    sites = sorted({t.site for t in trends})
    print(f"strixwizard history: {', '.join(sites)}: {runs} run(s) shown, from {path}")
    for name in sites:
        if len(sites) > 1:
            print(f"site {name}")
        for line in text_lines([t for t in trends if t.site == name]):
            print(f"  {line}")
    print(f"{len(regressions)} regression(s) against the last good run" if regressions
          else "no regression against the last good run")
    return code


def first_steps(path: Path, demo: bool) -> str:
    if demo:
        return (f"no test history at {path} yet: `strixwizard test soak --demo` stores "
                "one (a soak measured on this machine's loopback; the demo's recordings are not "
                "measurements); run it twice, then `strixwizard history --demo`")
    return (f"no test history at {path} yet: every `strixwizard test latency|bandwidth|rccl|"
            "matrix --site FILE` stores its measured figures there; to see what history shows, "
            "`strixwizard test soak --demo` twice, then `strixwizard history --demo`")


def _no_verdict(args: argparse.Namespace, document: dict[str, object], message: str) -> int:
    if args.json:
        document.update({"status": "error", "exit_code": EXIT_NO_VERDICT, "error": message, "links": []})
        print(json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False))
    print(f"strixwizard: error: {message}", file=sys.stderr)
    return EXIT_NO_VERDICT

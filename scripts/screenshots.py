#!/usr/bin/env python3
"""Regenerate docs/screenshots/ from the demo site: one picture per wizard step.

    .venv/bin/python scripts/screenshots.py [--out docs/screenshots] [--size 80x24] [--wide 120x40]

Each step is reached with the keyboard (the digit keys), exactly as a user
would, and saved as SVG with Textual's `save_screenshot`: one set at the size
the docs stress (80x24) in `docs/screenshots/`, one wide set in `docs/screenshots/wide/`.
PNGs are made from the SVGs with `rsvg-convert` (Debian: librsvg2-bin, installed
by `scripts/install.sh test`); without it only SVGs are written (and the script
says so). Textual writes each terminal cell run as one `<text>` whose leading
spaces are no-break spaces; SVG collapses them unless the text keeps its
whitespace, so the SVGs get `xml:space="preserve"` (the cairosvg fallback, which
lost them anyway, is gone). HOME points at a scratch folder while it runs, so the
user's saved progress is untouched and paths on screen read `~/.local/state/...`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

async def capture(out: Path, size: tuple[int, int]) -> list[Path]:
    from textual.screen import ModalScreen

    from strixwizard.tui.app import WizardApp
    from strixwizard.tui.screens.discover import DiscoverState
    from strixwizard.tui.steps import BY_ID, STEPS

    app = WizardApp(demo=True, resume=False)
    written = []
    async with app.run_test(size=size) as pilot:
        for step in STEPS:  # one picture per step, named after its number and id
            key, name = step.key, f"{step.number:02d}-{step.id}"
            await pilot.press(key)
            await app.workers.wait_for_complete()
            await pilot.pause()
            app.clear_notifications()
            await pilot.pause()
            await pilot.pause()
            if step.id == "test":  # run the live tests: TCP on loopback for real, RDMA replayed
                await pilot.press("r")
                for _ in range(1200):  # bounded: the demo's tests end in seconds
                    await pilot.pause(0.1)
                    if not app.busy("tests"):
                        break
                await app.workers.wait_for_complete()
                for _ in range(5):
                    await pilot.pause(0.05)
                app.clear_notifications()
                await pilot.pause()
            written.append(Path(app.save_screenshot(f"{name}.svg", str(out))))
            discovery = app.session.of(DiscoverState).discovery
            if step.id == "fix" and discovery and discovery.plan:
                await pilot.press("a")  # apply: a dry run on copies of the demo's snapshots
                for _ in range(100):  # bounded: the fix service asks from its worker
                    await pilot.pause(0.05)
                    if isinstance(app.screen, ModalScreen):
                        break
                await pilot.press("y")
                await app.workers.wait_for_complete()
                await pilot.pause()
                await pilot.pause()
                written.append(Path(app.save_screenshot(f"{BY_ID['fix'].number:02d}b-fix-applied.svg",
                                                        str(out))))
    return written


PRESERVE = 'xml:space="preserve" '


def keep_whitespace(svg: Path) -> None:
    """Mark the whole picture `xml:space="preserve"`: a cell run's leading and repeated spaces
    (the title's " — ", hanging indents, box borders) are drawn where the terminal drew them."""
    text = svg.read_text(encoding="utf-8")
    if PRESERVE not in text:
        svg.write_text(text.replace("<svg ", f"<svg {PRESERVE}", 1), encoding="utf-8")


def to_png(svg: Path) -> Path | None:
    if not shutil.which("rsvg-convert"):
        return None
    png = svg.with_suffix(".png")
    subprocess.run(["rsvg-convert", "--zoom", "1.5", str(svg), "-o", str(png)], check=True)
    return png


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    parser.add_argument("--size", default="80x24", help="terminal columns x rows")
    parser.add_argument("--wide", default="120x40",
                        help="columns x rows of the wide set in OUT/wide ('' for none)")
    args = parser.parse_args()
    sets = [(args.out, args.size)] + ([(args.out / "wide", args.wide)] if args.wide else [])
    svgs: list[Path] = []
    for out, size in sets:
        columns, rows = (int(v) for v in size.lower().split("x"))
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="strixwizard-shots-") as home:
            os.environ["HOME"] = home
            os.environ.pop("XDG_STATE_HOME", None)
            svgs += asyncio.run(capture(out.resolve(), (columns, rows)))
    for svg in svgs:
        keep_whitespace(svg)
    pngs = [png for svg in svgs if (png := to_png(svg)) is not None]
    for path in svgs + pngs:
        print(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)
    if not pngs:
        print("rsvg-convert not found (Debian: librsvg2-bin): SVG only", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

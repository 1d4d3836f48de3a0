#!/usr/bin/env python3
"""Regenerate screenshots/ from the demo site: one picture per wizard step.

    .venv/bin/python scripts/screenshots.py [--out screenshots] [--size 100x30]

Each step is reached with the keyboard (the digit keys), exactly as a user
would, and saved as SVG with Textual's `save_screenshot`. PNGs are made from
the SVGs when a converter is available: `rsvg-convert` (Debian: librsvg2-bin)
or the `cairosvg` Python package; otherwise only SVGs are written (and the
script says so). HOME points at a scratch folder while it runs, so the user's
saved progress is untouched and paths on screen read `~/.local/state/...`.
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

SHOTS = [("1", "01-site"), ("2", "02-discover"), ("3", "03-links"), ("4", "04-fix"),
         ("5", "05-deploy"), ("6", "06-test"), ("7", "07-report")]


async def capture(out: Path, size: tuple[int, int]) -> list[Path]:
    from strixwizard.tui.app import WizardApp

    app = WizardApp(demo=True, resume=False)
    written = []
    async with app.run_test(size=size) as pilot:
        for key, name in SHOTS:
            await pilot.press(key)
            await app.workers.wait_for_complete()
            await pilot.pause()
            app.clear_notifications()
            await pilot.pause()
            await pilot.pause()
            if key == "6":  # run the live tests: TCP on loopback for real, RDMA replayed
                await pilot.press("r")
                for _ in range(1200):  # bounded: the demo's tests end in seconds
                    await pilot.pause(0.1)
                    if not app.session.testing:
                        break
                await app.workers.wait_for_complete()
                for _ in range(5):
                    await pilot.pause(0.05)
                app.clear_notifications()
                await pilot.pause()
            written.append(Path(app.save_screenshot(f"{name}.svg", str(out))))
            if key == "4" and app.session.discovery and app.session.discovery.plan:
                await pilot.press("a")  # apply: a dry run on copies of the demo's snapshots
                await pilot.pause()
                await pilot.press("y")
                await app.workers.wait_for_complete()
                await pilot.pause()
                await pilot.pause()
                written.append(Path(app.save_screenshot("04b-fix-applied.svg", str(out))))
    return written


def to_png(svg: Path) -> Path | None:
    png = svg.with_suffix(".png")
    if shutil.which("rsvg-convert"):
        subprocess.run(["rsvg-convert", "--zoom", "1.5", str(svg), "-o", str(png)], check=True)
        return png
    try:
        import cairosvg  # type: ignore[import-not-found]
    except ImportError:
        return None
    cairosvg.svg2png(url=str(svg), write_to=str(png), scale=1.5)
    return png


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "screenshots")
    parser.add_argument("--size", default="100x30", help="terminal columns x rows")
    args = parser.parse_args()
    columns, rows = (int(v) for v in args.size.lower().split("x"))
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="strixwizard-shots-") as home:
        os.environ["HOME"] = home
        os.environ.pop("XDG_STATE_HOME", None)
        svgs = asyncio.run(capture(args.out.resolve(), (columns, rows)))
    pngs = [png for svg in svgs if (png := to_png(svg)) is not None]
    for path in svgs + pngs:
        print(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)
    if not pngs:
        print("no SVG converter found (rsvg-convert or cairosvg): SVG only", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The README's pictures keep the terminal's whitespace: a Textual SVG drawn by rsvg-convert
(what scripts/screenshots.py makes the PNGs with) puts text where the terminal put it."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from textual.app import App, ComposeResult
from textual.widgets import Static

from tests.support.png import png_pixels

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from screenshots import PRESERVE, keep_whitespace

INDENT = 20  # cells of no-break spaces before the one letter on the screen


class _Indented(App[None]):
    def compose(self) -> ComposeResult:
        yield Static("\u00a0" * INDENT + "X")


def _screenshot(folder: Path) -> Path:
    async def shoot() -> str:
        app = _Indented()
        async with app.run_test(size=(40, 4)) as pilot:
            await pilot.pause()
            return app.save_screenshot("indented.svg", str(folder))

    return Path(asyncio.run(shoot()))


def _leftmost_bright(png: Path) -> int:
    """The leftmost column with a near-white pixel inside the window, below its title bar (the
    transparent rounded edge reads as white once the alpha is dropped)."""
    width, height, rows = png_pixels(png.read_bytes())
    columns = [x for row in rows[40:height - 4] for x in range(4, width - 4)
               if min(row[3 * x:3 * x + 3]) > 200]
    assert columns, "nothing bright drawn"
    return min(columns)


def test_keep_whitespace_marks_the_picture_once(tmp_path: Path) -> None:
    svg = _screenshot(tmp_path)
    keep_whitespace(svg)
    keep_whitespace(svg)
    assert svg.read_text().count(PRESERVE) == 1 and svg.read_text().startswith("<svg " + PRESERVE)


def test_rsvg_draws_the_leading_spaces(tmp_path: Path) -> None:
    rsvg = shutil.which("rsvg-convert")
    if rsvg is None:
        pytest.fail("rsvg-convert not found: Debian's librsvg2-bin provides it (scripts/install.sh test)")
    raw = _screenshot(tmp_path)
    kept = tmp_path / "kept.svg"
    kept.write_text(raw.read_text())
    keep_whitespace(kept)
    for svg in (raw, kept):
        subprocess.run([rsvg, "--zoom", "1", str(svg), "-o", str(svg.with_suffix(".png"))], check=True,
                       timeout=60)
    cell = 12.2  # Textual's SVG cell width at zoom 1
    shifted = _leftmost_bright(kept.with_suffix(".png")) - _leftmost_bright(raw.with_suffix(".png"))
    assert shifted >= (INDENT - 2) * cell, f"the indent drew {shifted:.0f} px, not {INDENT} cells"

"""`doctor --format`: one table of formats (strixwizard/present/formats), the same for both
front doors. `--json` is `--format json` byte for byte; `--format md` and `--format html` print
what the wizard's Report step saves for the same site; `--format prom` prints what
`--prometheus FILE` writes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from strixwizard.present import formats
from strixwizard.tui.steps import key_of
from tests.support.cli import invoke
from tests.support.wizard import make_app, settle_until, sync

#: When a report was made: the only words two runs of the same site may differ in.
_WHEN = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?")


def _timeless(text: str) -> str:
    return _WHEN.sub("<when>", text)


@pytest.fixture(autouse=True)
def state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(home))
    return home


def test_every_format_is_declared_once_with_a_name_a_media_type_and_an_extension() -> None:
    names = formats.names()
    assert names[:5] == ("text", "json", "md", "html", "prom")
    assert len(set(names)) == len(names)
    assert all(f.media_type and f.extension and f.summary for f in formats.ALL)
    assert formats.by_name("md").extension == "md"
    with pytest.raises(KeyError, match="known: text, json"):
        formats.by_name("pdf")


def test_json_is_format_json_byte_for_byte() -> None:
    alias, named = invoke("doctor", "--demo", "--json"), invoke("doctor", "--demo", "--format", "json")
    assert (alias.rc, _timeless(alias.stdout), alias.stderr) == (named.rc, _timeless(named.stdout),
                                                                named.stderr)
    assert alias.rc == 1 and alias.json()["site"] == "demo"


def test_text_is_the_default_and_format_text_the_same() -> None:
    wide = {"COLUMNS": "300"}  # no line wraps where the command shown in the hint is longer
    plain = invoke("doctor", "--demo", env=wide)
    named = invoke("doctor", "--demo", "--format", "text", env=wide)
    assert plain.stdout.replace("--format text ", "") == named.stdout.replace("--format text ", "")
    assert plain.rc == named.rc == 1


def test_json_and_another_format_together_are_refused() -> None:
    done = invoke("doctor", "--demo", "--json", "--format", "md")
    assert done.rc == 2
    assert "--json is --format json" in done.stderr
    assert done.json()["status"] == "error"  # --json asked for JSON: the error is JSON too


def test_format_prom_prints_what_prometheus_writes(tmp_path: Path) -> None:
    textfile = tmp_path / "doctor.prom"
    done = invoke("doctor", "--demo", "--format", "prom", "--prometheus", str(textfile))
    assert done.rc == 1, done.stderr
    assert done.stdout == textfile.read_text(encoding="utf-8")
    assert 'strixwizard_check_status{' in done.stdout


@pytest.mark.parametrize("name", ["md", "html", "prom"])
def test_a_document_format_says_no_verdict_on_stderr(name: str) -> None:
    """The text ends with the reason; a document carries it as its status, and stderr says it."""
    from checks import ALL

    every_area = [arg for area in sorted({c.id.split(".")[0] for c in ALL}) for arg in ("--skip", area)]
    done = invoke("doctor", "--demo", "--format", name, *every_area)
    assert done.rc == 2
    assert done.stderr.startswith("strixwizard: no check was judged") and done.stderr.endswith(
        ": no verdict\n")


@sync
async def test_md_and_html_print_what_the_wizards_report_step_saves(state_home: Path) -> None:
    app = make_app(demo=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press(key_of("report"))
        await settle_until(app, pilot, lambda: "html" in app.session.saved)
        saved = {name: path.read_text(encoding="utf-8") for name, path in app.session.saved.items()}
    for name in ("json", "md", "html"):
        printed = invoke("doctor", "--demo", "--format", name)
        assert printed.rc == 1, printed.stderr
        assert _timeless(printed.stdout) == _timeless(saved[name]), name
    assert "- source: the bundled demo" in saved["md"]


def test_a_site_files_report_names_it_as_the_wizards_does(tmp_path: Path) -> None:
    """The one line the wizard adds to its report (where the nodes came from) is the same for
    the same site file from either front door."""
    from strixwizard.services.discover import SiteSource
    from strixwizard.tui.workspace import Session

    snapshots = Path(__file__).resolve().parent.parent / "strixwizard" / "demo" / "snapshots"
    site_file = tmp_path / "site.yaml"
    site_file.write_text("site: replayed\nnodes:\n"
                         f"  - name: node-a\n    snapshot: {snapshots / 'node-a.tar.gz'}\n"
                         f"  - name: node-b\n    snapshot: {snapshots / 'node-b.tar.gz'}\n")
    done = invoke("doctor", "--site", str(site_file), "--format", "md")
    assert done.rc == 1, done.stderr
    wizard = Session(source=SiteSource(site_file=site_file.resolve())).describe_source()
    assert f"- source: {wizard}\n" in done.stdout

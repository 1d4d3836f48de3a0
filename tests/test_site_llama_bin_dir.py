"""The site file's `llama_bin_dir:`: read (an absolute path on one line, or a clear error naming
the key and its line), and the default of doctor's `--llama-bin-dir` (the survey looks there),
the flag winning when given."""

from __future__ import annotations

from pathlib import Path

import pytest

from strixwizard.site import SiteError, parse_site
from tests.support.cli import invoke
from tests.support.demo_site import demo_site_with

BASE = "site: lab\nnodes:\n  - name: a\n    host: local\n"


def test_an_absolute_folder_is_read_and_left_out_is_none() -> None:
    assert parse_site(BASE + "llama_bin_dir: /opt/llama bin/\n", "s.yaml").llama_bin_dir \
        == "/opt/llama bin/"
    assert parse_site(BASE, "s.yaml").llama_bin_dir is None


@pytest.mark.parametrize(("value", "message"), [
    ("bin", "s.yaml:5: llama_bin_dir 'bin' is not an absolute path"),
    ("~/llama", "s.yaml:5: llama_bin_dir '~/llama' is not an absolute path"),
    ('"/opt/a\\nb"', "s.yaml:5: llama_bin_dir '/opt/a\\nb' holds a line break or another "
     "control character"),
    ('"/opt/a\\tb"', "s.yaml:5: llama_bin_dir '/opt/a\\tb' holds a line break"),
    ("true", "s.yaml:5: llama_bin_dir must be a string, not True"),
    ("[/opt/a]", "s.yaml:5: llama_bin_dir must be a single value"),
    ("{dir: /opt/a}", "s.yaml:5: llama_bin_dir must be a single value"),
    ("12", "s.yaml:5: llama_bin_dir '12' is not an absolute path"),
])
def test_anything_but_an_absolute_path_on_one_line_names_the_key_and_line(
        value: str, message: str) -> None:
    with pytest.raises(SiteError) as error:
        parse_site(BASE + f"llama_bin_dir: {value}\n", "s.yaml")
    assert str(error.value).startswith(message), str(error.value)


def test_doctor_on_a_bad_llama_bin_dir_exits_2_naming_it(tmp_path: Path) -> None:
    site = demo_site_with(tmp_path, "llama_bin_dir: llama/bin\n")
    line = len(site.read_text(encoding="utf-8").splitlines())
    done = invoke("doctor", "--site", str(site))
    assert done.rc == 2 and done.stdout == ""
    assert f"{site}:{line}: llama_bin_dir 'llama/bin' is not an absolute path" in done.stderr


def _programs(folder: Path, commit: str) -> Path:
    """STAND-IN llama.cpp programs (the real builds are surveyed in
    tests/test_doctor_llama_builds_lab.py): a version line, and the RDMA transport's string."""
    folder.mkdir(parents=True)
    (folder / "llama-server").write_text(
        f"#!/bin/sh\necho 'version: 0.4.1-dev (build 10991, commit {commit})'\n")
    (folder / "ggml-rpc-server").write_text("#!/bin/sh\n# RDMA activated\n")
    for program in folder.iterdir():
        program.chmod(0o755)
    return folder


def test_doctors_survey_looks_in_the_sites_folder_and_the_flag_wins(tmp_path: Path) -> None:
    """This machine as the site's one node (`host: local`), collecting the survey alone: the
    real script runs here and looks where the site file (or the flag) says."""
    from strixwizard.services.nodes import RunRequest, resolve_run

    site_dir = _programs(tmp_path / "site bin", "aaaaaaaaa")
    flag_dir = _programs(tmp_path / "flag bin", "bbbbbbbbb")
    site_file = tmp_path / "site.yaml"
    site_file.write_text(BASE + f"llama_bin_dir: {site_dir}\n", encoding="utf-8")
    only_survey = {"files": [], "links": [], "commands": []}

    def survey(flag: str | None) -> tuple[str | None, list[str]]:
        _, nodes = resolve_run(RunRequest(site_file=site_file, spec=only_survey,  # type: ignore[arg-type]
                                          llama_bin_dir=flag))
        facts = nodes[0].facts
        assert facts is not None and facts.llama.build is not None, facts and facts.llama
        return facts.llama.build.commit, [p.path for p in facts.llama.build.programs]

    assert survey(None) == ("aaaaaaaaa", [f"{site_dir}/ggml-rpc-server", f"{site_dir}/llama-server"])
    assert survey(str(flag_dir))[0] == "bbbbbbbbb"

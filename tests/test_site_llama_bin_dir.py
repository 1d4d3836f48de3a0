"""The site file's `llama_bin_dir:`: read (an absolute path on one line, or a clear error naming
the key and its line), and the default of every `--llama-bin-dir` (doctor's survey, the
llama-rpc deploy's programs, the build's install folder and its last line, test decode
--calibrate's llama-server), the flag winning when given."""

from __future__ import annotations

import argparse
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


def _launched(document: object) -> list[str]:
    """The programs the plan's launcher is given to try, first choice first (each argv that
    runs llama-start.sh, from its mode on)."""
    found: list[str] = []
    if isinstance(document, dict):
        argv = document.get("argv")
        if isinstance(argv, list) and len(argv) > 6 and str(argv[1]).endswith("llama-start.sh"):
            found.append(argv[6])
        for value in document.values():
            found.extend(_launched(value))
    elif isinstance(document, list):
        for value in document:
            found.extend(_launched(value))
    return found


def test_the_llama_rpc_deploy_runs_the_sites_programs_and_the_flag_wins(tmp_path: Path) -> None:
    site = demo_site_with(tmp_path, "stack: llama-rpc\nllama_bin_dir: /opt/llama/bin\n")
    planned = invoke("deploy", "--site", str(site), "--gguf", "/m/model.gguf", "--json")
    assert planned.rc == 0, planned.stderr
    assert sorted(set(_launched(planned.json()))) == ["/opt/llama/bin/ggml-rpc-server",
                                                      "/opt/llama/bin/llama-server"]
    flagged = invoke("deploy", "--site", str(site), "--gguf", "/m/model.gguf", "--json",
                     "--llama-bin-dir", "/srv/other")
    assert sorted(set(_launched(flagged.json()))) == ["/srv/other/ggml-rpc-server",
                                                      "/srv/other/llama-server"]
    bare = demo_site_with(tmp_path / "bare", "stack: llama-rpc\n")
    unsaid = invoke("deploy", "--site", str(bare), "--gguf", "/m/model.gguf", "--json")
    assert sorted(set(_launched(unsaid.json()))) == ["ggml-rpc-server", "llama-server"]


def test_the_wizards_deploy_takes_the_sites_folder() -> None:
    """The wizard's Deploy step has no folder input: its plan (`DeployChoice.settings`, with the
    site) runs the site's programs, as the CLI's does."""
    from strixwizard.deploy.stacks.llama_rpc.llama import LlamaSettings
    from strixwizard.services.deploy import DeployChoice

    site = parse_site(BASE + "llama_bin_dir: /opt/llama/bin\n", "s.yaml")
    choice = DeployChoice(stack="llama-rpc")
    assert choice.settings(site).own(LlamaSettings).bin_dir == "/opt/llama/bin"  # type: ignore[union-attr]
    assert choice.settings().own(LlamaSettings).bin_dir is None  # type: ignore[union-attr]
    given = choice.with_option("llama_bin_dir", "/srv/other").settings(site)
    assert given.own(LlamaSettings).bin_dir == "/srv/other"  # type: ignore[union-attr]


def _build_args(flag: str | None) -> argparse.Namespace:
    return argparse.Namespace(build="/src/llama.cpp", build_backend=None, build_on=None,
                              build_timeout=60.0, build_dir="/var/tmp/b", build_jobs=0,
                              llama_bin_dir=flag)


@pytest.mark.parametrize(("site_dir", "flag", "installs", "next_flag"), [
    (None, None, "/usr/local/bin", ""),
    ("/opt/llama/bin", None, "/opt/llama/bin", ""),
    ("/opt/llama/bin", "/opt/llama/bin/", "/opt/llama/bin/", ""),
    ("/opt/llama/bin", "/srv/other", "/srv/other", " --llama-bin-dir /srv/other"),
    (None, "/srv/my dir", "/srv/my dir", " --llama-bin-dir '/srv/my dir'"),
])
def test_the_build_installs_in_the_sites_folder_and_its_last_line_needs_no_flag(
        site_dir: str | None, flag: str | None, installs: str, next_flag: str) -> None:
    from strixwizard.cli.llama_build import build_settings, next_step
    from strixwizard.deploy.plan import settings_from
    from strixwizard.site import Site

    site = Site(name="lab", llama_bin_dir=site_dir)
    settings = settings_from("llama-rpc", {"llama_bin_dir": flag, "rpc_device": []}, site=site)
    wanted = build_settings(_build_args(flag), settings, site_dir)
    assert wanted.bin_dir == installs and wanted.site_bin_dir == site_dir
    assert next_step(flag, site_dir, ["--site", "lab.yaml"]) == (
        f"Next: strixwizard doctor --site lab.yaml --stack llama-rpc{next_flag}, then strixwizard "
        f"deploy --site lab.yaml --stack llama-rpc --gguf MODEL --apply{next_flag}")


def test_the_build_plan_suggests_the_site_file_when_doctor_would_not_look() -> None:
    from strixwizard.deploy.stacks.llama_rpc.recipe import BuildSettings, plan_build

    machines = {"a": "x86_64"}

    def hints(settings: BuildSettings) -> list[str]:
        return [line for line in plan_build(settings, machines, "cpu", "").lines()
                if line.startswith("doctor --stack llama-rpc looks")]

    assert hints(BuildSettings("/s", bin_dir="/opt/llama/bin", site_bin_dir="/opt/llama/bin")) == []
    assert hints(BuildSettings("/s")) == []
    bare = hints(BuildSettings("/s", bin_dir="/srv/llama"))
    assert len(bare) == 1 and bare[0].endswith(
        "give it --llama-bin-dir /srv/llama to look there first, or put `llama_bin_dir: "
        "/srv/llama` in the site file once (doctor, deploy and test decode then look there "
        "unasked)."), bare
    other = hints(BuildSettings("/s", bin_dir="/srv/llama", site_bin_dir="/opt/llama/bin"))
    assert len(other) == 1 and other[0].endswith(
        "and in the site file's llama_bin_dir: /opt/llama/bin: give it --llama-bin-dir "
        "/srv/llama to look there first."), other


def test_decode_calibration_runs_the_sites_llama_server_and_the_flag_wins() -> None:
    from strixwizard.decode.calibrate import CalibrationSettings
    from strixwizard.decode.measure import DecodeSettings
    from strixwizard.live.kinds.decode import calibration_settings, with_site_bin_dir

    def server(flag: str | None, site_dir: str | None) -> str | None:
        calibration = calibration_settings(argparse.Namespace(
            calibrate=True, model="/m/model.gguf", llama_bin_dir=flag))
        decode = DecodeSettings(sizes=(4096,), primary=4096, calibration=calibration)
        chosen = with_site_bin_dir(decode, site_dir).calibration
        return chosen.server if isinstance(chosen, CalibrationSettings) else None

    assert server(None, None) == "llama-server"
    assert server(None, "/opt/llama/bin") == "/opt/llama/bin/llama-server"
    assert server("/srv/other", "/opt/llama/bin") == "/srv/other/llama-server"
    plain = DecodeSettings(sizes=(4096,), primary=4096)
    assert with_site_bin_dir(plain, "/opt/llama/bin") is plain  # no --calibrate: nothing runs

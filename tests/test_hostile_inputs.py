"""Hostile site files and inventories (the corpus under tests/data/hostile/): each is refused with
one clear line naming the file, exit 2 and a valid `--json` error document, in bounded memory,
reading nothing but the file itself and writing nothing at all.

Each corpus file starts with `# expect: MESSAGE`, the text its refusal must contain.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

import jsonschema
import pytest

from strixwizard.site import MAX_FILE_BYTES, SiteError, load_site
from tests.support.cli import ROOT, SCHEMA_PATH

CORPUS = Path(__file__).parent / "data" / "hostile"
SITES = sorted((CORPUS / "sites").glob("*.yaml"))
INVENTORIES = sorted((CORPUS / "inventories").glob("*.yaml"))
#: The doctor process may use this much address space; an input that needs more is a bug.
MEMORY_CAP = 1024 * 1024 * 1024

#: Runs the CLI with an audit hook that records every file opened, and lists them (after the
#: run, so the list's own file is not in it) in the file SW_AUDIT_LOG names.
RUNNER = r"""
import os, sys
opened = []
def hook(event, args):
    if event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
        opened.append([os.fsdecode(args[0]), str(args[1]), int(args[2] or 0)])
sys.addaudithook(hook)
from strixwizard.cli.main import main
code = main(sys.argv[1:])
import json
log = json.dumps(opened)
with open(os.environ["SW_AUDIT_LOG"], "w") as handle:
    handle.write(log)
raise SystemExit(code)
"""


class Run:
    def __init__(self, done: subprocess.CompletedProcess[str], opened: list[list[object]]) -> None:
        self.rc = done.returncode
        self.stdout = done.stdout
        self.stderr = done.stderr
        self.opened = opened


def doctor_capped(*args: str, cwd: Path) -> Run:
    """`strixwizard doctor ARGS` under an address-space cap, with HOME in a scratch folder."""
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))

    with tempfile.TemporaryDirectory(prefix="sw-audit-") as scratch:
        log = Path(scratch) / "opened.json"
        env = {**os.environ, "HOME": str(cwd), "PYTHONPATH": str(ROOT), "NO_COLOR": "1",
               "PYTHONDONTWRITEBYTECODE": "1",
               "SW_AUDIT_LOG": str(log)}
        done = subprocess.run(
            [sys.executable, "-c", RUNNER, "doctor", *args], capture_output=True, text=True,
            timeout=60, check=False, stdin=subprocess.DEVNULL, preexec_fn=limit, cwd=cwd, env=env,
        )
        opened = json.loads(log.read_text()) if log.exists() else None
    assert opened is not None, f"the run did not finish: {done.stderr}"
    assert any("strixwizard/cli" in str(o[0]).replace("__pycache__/", "") for o in opened), (
        "the audit hook saw no import")
    return Run(done, opened)


def _python_file(path: str) -> bool:
    """Python's own files and the project's modules: not input."""
    real = os.path.realpath(path)
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, str(ROOT / "strixwizard"),
             str(ROOT / "checks"), str(ROOT / "fixes"), "/usr/lib/python3", "/usr/local/lib/python3"}
    return any(real.startswith(os.path.realpath(r)) for r in roots) or real.endswith(".pth")


def _expected(path: Path) -> str:
    first = path.read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith("# expect: "), f"{path.name} names no expected message"
    return first.removeprefix("# expect: ")


def _refused_in_one_line(option: str, path: Path, message: str, tmp_path: Path) -> None:
    text = doctor_capped(option, str(path), cwd=tmp_path)
    assert text.rc == 2, text.stdout + text.stderr
    assert "Traceback" not in text.stderr
    lines = text.stderr.strip().splitlines()
    assert len(lines) == 1, text.stderr
    assert lines[0].startswith(f"strixwizard: error: {path}") and message in lines[0]
    writes = [o for o in text.opened if o[2] & (os.O_WRONLY | os.O_RDWR | os.O_CREAT)
              or any(m in str(o[1]) for m in "wax+")]
    assert writes == []
    inputs = {o[0] for o in text.opened if not _python_file(str(o[0]))}
    assert inputs == {str(path)}, inputs  # the input itself, and nothing else
    assert list(tmp_path.iterdir()) == []  # nothing written in the working folder or HOME
    as_json = doctor_capped("--json", option, str(path), cwd=tmp_path)
    assert as_json.rc == 2 and "Traceback" not in as_json.stderr
    document = json.loads(as_json.stdout)
    jsonschema.validate(document, json.loads(SCHEMA_PATH.read_text()))
    assert document["status"] == "error" and message in document["error"]


@pytest.mark.parametrize("path", SITES, ids=lambda p: p.stem)
def test_hostile_site_file_is_refused_in_one_line(path: Path, tmp_path: Path) -> None:
    message = _expected(path)
    with pytest.raises(SiteError, match=None) as caught:
        load_site(path)
    assert message in str(caught.value) and str(caught.value).startswith(f"{path}:")
    _refused_in_one_line("--site", path, message, tmp_path)


@pytest.mark.parametrize("path", INVENTORIES, ids=lambda p: p.stem)
def test_hostile_inventory_is_refused_in_one_line(path: Path, tmp_path: Path) -> None:
    from strixwizard.inventory import load_inventory

    message = _expected(path)
    with pytest.raises(SiteError) as caught:
        load_inventory(path)
    assert message in str(caught.value) and str(caught.value).startswith(f"{path}:")
    _refused_in_one_line("--inventory", path, message, tmp_path)


def _deep_yaml(path: Path) -> Path:
    path.write_text("site: " + "[" * 20000 + "]" * 20000 + "\n")
    return path


def _deep_groups(path: Path) -> Path:
    lines = ["all:"]
    for depth in range(40):
        lines.append("  " * (2 * depth + 1) + "children:")
        lines.append("  " * (2 * depth + 2) + f"g{depth}:")
    path.write_text("\n".join(lines) + "\n")
    return path


def _too_large(path: Path) -> Path:
    with path.open("wb") as handle:
        handle.truncate(MAX_FILE_BYTES + 10)  # sparse: no disk used
    return path


def _not_utf8(path: Path) -> Path:
    path.write_bytes(b"site: \xff\xfe\x00\x00\n")
    return path


GENERATED = {
    "site-nested-20000-deep": ("--site", _deep_yaml, "nested too deeply"),
    "inventory-groups-40-deep": ("--inventory", _deep_groups, "groups nest deeper than 32 levels"),
    "site-larger-than-the-cap": ("--site", _too_large, "is larger than 4 MiB"),
    "inventory-larger-than-the-cap": ("--inventory", _too_large, "is larger than 4 MiB"),
    "site-not-utf8": ("--site", _not_utf8, "not UTF-8"),
}


@pytest.mark.parametrize("case", sorted(GENERATED))
def test_generated_hostile_input_is_refused_in_one_line(case: str, tmp_path: Path) -> None:
    option, make, message = GENERATED[case]
    inputs = tmp_path / "in"
    inputs.mkdir()
    path = make(inputs / f"{case}.yaml")
    work = tmp_path / "work"
    work.mkdir()
    _refused_in_one_line(option, path, message, work)


@pytest.mark.parametrize("option", ["--site", "--inventory"])
def test_a_device_is_refused_without_reading_it(option: str, tmp_path: Path) -> None:
    text = doctor_capped(option, "/dev/zero", cwd=tmp_path)
    assert text.rc == 2 and "Traceback" not in text.stderr
    assert text.stderr.strip() == (
        f"strixwizard: error: /dev/zero: the {'site file' if option == '--site' else 'inventory'} "
        "is not a regular file"
    )


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "in" / "site.yaml"
    fifo.parent.mkdir()
    os.mkfifo(fifo)
    work = tmp_path / "work"
    work.mkdir()
    text = doctor_capped("--site", str(fifo), cwd=work)
    assert text.rc == 2 and "is not a regular file" in text.stderr


def test_exit_127_names_the_program_that_is_missing() -> None:
    """`sh -c '... exec ray ...'` ending with 127 means `ray` is missing, not `sh`."""
    from strixwizard.facts.source import why_unknown
    from strixwizard.probe import RC_NOT_FOUND, CmdResult

    argv = ("sh", "-c", "set -e; export X=1; exec ray status", "sw")
    missing = CmdResult(argv, RC_NOT_FOUND, "", "sh: 1: exec: ray: not found")
    assert why_unknown(argv, missing) == "`ray` is not installed on the node"
    assert why_unknown(("ethtool", "-i", "x"), CmdResult(("ethtool",), RC_NOT_FOUND, "", "")) == (
        "`ethtool` is not installed on the node")

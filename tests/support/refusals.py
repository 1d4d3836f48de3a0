"""Bad input files refused as a user meets the refusal: `strixwizard doctor` on a site file or an
inventory, under an address-space cap and with an audit hook that lists every file the run
opened. The refusal is one line naming the file, exit 2 and a valid `--json` error document, in
bounded memory, reading nothing but the file itself and writing nothing at all. The corpus of such
files is tests/data/hostile/.
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

from tests.support.cli import ROOT, SCHEMA_PATH

#: Site files and inventories a user may be handed; each starts with `# expect: MESSAGE`.
CORPUS = Path(__file__).parent.parent / "data" / "hostile"
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
    """A finished `doctor` run and the files it opened, as [path, mode, flags]."""

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


def expected_message(path: Path) -> str:
    """The text a corpus file's refusal must contain (its first line, `# expect: MESSAGE`)."""
    first = path.read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith("# expect: "), f"{path.name} names no expected message"
    return first.removeprefix("# expect: ")


def refused_in_one_line(option: str, path: Path, message: str, tmp_path: Path) -> None:
    """`doctor OPTION PATH` (and with `--json`) refuses the file in one line naming it, exit 2, a
    valid error document, reading nothing but the file and writing nothing (`tmp_path`, its
    working folder and HOME, stays empty)."""
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

"""The llama.cpp build on the nodes (`deploy --stack llama-rpc --build SOURCE`): the source
packed on the head and sent to the build node, compiled there under the supervisor (bounded
time, progress from cmake's `[ NN%]` lines), the log copied back, the two programs copied
byte for byte to the other nodes of the same machine through the head, then installed on every
one of them by the executor (journalled; `deploy --rollback` puts back what was there).

Every script sent to a node is fixed text; paths and flags reach it as argv values
(`sh -c SCRIPT sh VALUE...`). The recipe (flags, tools, the plan) is `recipe.py`.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import re
import signal
import tarfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from strixwizard.deploy.stacks.llama_rpc.recipe import (
    ARCH,
    PREFLIGHT,
    PROGRAMS,
    BuildPlan,
    version_flags,
)
from strixwizard.fixing.model import BEFORE, Kind, Plan, Read, SitePlan, Step
from strixwizard.fixing.runner import SessionRunner, StepFailed
from strixwizard.node import signals
from strixwizard.node.channel import ReadBytes, Run, WriteBytes
from strixwizard.node.errors import OpRefused
from strixwizard.node.signals import Interrupted

#: How much of a file one request moves (base64 on the wire: a third more).
CHUNK = 4 * 1024 * 1024
MARK = "strixwizard-build:"
#: Top-level folders of a llama.cpp tree the build does not read (models/ holds vocab files
#: for the tests, docs/ and media/ pictures): left out of what is sent to the build node.
LEFT_OUT = frozenset({".git", "models", "docs", "media", ".github", ".devops"})
PROGRESS = re.compile(r"^\[ *\d+%\]")

#: `sh -c BUILD sh DIR ARCHIVE JOBS FLAG...`: unpack (once per archive), configure, compile
#: both programs, stage them in DIR/bin. The whole output goes to DIR/build.log; what reaches
#: the head is bounded whatever the compiler prints (a HIP build's warnings run to megabytes):
#: lines starting with MARK (where it is), cmake's `[ NN%]` lines, and on a failure the log's
#: last 25 lines.
BUILD = r"""dir=$1; archive=$2; jobs=$3; shift 3
src="$dir/src"; build="$dir/build"; log="$dir/build.log"; out="$dir/bin"
say() { echo "strixwizard-build: $*"; }
stamp=$(sha256sum "$archive" | cut -d' ' -f1) || exit 3
if [ "$(cat "$dir/src.sha256" 2>/dev/null)" != "$stamp" ]; then
  say "unpack the source"
  rm -rf "$src" "$build" "$dir/src.sha256" && mkdir -p "$src" && tar -xzf "$archive" -C "$src" \
    || { say "cannot unpack $archive"; exit 3; }
  echo "$stamp" >"$dir/src.sha256"
fi
root=
for d in "$src" "$src"/*; do
  if [ -f "$d/CMakeLists.txt" ] && [ -d "$d/ggml" ]; then root=$d; break; fi
done
[ -n "$root" ] || { say "no llama.cpp tree (CMakeLists.txt beside ggml/) in the source"; exit 3; }
case $jobs in ''|0|*[!0-9]*) jobs=$(nproc 2>/dev/null || echo 2) ;; esac
say "configure"
{ echo "+ cmake -S $root -B $build $*"; cmake -S "$root" -B "$build" "$@"; } >"$log" 2>&1 \
  || { tail -n 25 "$log"; say "configure failed"; exit 3; }
say "compile ggml-rpc-server and llama-server with $jobs jobs"
rm -f "$dir/.status"
{ cmake --build "$build" -j "$jobs" --target ggml-rpc-server llama-server 2>&1
  echo $? >"$dir/.status"; } | tee -a "$log" | grep --line-buffered -E '^\[ *[0-9]+%\]'
[ "$(cat "$dir/.status" 2>/dev/null)" = 0 ] || { tail -n 25 "$log"; say "compile failed"; exit 4; }
rm -rf "$out.new" && mkdir -p "$out.new" \
  && cp "$build/bin/ggml-rpc-server" "$build/bin/llama-server" "$out.new/" \
  && rm -rf "$out" && mv "$out.new" "$out" || { say "cannot stage the programs in $out"; exit 3; }
say "done"
"""

#: `sh -c SHA256 sh PATH`: the file's sha256, nothing when there is no file.
SHA256 = 'if [ -f "$1" ]; then sha256sum "$1" | cut -d" " -f1; fi'
#: `sh -c INSTALL sh STAGED DEST`: the previous program kept beside it, the new one renamed in.
INSTALL = r"""set -e
staged=$1; dest=$2
mkdir -p "$(dirname "$dest")"
if [ -f "$dest" ]; then cp -p "$dest" "$dest.strixwizard-before"; fi
cp "$staged" "$dest.strixwizard-new"
chmod 755 "$dest.strixwizard-new"
mv -f "$dest.strixwizard-new" "$dest"
"""
#: `sh -c RESTORE sh DEST BEFORE`: the program that was there (sha256 BEFORE) back, or none.
RESTORE = r"""dest=$1; before=$2
if [ -z "$before" ]; then rm -f "$dest"; exit 0; fi
kept="$dest.strixwizard-before"
if [ -f "$kept" ] && [ "$(sha256sum "$kept" | cut -d' ' -f1)" = "$before" ]; then
  mv -f "$kept" "$dest"
else
  echo "no copy of the previous $dest (sha256 $before) is kept" >&2; exit 1
fi
"""


class BuildRefused(Exception):
    """Nothing was changed: a missing tool, a source that is not a llama.cpp tree."""


def source_version_flags(source: Path) -> tuple[str, ...]:
    """The commit and build number of a git checkout given as the source (read with git on this
    machine, bounded), as CMake flags; () for an archive, a tree without `.git` or no git."""
    import subprocess

    if not (source.is_dir() and (source / ".git").exists()):
        return ()
    answers = []
    for words in (("rev-parse", "--short", "HEAD"), ("rev-list", "--count", "HEAD")):
        try:
            done = subprocess.run(["git", "-C", str(source), *words], capture_output=True,
                                  text=True, timeout=30, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return ()
        if done.returncode != 0:
            return ()
        answers.append(done.stdout)
    return version_flags(*answers)


def source_archive(source: Path) -> bytes:
    """The source as a .tar.gz: a given archive as it is, a tree packed here (sorted, fixed
    times in the gzip header, so the same tree gives the same bytes and is not sent twice)."""
    if source.is_file():
        try:
            with tarfile.open(source, "r:gz") as archive:
                names = archive.getnames()
        except (tarfile.TarError, OSError, EOFError) as error:
            raise BuildRefused(f"--build {source}: not a .tar.gz ({error})") from None
        if not any(re.fullmatch(r"(\./)?([^/]+/)?CMakeLists\.txt", n) for n in names) or not any(
                re.fullmatch(r"(\./)?([^/]+/)?ggml", n) for n in names):
            raise BuildRefused(f"--build {source}: no llama.cpp tree in it (CMakeLists.txt "
                               "beside ggml/, at its top or one folder down)")
        return source.read_bytes()
    if not source.is_dir():
        raise BuildRefused(f"--build {source}: no such folder or .tar.gz on this machine")
    if not (source / "CMakeLists.txt").is_file() or not (source / "ggml").is_dir():
        raise BuildRefused(f"--build {source}: not a llama.cpp tree (CMakeLists.txt beside "
                           "ggml/); `git clone --branch bNNNN https://github.com/ggml-org/llama.cpp` "
                           "makes one")
    packed = io.BytesIO()
    with gzip.GzipFile(fileobj=packed, mode="wb", mtime=0, compresslevel=6) as zipped, \
            tarfile.open(fileobj=zipped, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for path in sorted(source.iterdir()):
            if path.name in LEFT_OUT or path.name.startswith("build"):
                continue
            archive.add(path, arcname=f"llama.cpp/{path.name}", recursive=True,
                        filter=_plain_member)
    return packed.getvalue()


def _plain_member(member: tarfile.TarInfo) -> tarfile.TarInfo | None:
    """Files, folders and links only, owned by nobody in particular."""
    if not (member.isfile() or member.isdir() or member.issym()):
        return None
    member.uid = member.gid = 0
    member.uname = member.gname = ""
    return member


@dataclass
class BuildOutcome:
    """How far the build went. `state`: built, failed, timed-out, stopped, lost."""

    state: str
    message: str = ""
    log_on_head: str | None = None
    log_not_copied: str = ""  # why the log is only on the node (the head's write failed)
    sha256: dict[str, str] = field(default_factory=dict)
    progress_lines: int = 0
    signal: int | None = None  # the head's signal that stopped it

    @property
    def ok(self) -> bool:
        return self.state == "built"


def run_text(runner: SessionRunner, argv: tuple[str, ...]) -> str:
    """A short command's stdout on the node (through the ops channel); refused: StepFailed."""
    try:
        done = runner.send(Run(argv))
    except OpRefused as refused:
        raise StepFailed(str(refused)) from None
    if done.rc != 0:
        raise StepFailed(f"{runner.node}: `{argv[0]} {argv[1] if len(argv) > 1 else ''}` "
                         f"failed ({done.rc}): {(done.stderr or done.stdout).strip()[-500:]}")
    return done.stdout


def preflight(runner: SessionRunner, backend: str) -> str:
    return run_text(runner, ("sh", "-c", PREFLIGHT, "sh", backend))


def machine(runner: SessionRunner) -> str:
    return run_text(runner, ("sh", "-c", ARCH)).strip()


def sha256_on(runner: SessionRunner, path: str) -> str:
    return run_text(runner, ("sh", "-c", SHA256, "sh", path)).strip()


def send_bytes(runner: SessionRunner, path: str, data: bytes) -> None:
    """`data` as the file `path` on the node, in pieces, checked by its sha256 there."""
    run_text(runner, ("mkdir", "-p", path.rsplit("/", 1)[0] or "/"))
    for offset in range(0, max(len(data), 1), CHUNK):
        runner.send(WriteBytes(path, offset, data[offset:offset + CHUNK]))
    want = hashlib.sha256(data).hexdigest()
    if (got := sha256_on(runner, path)) != want:
        raise StepFailed(f"{runner.node}: {path} arrived with sha256 {got or 'none'}, not {want}")


def fetch_bytes(runner: SessionRunner, path: str) -> bytes:
    """The file `path` from the node, in pieces."""
    data = bytearray()
    while True:
        chunk = runner.send(ReadBytes(path, len(data), CHUNK))
        data.extend(chunk.data)
        if not chunk.data or len(data) >= chunk.size:
            return bytes(data)


Say = Callable[[str], None]


def compile_on(plan: BuildPlan, runner: SessionRunner, archive: bytes, head_logs: Path,
               say: Say) -> BuildOutcome:
    """Send the source, compile on the build node under the supervisor, copy the log here."""
    s = plan.settings
    node = plan.build_on
    archive_path = f"{s.build_dir.rstrip('/')}/source.tar.gz"
    if sha256_on(runner, archive_path) != hashlib.sha256(archive).hexdigest():
        say(f"{node}: sending the source ({len(archive) / 1e6:.1f} MB) to {archive_path}")
        send_bytes(runner, archive_path, archive)
    argv = ("sh", "-c", BUILD, "sh", s.build_dir, archive_path, str(s.jobs), *plan.flags)
    process = runner.session.start(argv, s.timeout_s, label="llama.cpp build")
    outcome = BuildOutcome("failed")
    shown = 0
    try:
        while True:
            ended = process.wait(1.0)
            lines = process.stdout.splitlines()
            complete = lines if ended else lines[:-1]  # the last one may be half written
            for line in complete[shown:]:
                if PROGRESS.match(line):
                    outcome.progress_lines += 1
                    say(f"{node}: {line.strip()}")
                elif line.startswith(MARK):
                    say(f"{node}: {line[len(MARK):].strip()}")
            shown = len(complete)
            if ended:
                break
    except (KeyboardInterrupt, Interrupted) as stopped:  # Ctrl-C, SIGTERM, SIGHUP on the head
        process.stop()
        outcome.signal = stopped.signum if isinstance(stopped, Interrupted) else signal.SIGINT
        outcome.state, outcome.message = "stopped", (
            f"was interrupted by {signals.name(outcome.signal)} on this machine")
    else:
        status = process.status
        process.stop()
        if status == 0:
            outcome.state = "built"
        elif status == 124:
            outcome.state, outcome.message = "timed-out", f"ran past {s.timeout_s:g} s"
        elif status is None:
            outcome.state, outcome.message = "lost", "lost its connection"
        elif status > 128:
            outcome.state, outcome.message = "stopped", f"was stopped by signal {status - 128}"
        else:
            tail = "; ".join(line for line in process.stdout.splitlines()[-6:] if line.strip())
            outcome.message = f"failed (exit {status}): {tail}"
    outcome.log_on_head, outcome.log_not_copied = _copy_log(runner, plan, head_logs)
    if outcome.ok:
        for program in PROGRAMS:
            outcome.sha256[program] = sha256_on(runner, s.staged(program))
    return outcome


def _copy_log(runner: SessionRunner, plan: BuildPlan, head_logs: Path) -> tuple[str | None, str]:
    """The build log copied into this machine's private state folder (files.py's one rule
    for its folders): its path, or None and why (the node's log is kept either way; a full
    disk or a refused folder here does not undo a build that finished)."""
    from strixwizard.files import private_dir

    try:
        text = fetch_bytes(runner, plan.settings.log)
    except (OpRefused, StepFailed) as error:
        return None, f"not read from {plan.build_on}: {error}"
    path = head_logs / f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{plan.build_on}.log"
    try:
        private_dir(head_logs, "or set XDG_STATE_HOME to another folder")
        path.write_bytes(text)
    except OSError as error:
        with contextlib.suppress(OSError):  # a half-written copy (a full disk) is not kept
            path.unlink(missing_ok=True)
        return None, f"not copied to this machine: {error}"
    return str(path), ""


def ship(plan: BuildPlan, runners: dict[str, SessionRunner], sha256: dict[str, str],
         say: Say) -> None:
    """The build node's staged programs to the same place on every node that gets a copy."""
    source = runners[plan.build_on]
    for program in PROGRAMS:
        staged = plan.settings.staged(program)
        data = fetch_bytes(source, staged)
        if hashlib.sha256(data).hexdigest() != sha256[program]:
            raise StepFailed(f"{plan.build_on}: {staged} changed while it was read")
        for node in plan.copies:
            say(f"{node}: copying {program} ({len(data) / 1e6:.1f} MB) from {plan.build_on}")
            send_bytes(runners[node], staged, data)


def install_plan(plan: BuildPlan, site: str, sha256: dict[str, str], commit: str) -> SitePlan:
    """The executor's plan: each program renamed into the install folder on every node (a
    node already holding these bytes plans nothing); one group, so a failing node rolls every
    node back and no two nodes are left with different builds."""
    s = plan.settings
    out = SitePlan(site)
    for node in plan.installs:
        steps = tuple(Step(
            kind=Kind.COMMAND, target=s.installed(program),
            summary=f"install {program} (sha256 {sha256[program][:12]}, {commit}) in {s.bin_dir}",
            read=Read("command", argv=("sh", "-c", SHA256, "sh", s.installed(program))),
            before=None, after=sha256[program],
            argv=("sh", "-c", INSTALL, "sh", s.staged(program), s.installed(program)),
            undo_argv=("sh", "-c", RESTORE, "sh", s.installed(program), BEFORE),
            before_known=False) for program in PROGRAMS)
        out.plans.append(Plan("llama.build", node, s.bin_dir, steps,
                              persistence="files in the install folder",
                              group=f"llama.cpp build {commit}"))
    return out

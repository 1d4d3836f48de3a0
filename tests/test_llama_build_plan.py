"""The llama.cpp build command's plan and its parts, without the lab: the flags per backend
(and the docs' recipe agreeing with them), the preflight's missing tools and the packages it
names, other machines, the install and restore scripts run for real in a folder here, the
copy ops, and the build itself under the supervisor on this machine with a small CMake project
standing in for llama.cpp (labelled: the real one is built in tests/test_doctor_llama_builds_lab.py),
finished, and stopped by its time limit.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
from pathlib import Path

import pytest

from strixwizard.deploy.stacks.llama_rpc import build as on_nodes
from strixwizard.deploy.stacks.llama_rpc.recipe import (
    COMMON_FLAGS,
    PREFLIGHT,
    BuildSettings,
    flags,
    missing_error,
    parse_preflight,
    plan_build,
    stopped_state,
)
from strixwizard.fixing.runner import LocalRunner
from strixwizard.node.channel import ReadBytes, WriteBytes, here
from tests.support.llama_parts import stand_in_tree

ROOT = Path(__file__).resolve().parents[1]


def test_every_backend_builds_rpc_with_rdma_static_and_not_native() -> None:
    for backend in ("vulkan", "hip", "cpu"):
        got = flags(backend)
        for flag in ("-DGGML_RPC=ON", "-DGGML_RPC_RDMA=ON", "-DBUILD_SHARED_LIBS=OFF",
                     "-DGGML_NATIVE=OFF"):
            assert flag in got, (backend, got)
    assert flags("vulkan")[len(COMMON_FLAGS):] == ("-DGGML_VULKAN=ON",)
    assert flags("hip")[len(COMMON_FLAGS):] == ("-DGGML_HIP=ON", "-DGPU_TARGETS=gfx1151")
    assert flags("cpu") == COMMON_FLAGS
    with pytest.raises(ValueError, match="no backend 'cuda'"):
        flags("cuda")


def test_the_documented_recipe_carries_the_declared_flags() -> None:
    """docs/llama-cpp.md's manual recipe and the command build the same thing."""
    text = (ROOT / "docs" / "llama-cpp.md").read_text()
    recipe = text.split("### By hand", 1)[1].split("\n## ", 1)[0]
    for backend in ("vulkan", "hip"):
        lines = [line for line in recipe.splitlines() if "cmake -B build" in line or
                 line.lstrip("# ").startswith("-D") or "-DGGML_HIP" in line]
        block = " ".join(lines)
        for flag in flags(backend):
            assert flag in block, (backend, flag)


def preflight_here(tmp_path: Path, backend: str, tools: tuple[str, ...]) -> str:
    """The real preflight script with only `tools` (and uname) on its PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for tool in ("uname", *tools):
        found = subprocess.run(["sh", "-c", f"command -v {tool}"], capture_output=True,
                               text=True, check=True).stdout.strip()
        (bin_dir / tool).symlink_to(found)
    done = subprocess.run(["/bin/sh", "-c", PREFLIGHT, "sh", backend], capture_output=True,
                          text=True, env={"PATH": str(bin_dir)}, check=True)
    return done.stdout


def test_the_preflight_names_each_missing_tool_and_its_packages(tmp_path: Path) -> None:
    missing, arch = parse_preflight(preflight_here(tmp_path, "vulkan", ("tar",)))
    assert arch == os.uname().machine
    assert {"cmake", "make", "a C++ compiler", "glslc"} <= set(missing)
    assert "tar" not in missing
    error = missing_error("node-a", "vulkan", missing)
    assert error.startswith("node-a cannot build llama.cpp (vulkan): cmake, make, a C++ compiler")
    assert "Fedora: sudo dnf install cmake make gcc-c++" in error and "glslc" in error
    assert "Ubuntu/Debian: sudo apt install cmake make g++" in error
    assert error.endswith("Nothing was changed.")
    hip = missing_error("node-a", "hip", ("libibverbs headers", "hipconfig"))
    assert "dnf install rdma-core-devel rocm-hip-devel" in hip
    assert "apt install libibverbs-dev rocm-hip-sdk" in hip


def test_a_node_of_another_machine_is_told_to_build_its_own() -> None:
    settings = BuildSettings("/src/llama.cpp")
    plan = plan_build(settings, {"a": "x86_64", "b": "x86_64", "spark": "aarch64"}, "vulkan", "x")
    assert (plan.build_on, plan.copies, plan.own_build) == ("a", ("b",), (("spark", "aarch64"),))
    assert plan.installs == ("a", "b")
    lines = plan.lines()
    assert any(line.startswith("spark is aarch64, not x86_64: it needs its own build of the "
                               "same commit") for line in lines), lines
    on_b = plan_build(BuildSettings("/s", build_on="b"), {"a": "x86_64", "b": "x86_64"}, "cpu", "")
    assert (on_b.build_on, on_b.copies) == ("b", ("a",))
    with pytest.raises(ValueError, match="--build-on c: not a node"):
        plan_build(BuildSettings("/s", build_on="c"), {"a": "x86_64"}, "cpu", "")


def test_an_install_folder_doctor_does_not_look_in_is_said() -> None:
    machines = {"a": "x86_64"}
    seen = plan_build(BuildSettings("/s"), machines, "cpu", "").lines()
    assert not any("--llama-bin-dir" in line for line in seen)
    unseen = plan_build(BuildSettings("/s", bin_dir="/srv/llama"), machines, "cpu", "").lines()
    assert any(line.startswith("doctor --stack llama-rpc looks on root's PATH and in /usr/local/bin")
               and "give it --llama-bin-dir /srv/llama to look there first, or put "
               "`llama_bin_dir: /srv/llama` in the site file once" in line
               for line in unseen), unseen


def test_the_survey_looks_in_the_given_folder_first(tmp_path: Path) -> None:
    """facts/llama_cpp.py's script, run here: a folder given as its argument (an argv value,
    spaces and all) wins over PATH; without it the programs there are not seen."""
    from strixwizard.facts.llama_cpp import parse_programs, survey_argv

    folder = tmp_path / "my llama"
    folder.mkdir()
    (folder / "llama-server").write_text(
        "#!/bin/sh\necho 'version: 0.4.1-dev (build 10991, commit 930e2fa59)'\n")
    (folder / "ggml-rpc-server").write_text("#!/bin/sh\n# RDMA activated\n")
    for program in folder.iterdir():
        program.chmod(0o755)
    env = {"PATH": "/usr/bin:/bin"}
    found = subprocess.run(list(survey_argv(str(folder))), capture_output=True, text=True,
                           env=env, check=True).stdout
    build = parse_programs(found)
    assert [p.path for p in build.programs] == [str(folder / "ggml-rpc-server"),
                                                str(folder / "llama-server")]
    assert build.commit == "930e2fa59" and build.programs[0].rdma
    plain = subprocess.run(list(survey_argv()), capture_output=True, text=True, env=env,
                           check=True).stdout
    assert str(folder) not in plain


def test_a_stopped_build_names_its_state_and_the_next_command() -> None:
    plan = plan_build(BuildSettings("/s", timeout_s=60, build_dir="/var/tmp/b"),
                      {"a": "x86_64", "b": "x86_64"}, "cpu", "")
    text = stopped_state(plan, "ran past 60 s", "/home/u/log", "strixwizard deploy ... "
                         "--build-timeout 120 --apply")
    assert text == ("The build on a ran past 60 s: it was stopped there and nothing was installed "
                    "on any node. /var/tmp/b keeps what was compiled (the next build continues "
                    "from it); the log: /var/tmp/b/build.log on a, copied to /home/u/log. Next: "
                    "strixwizard deploy ... --build-timeout 120 --apply")


def test_the_install_steps_carry_paths_as_argv_values_and_share_one_group() -> None:
    plan = plan_build(BuildSettings("/s", bin_dir="/opt/my dir", build_dir="/b"),
                      {"a": "x86_64", "b": "x86_64"}, "cpu", "")
    sha = {"ggml-rpc-server": "1" * 64, "llama-server": "2" * 64}
    site_plan = on_nodes.install_plan(plan, "lab", sha, "commit abc")
    assert [p.node for p in site_plan.plans] == ["a", "b"]
    assert {p.group for p in site_plan.plans} == {"llama.cpp build commit abc"}
    step = site_plan.plans[0].steps[0]
    assert step.argv == ("sh", "-c", on_nodes.INSTALL, "sh", "/b/bin/ggml-rpc-server",
                         "/opt/my dir/ggml-rpc-server")
    assert step.after == "1" * 64 and "/opt/my dir" not in on_nodes.INSTALL


def test_install_then_restore_puts_back_what_was_there(tmp_path: Path) -> None:
    staged, dest = tmp_path / "staged", tmp_path / "bin" / "llama-server"
    staged.write_bytes(b"new build")
    dest.parent.mkdir()
    dest.write_bytes(b"old build")

    def sh(script: str, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["sh", "-c", script, "sh", *args], capture_output=True, text=True,
                              check=False)

    before = sh(on_nodes.SHA256, str(dest)).stdout.strip()
    assert before == hashlib.sha256(b"old build").hexdigest()
    assert sh(on_nodes.INSTALL, str(staged), str(dest)).returncode == 0
    assert dest.read_bytes() == b"new build" and os.access(dest, os.X_OK)
    assert sh(on_nodes.RESTORE, str(dest), before).returncode == 0
    assert dest.read_bytes() == b"old build"
    # nothing was there before: the rollback removes the program
    assert sh(on_nodes.INSTALL, str(staged), str(tmp_path / "none")).returncode == 0
    assert sh(on_nodes.RESTORE, str(tmp_path / "none"), "").returncode == 0
    assert not (tmp_path / "none").exists()
    refused = sh(on_nodes.RESTORE, str(dest), "f" * 64)
    assert refused.returncode == 1 and "no copy of the previous" in refused.stderr
    assert sh(on_nodes.SHA256, str(tmp_path / "absent")).stdout == ""


def test_bytes_cross_the_ops_channel_whole(tmp_path: Path) -> None:
    data = bytes(range(256)) * 5000
    path = str(tmp_path / "copy")
    here(WriteBytes(path, 0, data[:1000]))
    here(WriteBytes(path, 1000, data[1000:]))
    assert Path(path).read_bytes() == data
    first = here(ReadBytes(path, 0, 700))
    assert first.data == data[:700] and first.size == len(data)
    assert here(ReadBytes(path, len(data), 10)).data == b""


def test_a_source_that_is_not_llama_cpp_is_refused(tmp_path: Path) -> None:
    with pytest.raises(on_nodes.BuildRefused, match=r"not a llama\.cpp tree"):
        on_nodes.source_archive(tmp_path)
    with pytest.raises(on_nodes.BuildRefused, match="no such folder"):
        on_nodes.source_archive(tmp_path / "absent")
    (tmp_path / "x.tar.gz").write_bytes(b"not gzip")
    with pytest.raises(on_nodes.BuildRefused, match=r"not a \.tar\.gz"):
        on_nodes.source_archive(tmp_path / "x.tar.gz")


@pytest.fixture
def local_runner(tmp_path: Path):  # type: ignore[no-untyped-def]
    runner = LocalRunner("here")
    yield runner
    runner.close()


def test_the_build_runs_under_its_time_limit_and_stages_both_programs(
        tmp_path: Path, local_runner: LocalRunner) -> None:
    if subprocess.run(["sh", "-c", "command -v cmake && command -v cc"],
                      capture_output=True, check=False).returncode:
        pytest.skip("cmake and a C compiler are needed (scripts/install.sh test)")
    archive = on_nodes.source_archive(stand_in_tree(tmp_path, 0))
    assert archive == on_nodes.source_archive(tmp_path / "llama.cpp")  # the same bytes again
    plan = plan_build(BuildSettings("x", build_dir=str(tmp_path / "build"), timeout_s=120,
                                    jobs=1), {"here": "x86_64"}, "cpu", "")
    said: list[str] = []
    outcome = on_nodes.compile_on(plan, local_runner, archive, tmp_path / "head", said.append)
    assert outcome.ok, (outcome, said)
    assert outcome.progress_lines >= 2 and any(re.search(r"here: \[ *\d+%\]", s) for s in said)
    assert said[0].startswith("here: sending the source")
    for program in ("ggml-rpc-server", "llama-server"):
        staged = tmp_path / "build" / "bin" / program
        assert outcome.sha256[program] == hashlib.sha256(staged.read_bytes()).hexdigest()
    assert outcome.log_on_head is not None
    assert Path(outcome.log_on_head).read_bytes() == (tmp_path / "build" / "build.log").read_bytes()
    assert not (tmp_path / "build" / "src" / "llama.cpp" / "models").exists()

    again: list[str] = []  # the same source: not sent again, and not unpacked again
    assert on_nodes.compile_on(plan, local_runner, archive, tmp_path / "head", again.append).ok
    assert not any("sending" in s or "unpack" in s for s in again), again


def test_a_noisy_failed_compile_sends_the_head_progress_and_the_logs_last_lines_only(
        tmp_path: Path) -> None:
    """The compiler's output stays in the node's log: a HIP build's warnings run to megabytes,
    more than the head keeps of a program's output (node/process.py MAX_CAPTURE), which would
    stop the progress and put stale lines where the error belongs."""
    if subprocess.run(["sh", "-c", "command -v cmake && command -v cc"],
                      capture_output=True, check=False).returncode:
        pytest.skip("cmake and a C compiler are needed (scripts/install.sh test)")
    tree = stand_in_tree(tmp_path)
    noise = "".join(f"#warning noise {n}\n" for n in range(3000))
    (tree / "main.c").write_text(noise + "#error the real error\nint main(void) { return 0; }\n")
    (tree / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.14)\nproject(standin C)\n"
        "add_executable(ggml-rpc-server main.c)\nadd_executable(llama-server main.c)\n")
    archive = tmp_path / "source.tar.gz"
    archive.write_bytes(on_nodes.source_archive(tree))
    build = tmp_path / "build"
    done = subprocess.run(["sh", "-c", on_nodes.BUILD, "sh", str(build), str(archive), "1"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 4, (done.stdout[-2000:], done.stderr[-2000:])
    log = (build / "build.log").read_text()
    assert log.count("noise ") >= 3000 and "the real error" in log
    lines = done.stdout.splitlines()
    assert lines[-1] == "strixwizard-build: compile failed"
    assert "the real error" in "\n".join(lines[-26:-1])  # the log's last 25 lines
    before_tail = lines[:-26]
    assert all(line.startswith("strixwizard-build: ") or re.match(r"^\[ *\d+%\]", line)
               for line in before_tail), before_tail
    assert len(done.stdout) < len(log) / 10, (len(done.stdout), len(log))


def test_a_build_past_its_time_is_stopped_and_nothing_is_staged(
        tmp_path: Path, local_runner: LocalRunner) -> None:
    if subprocess.run(["sh", "-c", "command -v cmake"], capture_output=True,
                      check=False).returncode:
        pytest.skip("cmake is needed (scripts/install.sh test)")
    archive = on_nodes.source_archive(stand_in_tree(tmp_path, 30))
    plan = plan_build(BuildSettings("x", build_dir=str(tmp_path / "build"), timeout_s=2),
                      {"here": "x86_64"}, "cpu", "")
    outcome = on_nodes.compile_on(plan, local_runner, archive, tmp_path / "head", lambda _: None)
    assert (outcome.state, outcome.message) == ("timed-out", "ran past 2 s")
    assert not (tmp_path / "build" / "bin").exists()
    assert outcome.log_on_head is not None and Path(outcome.log_on_head).is_file()
    leftover = subprocess.run(["pgrep", "-f", f"{tmp_path}/build/src"], capture_output=True,
                              check=False)
    assert leftover.returncode == 1, leftover.stdout  # the configure step ended with it


def test_the_command_refuses_a_bad_source_snapshots_and_other_stacks(tmp_path: Path) -> None:
    from tests.support.cli import run_cli

    absent = run_cli("deploy", "--demo", "--stack", "llama-rpc", "--build", str(tmp_path / "x"))
    assert absent.rc == 2 and "no such folder or .tar.gz on this machine" in absent.stderr
    tree = stand_in_tree(tmp_path)
    replayed = run_cli("deploy", "--demo", "--stack", "llama-rpc", "--build", str(tree))
    assert replayed.rc == 2 and "replayed from snapshots: nothing to build on" in replayed.stderr
    other = run_cli("deploy", "--demo", "--stack", "ray", "--build", str(tree))
    assert other.rc == 2 and "--build is for --stack llama-rpc, not ray" in other.stderr


def test_a_git_checkout_gives_the_build_its_commit_and_number(tmp_path: Path) -> None:
    """The node's copy leaves `.git` out, so the head reads the commit and build number with git
    and passes them to CMake: `llama-server --version` (and doctor) then name the commit."""
    tree = stand_in_tree(tmp_path)
    assert on_nodes.source_version_flags(tree) == ()  # no .git: nothing to read
    git = ["git", "-C", str(tree), "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    for message in ("one", "two"):
        subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", message], check=True)
    head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    found = on_nodes.source_version_flags(tree)
    assert found == (f"-DLLAMA_BUILD_COMMIT={head}", "-DLLAMA_BUILD_NUMBER=2")
    plan = plan_build(BuildSettings(str(tree)), {"a": "x86_64"}, "cpu", "", found)
    assert plan.flags == (*flags("cpu"), *found)
    assert on_nodes.source_version_flags(tmp_path / "no-such-tree") == ()


@pytest.mark.parametrize(("commit", "count"), [("unknown", "5"), ("abc1234", "x"), ("", ""),
                                               ("abc1234; rm -rf /", "1"), ("ABC1234", "1")])
def test_what_git_did_not_print_gives_no_version_flags(commit: str, count: str) -> None:
    from strixwizard.deploy.stacks.llama_rpc.recipe import version_flags

    assert version_flags(commit, count) == ()


def test_the_log_goes_to_a_private_folder_and_a_failed_write_here_is_said(
        tmp_path: Path, local_runner: LocalRunner) -> None:
    """The head's copy of the log follows files.py's folder rule (made 0700); a write that
    fails here (a full disk, a path through a file) leaves the node's log and says why."""
    import stat

    plan = plan_build(BuildSettings("x", build_dir=str(tmp_path / "build")), {"here": "x86_64"},
                      "cpu", "")
    (tmp_path / "build").mkdir()
    Path(plan.settings.log).write_bytes(b"[ 50%] Building\n")
    copied, why = on_nodes._copy_log(local_runner, plan, tmp_path / "state" / "logs")
    assert why == "" and copied is not None and Path(copied).read_bytes() == b"[ 50%] Building\n"
    assert stat.S_IMODE((tmp_path / "state" / "logs").stat().st_mode) == 0o700
    (tmp_path / "a-file").write_text("")
    copied, why = on_nodes._copy_log(local_runner, plan, tmp_path / "a-file" / "logs")
    assert copied is None and why.startswith("not copied to this machine: "), why
    assert Path(plan.settings.log).is_file()

"""The llama.cpp programs on a node: where `ggml-rpc-server` (`rpc-server` before the rename)
and `llama-server` are, whether the RPC transport was built with RDMA, which GPU backend the
build carries, and which build it is.

Nothing is started but `llama-server --version` (it prints its build and exits; bounded by
`timeout 10`). The rest is read from the files:
- RDMA: `GGML_RPC_RDMA=ON` compiles in the transport whose log line is "RDMA activated"
  (ggml/src/ggml-rpc/transport.cpp); the string is looked for in the program and in a
  `libggml-rpc.so` beside it (a shared build);
- the GPU backend: the libraries the program links (`ldd`) and the `libggml-*.so` beside it
  (a build with dynamically loaded backends links none of them);
- the build: `llama-server --version` ("version: 0.4.1-dev (build 10991, commit 930e2fa59)",
  or before 2026 "version: 6945 (cc98f8d34)") and the program's sha256, so two nodes can be
  compared even when the version line is not there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from strixwizard.facts.outputs import command_output, run_survey
from strixwizard.probe import Probe

#: The RPC server's names, newest first (llama.cpp renamed rpc-server to ggml-rpc-server).
RPC_SERVERS = ("ggml-rpc-server", "rpc-server")
SERVERS = ("llama-server",)
#: Where a build is found when it is not on root's PATH: `cmake --install` and the build
#: folder of a clone in the usual places.
SEARCHED = ("/usr/local/bin", "/opt/llama.cpp/bin", "/opt/llama.cpp/build/bin",
            "$HOME/llama.cpp/build/bin")
#: The same folders as the survey sees them: it runs as root (a root read), so $HOME is /root.
SEARCHED_AS_ROOT = tuple(d.replace("$HOME", "/root") for d in SEARCHED)

#: One fixed script (no value of ours inside it): for each program found, one line each of
#: `binary NAME PATH`, `sha256 HEX`, `rdma N`, `library NAME`; then `version LINE` lines. A
#: folder given as its argument (`sh -c SCRIPT sh DIR`: `doctor --llama-bin-dir`, where
#: `deploy --build` installs) is looked in first.
SCRIPT = r"""
first=$1
find_program() {
  found=
  if [ -n "$first" ] && [ -x "$first/$1" ]; then found="$first/$1"; fi
  [ -n "$found" ] || found=$(command -v "$1" 2>/dev/null) || found=
  if [ -z "$found" ]; then
    for dir in DIRS; do
      if [ -x "$dir/$1" ]; then found="$dir/$1"; break; fi
    done
  fi
  [ -n "$found" ] && readlink -f "$found"
}
for name in NAMES; do
  path=$(find_program "$name") || continue
  [ -n "$path" ] || continue
  dir=$(dirname "$path")
  echo "binary $name $path"
  echo "sha256 $(sha256sum "$path" | cut -d' ' -f1)"
  echo "rdma $(cat "$path" "$dir"/libggml-rpc.so* 2>/dev/null | grep -a -c -F 'RDMA activated')"
  { ldd "$path" 2>/dev/null | awk '{print $1}'; ls "$dir" 2>/dev/null; } \
    | grep -o -E '^lib(ggml-[a-z0-9]+|ibverbs|amdhip64|vulkan|cudart|cuda)\.so' | sort -u \
    | sed 's/^/library /'
done
server=$(find_program llama-server) && [ -n "$server" ] \
  && timeout 10 "$server" --version 2>&1 | head -n 4 | sed 's/^/version /'
exit 0
""".replace("DIRS", " ".join(SEARCHED)).replace("NAMES", " ".join((*RPC_SERVERS, *SERVERS)))

#: GPU backends by the library that carries them.
BACKENDS = {"ggml-hip": "ROCm (HIP)", "amdhip64": "ROCm (HIP)", "ggml-vulkan": "Vulkan",
            "vulkan": "Vulkan", "ggml-cuda": "CUDA", "cudart": "CUDA", "cuda": "CUDA",
            "ggml-metal": "Metal"}

_VERSION_NEW = re.compile(r"version: (\S+) \(build (\d+), commit ([0-9a-f]+)\)")
_VERSION_OLD = re.compile(r"version: (\d+) \(([0-9a-f]+)\)")


@dataclass(frozen=True)
class LlamaProgram:
    name: str  # ggml-rpc-server, rpc-server, llama-server
    path: str
    sha256: str = ""
    rdma: bool = False  # the RPC transport's RDMA code is in the program or its libggml-rpc
    libraries: tuple[str, ...] = ()  # libggml-hip, libibverbs, ...

    @property
    def backends(self) -> tuple[str, ...]:
        stems = (lib.removeprefix("lib").split(".so")[0] for lib in self.libraries)
        return tuple(sorted({BACKENDS[stem] for stem in stems if stem in BACKENDS}))


@dataclass(frozen=True)
class LlamaBuild:
    """What a node has of llama.cpp; `programs` empty: none was found."""

    programs: tuple[LlamaProgram, ...] = ()
    version: str | None = None  # "0.4.1-dev" or the build number of an older release
    build: int | None = None
    commit: str | None = None

    @property
    def rpc_server(self) -> LlamaProgram | None:
        return next((p for p in self.programs if p.name in RPC_SERVERS), None)

    @property
    def backends(self) -> tuple[str, ...]:
        return tuple(sorted({b for p in self.programs for b in p.backends}))

    @property
    def build_id(self) -> str | None:
        """What tells two builds apart: the commit, else the RPC server's sha256."""
        if self.commit:
            return f"commit {self.commit}"
        server = self.rpc_server
        return f"sha256 {server.sha256[:12]}" if server and server.sha256 else None


def parse_version(text: str) -> tuple[str | None, int | None, str | None]:
    """(version, build, commit) of `llama-server --version`; Nones when it is not there."""
    if match := _VERSION_NEW.search(text):
        return match.group(1), int(match.group(2)), match.group(3)
    if match := _VERSION_OLD.search(text):
        return match.group(1), int(match.group(1)), match.group(2)
    return None, None, None


def parse_programs(text: str) -> LlamaBuild:
    programs: list[LlamaProgram] = []
    versions: list[str] = []
    for line in text.splitlines():
        word, _, rest = line.partition(" ")
        if word == "binary":
            name, _, path = rest.partition(" ")
            if not path:
                raise ValueError(f"a binary line without a path: {line!r}")
            programs.append(LlamaProgram(name, path))
        elif word == "version":
            versions.append(rest)
        elif word in ("sha256", "rdma", "library") and programs:
            last = programs[-1]
            if word == "sha256":
                programs[-1] = LlamaProgram(last.name, last.path, rest.strip(), last.rdma, last.libraries)
            elif word == "rdma":
                programs[-1] = LlamaProgram(last.name, last.path, last.sha256,
                                            rest.strip().isdigit() and int(rest) > 0, last.libraries)
            else:
                programs[-1] = LlamaProgram(last.name, last.path, last.sha256, last.rdma,
                                            (*last.libraries, rest.strip()))
        elif line.strip():
            raise ValueError(f"not a line of the llama.cpp survey: {line!r}")
    version, build, commit = parse_version("\n".join(versions))
    return LlamaBuild(tuple(programs), version, build, commit)


#: root: the programs root's PATH and HOME find, the ones the deploy runs as root.
LLAMA_PROGRAMS = command_output("llama.programs", ("sh", "-c", SCRIPT), parse_programs, root=True)


@dataclass(frozen=True)
class LlamaSurvey:
    """The node's llama.cpp, or why it is not known (`build` None: not captured or failed)."""

    build: LlamaBuild | None
    why_unknown: str = ""


def survey_argv(bin_dir: str | None = None) -> tuple[str, ...]:
    """The survey's argv; with `bin_dir`, that folder is looked in first (an argv value)."""
    return LLAMA_PROGRAMS.argv + (("sh", bin_dir) if bin_dir else ())


def llama_survey(probe: Probe, bin_dir: str | None = None) -> LlamaSurvey:
    reading = run_survey(probe, LLAMA_PROGRAMS, "the llama.cpp survey", survey_argv(bin_dir))
    return LlamaSurvey(reading.value, reading.note)

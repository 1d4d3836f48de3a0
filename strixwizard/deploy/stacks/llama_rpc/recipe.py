"""The llama.cpp build the tool stands behind, declared once: the CMake flags per GPU backend,
the tools and headers each backend needs (with the packages that bring them, per
distribution), and the plan of a build (which node compiles, which nodes get a byte-identical
copy, which need their own build). docs/llama-cpp.md's manual recipe is tested against it
(tests/test_llama_build_plan.py). Pure: no I/O.

Sources: llama.cpp `docs/build.md` (Vulkan; HIP with `GPU_TARGETS`), `tools/rpc/README.md` and
`ggml/src/ggml-rpc/CMakeLists.txt` (`GGML_RPC_RDMA`, which needs libibverbs at configure time).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from strixwizard.facts.llama_cpp import SEARCHED, SEARCHED_AS_ROOT

#: The two programs of a static build: the whole install of a node.
PROGRAMS = ("ggml-rpc-server", "llama-server")

#: Every build: RPC with its RDMA transport, static (the two programs are the whole install),
#: no download code (no libcurl/OpenSSL to match between nodes), no tests or examples.
#: GGML_NATIVE=OFF: the programs are copied byte for byte to every node of the architecture, so
#: they must not depend on the build node's CPU (a node that is not a Strix Halo runs them too);
#: the model runs on the GPU backend, so the host's widest vector unit costs little.
COMMON_FLAGS = ("-DCMAKE_BUILD_TYPE=Release", "-DBUILD_SHARED_LIBS=OFF", "-DGGML_RPC=ON",
                "-DGGML_RPC_RDMA=ON", "-DGGML_NATIVE=OFF", "-DLLAMA_CURL=OFF",
                "-DLLAMA_OPENSSL=OFF", "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF")

#: The GPU backend's own flags (gfx1151 is the Strix Halo iGPU's target).
BACKEND_FLAGS: dict[str, tuple[str, ...]] = {
    "vulkan": ("-DGGML_VULKAN=ON",),
    "hip": ("-DGGML_HIP=ON", "-DGPU_TARGETS=gfx1151"),
    "cpu": (),
}
BACKENDS = tuple(BACKEND_FLAGS)


@dataclass(frozen=True)
class Tool:
    """Something the build node needs, how the preflight finds it, and its packages."""

    name: str  # as the error says it: "cmake", "libibverbs headers"
    test: str  # a shell test, true when it is there (fixed text, no value of ours)
    fedora: str
    debian: str  # Ubuntu and Debian


TOOLS: dict[str, Tool] = {tool.name: tool for tool in (
    Tool("cmake", "command -v cmake", "cmake", "cmake"),
    Tool("make", "command -v make", "make", "make"),
    Tool("a C++ compiler", "command -v c++ || command -v g++ || command -v clang++",
         "gcc-c++", "g++"),
    Tool("tar", "command -v tar", "tar", "tar"),
    Tool("libibverbs headers", "test -e /usr/include/infiniband/verbs.h",
         "rdma-core-devel", "libibverbs-dev"),
    Tool("glslc", "command -v glslc", "glslc", "glslc"),
    Tool("Vulkan headers", "test -e /usr/include/vulkan/vulkan.h",
         "vulkan-headers vulkan-loader-devel", "libvulkan-dev"),
    Tool("hipconfig", "command -v hipconfig || test -x /opt/rocm/bin/hipconfig",
         "rocm-hip-devel", "rocm-hip-sdk (AMD's ROCm repository)"),
)}

#: What each backend needs on the build node.
NEEDS: dict[str, tuple[str, ...]] = {
    "cpu": ("cmake", "make", "a C++ compiler", "tar", "libibverbs headers"),
    "vulkan": ("cmake", "make", "a C++ compiler", "tar", "libibverbs headers", "glslc",
               "Vulkan headers"),
    "hip": ("cmake", "make", "a C++ compiler", "tar", "libibverbs headers", "hipconfig"),
}

#: The preflight on the build node: `sh -c PREFLIGHT sh BACKEND`; one line per missing tool
#: (`missing NAME`), then `arch MACHINE`. Reads only.
PREFLIGHT = "\n".join([
    "case $1 in", *(f"  {backend}) wanted={backend} ;;" for backend in BACKENDS),
    "  *) echo \"unknown backend\" >&2; exit 2 ;;", "esac",
    *[line for backend, names in NEEDS.items() for line in (
        f"if [ \"$wanted\" = {backend} ]; then",
        *(f"  ( {TOOLS[name].test} ) >/dev/null 2>&1 || echo 'missing {name}'" for name in names),
        "fi")],
    "echo \"arch $(uname -m)\"",
])

#: A node's machine (`uname -m`): `sh -c ARCH`.
ARCH = "uname -m"


def flags(backend: str) -> tuple[str, ...]:
    """The CMake flags of a build with `backend`."""
    if backend not in BACKEND_FLAGS:
        raise ValueError(f"no backend {backend!r}: {', '.join(BACKENDS)}")
    return (*COMMON_FLAGS, *BACKEND_FLAGS[backend])


def parse_preflight(text: str) -> tuple[tuple[str, ...], str]:
    """(the missing tools, the machine) from the preflight's lines."""
    missing: list[str] = []
    arch = ""
    for line in text.splitlines():
        word, _, rest = line.partition(" ")
        if word == "missing" and rest in TOOLS:
            missing.append(rest)
        elif word == "arch":
            arch = rest.strip()
    return tuple(missing), arch


def missing_error(node: str, backend: str, missing: tuple[str, ...]) -> str:
    """One error naming what is missing and the packages per distribution."""
    tools = [TOOLS[name] for name in missing]
    fedora = " ".join(dict.fromkeys(t.fedora for t in tools))
    debian = " ".join(dict.fromkeys(t.debian for t in tools))
    return (f"{node} cannot build llama.cpp ({backend}): {', '.join(missing)} missing. Install "
            f"them there: Fedora: sudo dnf install {fedora}; Ubuntu/Debian: sudo apt install "
            f"{debian} (docs/llama-cpp.md, step 1). Nothing was changed.")


def default_backend(has_strix_halo_gpu: bool) -> tuple[str, str]:
    """(backend, why) when --build-backend is not given."""
    if has_strix_halo_gpu:
        return "vulkan", ("the build node has a Strix Halo iGPU; Vulkan (Mesa RADV) is what most "
                          "published Strix Halo clusters run, where ROCm 7.2 builds hang at "
                          "load_tensors (ROCm/ROCm#6027)")
    return "cpu", "the build node shows no Strix Halo iGPU"


#: A full CPU build of both programs took 206 s on a 2-core machine; a Strix Halo has 16 cores,
#: but a HIP build compiles every kernel for gfx1151 and takes many times longer. An hour bounds
#: any of them on a node with a few cores and still ends a build that hangs.
DEFAULT_TIMEOUT_S = 3600.0
DEFAULT_BUILD_DIR = "/var/tmp/strixwizard/llama-build"
#: `cmake --install`'s default prefix: on PATH, and where doctor's survey looks.
DEFAULT_BIN_DIR = "/usr/local/bin"


@dataclass(frozen=True)
class BuildSettings:
    source: str  # a llama.cpp tree or a .tar.gz of one, on the head
    backend: str | None = None  # None: from the build node's facts
    build_on: str | None = None  # None: the first node
    timeout_s: float = DEFAULT_TIMEOUT_S
    build_dir: str = DEFAULT_BUILD_DIR
    bin_dir: str = DEFAULT_BIN_DIR
    jobs: int = 0  # 0: every core of the build node
    #: the site file's `llama_bin_dir:` (None: the site says none): doctor looks there unasked
    site_bin_dir: str | None = None

    def staged(self, program: str) -> str:
        return f"{self.build_dir.rstrip('/')}/bin/{program}"

    def installed(self, program: str) -> str:
        return f"{self.bin_dir.rstrip('/')}/{program}"

    @property
    def log(self) -> str:
        return f"{self.build_dir.rstrip('/')}/build.log"


@dataclass(frozen=True)
class BuildPlan:
    """Who compiles, who gets a copy, who needs a build of their own."""

    build_on: str
    backend: str
    why_backend: str
    arch: str
    copies: tuple[str, ...]  # other nodes of the same machine: a byte-identical copy
    own_build: tuple[tuple[str, str], ...]  # (node, machine) of another machine
    settings: BuildSettings
    #: the source's commit and build number for `--version` (`source_version_flags`)
    source_flags: tuple[str, ...] = ()

    @property
    def flags(self) -> tuple[str, ...]:
        return (*flags(self.backend), *self.source_flags)

    @property
    def installs(self) -> tuple[str, ...]:
        return (self.build_on, *self.copies)

    def lines(self) -> list[str]:
        """The plan in words."""
        s = self.settings
        out = [f"Build llama.cpp from {s.source} on {self.build_on} ({self.arch}), backend "
               f"{self.backend} ({self.why_backend}), in {s.build_dir}, at most "
               f"{s.timeout_s:g} s (--build-timeout); the log stays in {s.log} and is copied "
               "to this machine.",
               "CMake flags: " + " ".join(self.flags),
               f"Install {' and '.join(PROGRAMS)} in {s.bin_dir} on "
               f"{', '.join(self.installs)}"
               + (f" (copied byte for byte from {self.build_on} through this machine)"
                  if self.copies else "") + ", journalled: `deploy --rollback` puts back what "
               "was there."]
        if not doctor_looks_in(s.bin_dir) and not same_dir(s.bin_dir, s.site_bin_dir):
            out.append(f"doctor --stack llama-rpc looks on root's PATH and in "
                       f"{', '.join(SEARCHED)}"
                       + (f" and in the site file's llama_bin_dir: {s.site_bin_dir}: give it "
                          f"--llama-bin-dir {s.bin_dir} to look there first." if s.site_bin_dir
                          else f": give it --llama-bin-dir {s.bin_dir} to look there first, or "
                          f"put `llama_bin_dir: {s.bin_dir}` in the site file once (doctor, "
                          "deploy and test decode then look there unasked)."))
        for node, arch in self.own_build:
            out.append(f"{node} is {arch or 'of an unknown machine'}, not {self.arch}: it needs "
                       f"its own build of the same commit with the same flags (docs/llama-cpp.md, "
                       "step 1); nothing is installed there.")
        return out


def same_dir(one: str, other: str | None) -> bool:
    return other is not None and one.rstrip("/") == other.rstrip("/")


def doctor_looks_in(bin_dir: str) -> bool:
    """Whether doctor's survey (facts/llama_cpp.py) looks in `bin_dir` (for a root login)."""
    return bin_dir.rstrip("/") in SEARCHED_AS_ROOT


def plan_build(settings: BuildSettings, machines: dict[str, str], backend: str,
               why_backend: str, source_flags: tuple[str, ...] = ()) -> BuildPlan:
    """The build plan over the nodes' machines (`uname -m`, in the site's order)."""
    names = list(machines)
    build_on = settings.build_on or names[0]
    if build_on not in machines:
        raise ValueError(f"--build-on {build_on}: not a node of this deploy "
                         f"(its nodes: {', '.join(names)})")
    arch = machines[build_on]
    copies = tuple(n for n in names if n != build_on and machines[n] == arch)
    own = tuple((n, machines[n]) for n in names if n != build_on and machines[n] != arch)
    return BuildPlan(build_on, backend, why_backend, arch, copies, own, settings, source_flags)


def version_flags(commit: str, count: str) -> tuple[str, ...]:
    """`-DLLAMA_BUILD_COMMIT`/`-DLLAMA_BUILD_NUMBER` from `git rev-parse --short HEAD` and
    `git rev-list --count HEAD` of the source (what cmake/build-info.cmake reads itself when it
    finds `.git`, which the build node's copy leaves out), so `llama-server --version` and
    doctor's llama.same_build name the commit; nothing unless both are what git prints."""
    commit, count = commit.strip(), count.strip()
    if not re.fullmatch(r"[0-9a-f]{7,40}", commit) or not re.fullmatch(r"[0-9]{1,9}", count):
        return ()
    return (f"-DLLAMA_BUILD_COMMIT={commit}", f"-DLLAMA_BUILD_NUMBER={count}")


def stopped_state(plan: BuildPlan, why: str, head_log: str | None, again: str) -> str:
    """What is left after a build that did not finish (timeout, signal) and the next command."""
    s = plan.settings
    log = f"{s.log} on {plan.build_on}" + (f", copied to {head_log}" if head_log else "")
    return (f"The build on {plan.build_on} {why}: it was stopped there and nothing was installed "
            f"on any node. {s.build_dir} keeps what was compiled (the next build continues "
            f"from it); the log: {log}. Next: {again}")

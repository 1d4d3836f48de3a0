#!/usr/bin/env bash
# Build llama.cpp's ggml-rpc-server and llama-server (CPU backend, RPC on) from
# the llama.cpp tree vendored in the llama-cpp-python sdist on PyPI, and cache
# them outside the repository:
#
#   scripts/build_llama.sh [llama-cpp-python version] [tcp|rdma] [all|rpc]   # default 0.3.36 tcp all
#
# tcp:  RDMA off (GGML_RPC_RDMA=OFF), for the namespace lab; binaries in
#       ${STRIXWIZARD_LLAMA_CACHE:-~/.cache/strixwizard-llama}/<version>/bin.
# rdma: the RDMA transport on (GGML_RPC_RDMA=ON, links libibverbs: Debian's libibverbs-dev),
#       for the VM lab (tests/support/vmlab.py), in <version>-rdma/bin. The VMs run under TCG with
#       qemu's default CPU model, which has no SSE4.2/AVX, so this build uses none of them.
# all: ggml-rpc-server and llama-server; rpc: ggml-rpc-server alone (a worker's program, a few
# objects once the ggml libraries are built; a later `all` run adds llama-server to it).
# The last line printed is that directory. A second run with the same version and flags finds
# them and builds nothing; other flags (this script changed) rebuild in place. build-flags and
# build-seconds in the same directory record the flags and how long the build took.
set -euo pipefail

version=${1:-0.3.36}
transport=${2:-tcp}
programs=${3:-all}
case "$programs" in
    all) targets=(ggml-rpc-server llama-server) ;;
    rpc) targets=(ggml-rpc-server) ;;
    *) echo "build_llama.sh: programs must be all or rpc, not $programs" >&2; exit 2 ;;
esac
cache=${STRIXWIZARD_LLAMA_CACHE:-$HOME/.cache/strixwizard-llama}
jobs=${STRIXWIZARD_LLAMA_JOBS:-2}
case "$transport" in
    tcp) out="$cache/$version"
         transport_flags=(-DGGML_RPC_RDMA=OFF) ;;
    rdma) out="$cache/$version-rdma"
          [[ -e /usr/include/infiniband/verbs.h ]] || {
              echo "build_llama.sh: libibverbs-dev is missing (scripts/install.sh test)" >&2; exit 1; }
          transport_flags=(-DGGML_RPC_RDMA=ON -DGGML_SSE42=OFF -DGGML_AVX=OFF -DGGML_AVX2=OFF
                           -DGGML_BMI2=OFF -DGGML_FMA=OFF -DGGML_F16C=OFF) ;;
    *) echo "build_llama.sh: transport must be tcp or rdma, not $transport" >&2; exit 2 ;;
esac
bin="$out/bin"
flags="-DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DGGML_RPC=ON ${transport_flags[*]}"
flags+=" -DGGML_NATIVE=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF"
flags+=" -DLLAMA_BUILD_EXAMPLES=OFF"
built() {  # this version, with these flags, already built (the programs asked for)
    local target
    for target in "${targets[@]}"; do
        [[ -x "$bin/$target" ]] || return 1
    done
    [[ "$(cat "$out/build-flags" 2>/dev/null)" == "$flags" ]]
}

if built; then
    echo "$bin"
    exit 0
fi
# One build per cache directory at a time: a second run (another test, another checkout)
# waits for the first, then finds its binaries, instead of racing it in the same build tree.
mkdir -p "$out"
exec 9>"$out/.lock"
flock 9
if built; then
    echo "$bin"
    exit 0
fi

python=${PYTHON:-python3}
[[ -x "$(dirname "$0")/../.venv/bin/python" ]] && python="$(dirname "$0")/../.venv/bin/python"
for tool in cmake g++ tar; do
    command -v "$tool" >/dev/null || { echo "build_llama.sh: $tool is missing" >&2; exit 1; }
done

sdist_dir="$cache/sdist"
mkdir -p "$sdist_dir" "$bin"
archive="$sdist_dir/llama_cpp_python-$version.tar.gz"
if [[ ! -f "$archive" ]]; then
    "$python" -m pip download -q --disable-pip-version-check --no-deps --no-binary llama-cpp-python \
        -d "$sdist_dir" "llama-cpp-python==$version"
fi
tree="$sdist_dir/llama_cpp_python-$version"
[[ -d "$tree/vendor/llama.cpp" ]] || tar -xzf "$archive" -C "$sdist_dir"
source_dir="$tree/vendor/llama.cpp"
build_dir="$out/build"

started=$(date +%s)
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
# The transport is auto-detected from libibverbs otherwise (ggml/src/ggml-rpc/CMakeLists.txt);
# it is set explicitly so the build is the same wherever it runs.
# shellcheck disable=SC2086  # $flags: one -D option a word, none with spaces
nice -n 19 cmake -S "$source_dir" -B "$build_dir" "${generator[@]}" $flags >"$out/configure.log"
nice -n 19 cmake --build "$build_dir" -j"$jobs" --target "${targets[@]}" >"$out/build.log"
for target in "${targets[@]}"; do
    cp "$build_dir/bin/$target" "$bin/"
done
echo $(( $(date +%s) - started )) >"$out/build-seconds"
echo "$flags" >"$out/build-flags"
echo "$bin"

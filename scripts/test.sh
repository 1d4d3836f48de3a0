#!/usr/bin/env bash
# The README's test command, and what .ci/run calls: install what the tests need, then ruff,
# mypy and every tier of the suite. Needs root (network namespaces, sshd, VMs).
#
#   bash scripts/test.sh                  every tier, in the order below
#   bash scripts/test.sh quick            ruff, mypy and the unit tier: a change's loop (< 5 min)
#   bash scripts/test.sh TIER...          ruff, mypy and these tiers only
#   bash scripts/test.sh [...] -- ARGS    ARGS go to every pytest run (-k mtu, -x, a test path)
#
# Tiers (set from what each test uses, tests/conftest.py; docs/contributing/test-lab.md):
#   unit          no root, no lab, no build: in parallel on every core
#   lab           the namespace lab (no llama.cpp): in parallel, while the build goes on
#   llama         the real llama.cpp build, on loopback and in the namespace lab: in parallel
#   vm            the soft-RoCE VMs, booted once for the whole tier: one process
#   reboot        the systemd VMs and their reboots: one process
#   pythons       tests that start other interpreters themselves (wheel install, node programs)
#   interpreters  the tests marked `interpreter`, again on Python 3.12 and up (scripts/test_pythons.sh)
# A full run starts the llama.cpp build and the VM kernel in the background first (both cached
# after their first run), so they are ready by the time the lab and VM tiers need them.
# Every tier runs even when one before it failed; each names its slowest tests, and the last
# lines are one table of the tiers with their times and the total.
# STRIXWIZARD_TEST_JOBS sets the parallel tiers' workers (default 2: measured fastest on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."

all_tiers=(unit lab llama vm reboot pythons interpreters)
tiers=()
pytest_args=()
while (($#)); do
    case "$1" in
        --) shift; pytest_args=("$@"); break ;;
        quick) tiers+=(unit) ;;
        unit | lab | llama | vm | reboot | pythons | interpreters) tiers+=("$1") ;;
        *) echo "test.sh: no tier '$1' (quick, ${all_tiers[*]}; pytest arguments after --)" >&2
           exit 2 ;;
    esac
    shift
done
((${#tiers[@]})) || tiers=("${all_tiers[@]}")
jobs=${STRIXWIZARD_TEST_JOBS:-2}
wants() { [[ " ${tiers[*]} " == *" $1 "* ]]; }

bash scripts/install.sh test
reports=$(mktemp -d "${TMPDIR:-/tmp}/strixwizard-tiers-XXXXXX")
background=()
trap 'kill "${background[@]}" 2>/dev/null || true' EXIT
if wants llama || wants vm || wants reboot || wants pythons; then
    # the llama.cpp builds and the VM kernel (each cached; a second run finds them at once):
    # the RDMA build whole, then a plain RPC server alone (the mixed-builds lab test)
    .venv/bin/python -c 'from tests.support.llama_parts import build; print(build()); print(build("tcp", "rpc"))' \
        >"$reports/llama-build.log" 2>&1 &
    background+=($!)
fi
if wants vm || wants reboot; then
    .venv/bin/python -c 'from tests.support.vmlab import build_kernel; print(build_kernel().vmlinuz)' \
        >"$reports/vm-kernel.log" 2>&1 &
    background+=($!)
fi

started=$SECONDS
.venv/bin/ruff check strixwizard checks fixes tests scripts benchmarks
.venv/bin/mypy
echo "test.sh: ruff and mypy in $((SECONDS - started)) s"

failed=()
# run_tier NAME PYTEST-ARGS...: one pytest run, its junit report kept for the table
run_tier() {
    local name=$1 status=0
    shift
    echo "test.sh: tier $name"
    .venv/bin/python -m pytest -q --durations=15 --junitxml="$reports/$name.xml" "$@" \
        ${pytest_args[@]+"${pytest_args[@]}"} || status=$?
    # 5: nothing selected (a tier with no test in it after -k): not a failure
    if ((status != 0 && status != 5)); then failed+=("$name"); fi
}
wait_for_builds() {
    local pid
    for pid in "${background[@]}"; do
        wait "$pid" || echo "test.sh: a background build failed; the tests that need it say why" >&2
    done
    background=()
}

wants unit && run_tier unit -n "$jobs" -m "not lab and not vm and not pythons and not llama"
wants lab && run_tier lab -n "$jobs" -m "lab and not llama and not vm and not pythons"
if wants llama; then
    wait_for_builds
    run_tier llama -n "$jobs" -m "llama and not vm and not pythons"
fi
if wants vm; then
    wait_for_builds
    run_tier vm -p no:xdist -m "vm and not reboot"
fi
if wants reboot; then
    wait_for_builds
    run_tier reboot -p no:xdist -m reboot
fi
if wants pythons; then
    wait_for_builds
    run_tier pythons -n "$jobs" -m "pythons and not vm"
fi
if wants interpreters; then
    TEST_REPORT_DIR="$reports" bash scripts/test_pythons.sh -- ${pytest_args[@]+"${pytest_args[@]}"} \
        || failed+=(interpreters)
fi

.venv/bin/python scripts/test_tiers.py "$reports" "$((SECONDS - started))"
rm -rf "$reports"
if ((${#failed[@]})); then
    echo "test.sh: failed tiers: ${failed[*]}" >&2
    exit 1
fi

#!/usr/bin/env bash
# The tests that exercise what a newer Python changes (marked `interpreter`: every module
# imports, argparse texts, tarfile and snapshot reads, dataclasses, a Pilot walk, the JSON
# schema...) on every newer Python the head node may run; with --full, the whole unit tier.
# One ./.venv-3.X per interpreter, found on PATH or in pyenv, with the package and its test
# extra (less the lint's and the lab's own tools). A version with no interpreter on this
# machine is named and left out; none at all fails. $TEST_REPORT_DIR, when set, gets each
# run's junit report (interpreter-3.X.xml) for scripts/test.sh's closing table.
# Usage: bash scripts/test_pythons.sh [--full] [VERSION...] [-- PYTEST-ARGS...]   (default: 3.12 3.13 3.14)
set -euo pipefail
cd "$(dirname "$0")/.."

selection="interpreter"
versions=()
while (($#)) && [[ "$1" != "--" ]]; do
    if [[ "$1" == "--full" ]]; then
        selection="not lab and not vm and not pythons and not llama"
    else
        versions+=("$1")
    fi
    shift
done
(($#)) && shift
((${#versions[@]})) || versions=(3.12 3.13 3.14)

# The interpreter for version $1: python3.X on PATH, else the newest pyenv build of it.
find_python() {
    local version=$1 candidate
    if candidate=$(command -v "python$version") && "$candidate" -c '' 2>/dev/null; then
        echo "$candidate"
        return 0
    fi
    for candidate in $(ls -d "${PYENV_ROOT:-$HOME/.pyenv}/versions/$version".* 2>/dev/null | sort -rV); do
        if [[ -x "$candidate/bin/python$version" ]]; then
            echo "$candidate/bin/python$version"
            return 0
        fi
    done
    return 1
}

# The test extra less what only the lint (ruff, mypy, type stubs) and the lab's tests (ray) use.
unit_requirements() {
    "$1" - <<'PY'
import re
import tomllib

with open("pyproject.toml", "rb") as handle:
    extra = tomllib.load(handle)["project"]["optional-dependencies"]["test"]
for requirement in extra:
    name = re.split(r"[\s<>=!~\[;]", requirement, maxsplit=1)[0].lower()
    if name not in {"ruff", "mypy", "ray"} and not name.startswith("types-"):
        print(requirement)
PY
}

# Install one after another (each editable install writes the checkout's metadata), then test
# side by side: the runs wait more than they compute, so two of them on two cores take little
# longer than one. Each run's output is shown whole, in version order, once all have ended.
venvs=()
for version in "${versions[@]}"; do
    if ! python=$(find_python "$version"); then
        echo "test_pythons: no Python $version on this machine: not tested"
        continue
    fi
    venv=".venv-$version"
    started=$SECONDS
    [[ -x "$venv/bin/python" ]] || "$python" -m venv "$venv"
    requirements=$(unit_requirements "$venv/bin/python")
    # shellcheck disable=SC2086  # one requirement a line, none with spaces
    "$venv/bin/python" -m pip install -q --disable-pip-version-check -e . $requirements
    echo "test_pythons: $("$venv/bin/python" -V) ($python) installed in $((SECONDS - started)) s"
    venvs+=("$venv")
done
if ((${#venvs[@]} == 0)); then
    echo "test_pythons: none of Python ${versions[*]} is installed" >&2
    exit 1
fi

started=$SECONDS
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; exit 130' INT TERM
for venv in "${venvs[@]}"; do
    report=()
    [[ -n "${TEST_REPORT_DIR:-}" ]] && report=(--junitxml="$TEST_REPORT_DIR/interpreter-${venv#.venv-}.xml")
    "$venv/bin/python" -m pytest -q -p no:cacheprovider -m "$selection" ${report[@]+"${report[@]}"} "$@" \
        > "$venv/pytest.log" 2>&1 &
    pids+=($!)
done
statuses=()
for pid in "${pids[@]}"; do
    status=0
    wait "$pid" || status=$?
    statuses+=("$status")
done
trap - INT TERM
echo "test_pythons: ${#venvs[@]} interpreter(s) tested side by side in $((SECONDS - started)) s"
failed=0
for i in "${!venvs[@]}"; do
    echo "test_pythons: $("${venvs[$i]}/bin/python" -V): -m \"$selection\" (exit ${statuses[$i]})"
    cat "${venvs[$i]}/pytest.log"
    ((statuses[i] == 0)) || failed=1
done
exit "$failed"

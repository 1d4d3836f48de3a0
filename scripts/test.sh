#!/usr/bin/env bash
# Install everything the tests need and run all of them: lint, types, pytest.
# Needs root (network namespaces and sshd for the multi-host lab).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh test
.venv/bin/ruff check strixwizard checks fixes tests scripts benchmarks
.venv/bin/mypy
.venv/bin/python -m pytest -q "$@"
# The unit tests again on every newer Python the head may run (3.12, 3.13, 3.14 where present).
bash scripts/test_pythons.sh -- "$@"

#!/usr/bin/env bash
# Install everything the tests need and run all of them: lint, types, pytest.
# Needs root (network namespaces and sshd for the multi-host lab).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh test
.venv/bin/ruff check strixwizard checks fixes tests scripts benchmarks
.venv/bin/mypy
.venv/bin/python -m pytest -q "$@"

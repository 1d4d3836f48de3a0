#!/usr/bin/env bash
# Regenerate everything that is generated from the code, in the order each depends on the last:
#   1. the demo's snapshot tarballs (strixwizard/demo/snapshots/, from demo/scenarios.py through
#      the real collector) — after a new parser or tool output, or a changed scenario;
#   2. the wizard's SVG snapshot tests (tests/__snapshots__/) — after any change to what a
#      step shows (a new check or step changes some of them);
#   3. docs/screenshots/ for the wizard's page (docs/wizard.md);
#   4. the manual's generated pages: docs/reference/ (scripts/gen_docs.py: checks, fixes, the
#      command line, the JSON schemas, exit codes) and the predicted-vs-published table in
#      docs/advise.md (benchmarks/advise_validation.py) — after a change to any of them.
# Then look at what changed (`git status`, the SVGs in a browser) before committing it.
#   bash scripts/regen.sh            all four
#   bash scripts/regen.sh demo|snapshots|screenshots|docs   one of them
set -euo pipefail
cd "$(dirname "$0")/.."
python=.venv/bin/python
[[ -x $python ]] || { echo "regen.sh: run 'bash scripts/install.sh test' first" >&2; exit 2; }
what=${1:-all}
case "$what" in all|demo|snapshots|screenshots|docs) ;; *)
    echo "regen.sh: unknown part '$what' (all, demo, snapshots, screenshots, docs)" >&2; exit 2 ;;
esac
if [[ $what == all || $what == demo ]]; then
    echo "== demo snapshots"
    $python scripts/build_demo.py
fi
if [[ $what == all || $what == snapshots ]]; then
    echo "== wizard SVG snapshots"
    $python -m pytest -q tests/test_tui_snapshots.py --snapshot-update
fi
if [[ $what == all || $what == screenshots ]]; then
    echo "== screenshots"
    $python scripts/screenshots.py
fi
if [[ $what == all || $what == docs ]]; then
    echo "== docs/reference and the advise table"
    $python scripts/gen_docs.py
    $python benchmarks/advise_validation.py --readme
fi
git status --short -- strixwizard/demo/snapshots tests/__snapshots__ docs/screenshots docs/reference docs/advise.md

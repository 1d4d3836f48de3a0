#!/usr/bin/env bash
# Install strixwizard and run the doctor on the bundled demo site, on Debian as root (it
# installs distribution packages through scripts/install.sh). The demo itself needs neither:
# on any machine, the wheel as the README installs it runs `strixwizard doctor --demo`.
# The demo has faults left in on purpose, so doctor exits 1 (it found them);
# this script succeeds whenever doctor produced a verdict (exit 0 or 1).
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh || exit 1
.venv/bin/strixwizard doctor --demo
status=$?
if ((status == 0 || status == 1)); then
    echo
    echo "The demo ran. Next: .venv/bin/strixwizard --demo (the wizard, on a terminal),"
    echo "  or .venv/bin/strixwizard fix --demo, deploy --demo, test latency --demo"
    exit 0
fi
exit "$status"

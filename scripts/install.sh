#!/usr/bin/env bash
# Install strixwizard into ./.venv on Debian 12 (root). Pass "test" to add
# everything the test suite needs (OpenSSH server, iproute2, perftest, ...).
set -euo pipefail
cd "$(dirname "$0")/.."

want_tests=${1:-}
packages=(python3 python3-venv python3-pip python3-pyverbs rdma-core ibverbs-utils iproute2 ethtool)
if [[ "$want_tests" == "test" ]]; then
    packages+=(openssh-server openssh-client util-linux procps iputils-ping perftest sockperf
               qperf lldpad tmux qemu-system-x86 busybox-static cpio kmod e2fsprogs
               cmake g++ libibverbs-dev  # qemu..e2fsprogs: the VM lab (tests/support/vmlab.py); cmake, g++,
                                         # libibverbs-dev: scripts/build_llama.sh (tcp, rdma)
               ccache     # what lab nodes compile (tests/support/lab.py: CCACHE_DIR)
               sudo       # nodes reached as a user with sudo (tests/support/lab_users.py)
               chromium   # the HTML report's charts, loaded in a headless browser
               librsvg2-bin)  # rsvg-convert: docs/screenshots/ as PNG (scripts/screenshots.py)
fi

missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" \
        || missing+=("$package")
done
if ((${#missing[@]})); then
    if [[ $(id -u) -ne 0 ]]; then
        echo "install.sh: these Debian packages are missing: ${missing[*]}" >&2
        echo "install.sh: run as root, or: sudo apt-get install ${missing[*]}" >&2
        exit 1
    fi
    echo "installing Debian packages: ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Debian's own Python, so the virtualenv can reach python3-pyverbs (rdma-core).
if [[ ! -x .venv/bin/python ]]; then
    /usr/bin/python3 -m venv --system-site-packages .venv
fi
extra=""
[[ "$want_tests" == "test" ]] && extra="[test]"
.venv/bin/python -m pip install -q --disable-pip-version-check -e ".${extra}"

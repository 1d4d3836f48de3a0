"""How a node's login user runs what needs root, declared once for the site file, `init` and
the one place remote commands are built (`node/command.py`).

`become: sudo` in a node entry: the login user is not root. Every change (the step runner,
the programs it starts) runs as `sudo -n -- ARGV`; the collector runs as the login user and
sends through it only the reads declared `root=True` (facts/outputs.py). `-n` never waits for
a password, so a missing rule fails at once with sudo's own words instead of hanging on a
prompt nobody sees.
"""

from __future__ import annotations

#: Each method, and the argv prefix that runs a command as root through it.
BECOME_PREFIX: dict[str, tuple[str, ...]] = {"sudo": ("sudo", "-n", "--")}
BECOME_METHODS: tuple[str, ...] = tuple(BECOME_PREFIX)

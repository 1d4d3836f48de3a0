"""Ansible as the tests meet it: the `ansible-playbook` of the test extras, and a YAML loader
that reads the `!unsafe` values of an exported playbook or inventory as the text Ansible shows.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import yaml


class UnsafeLoader(yaml.SafeLoader):
    """Reads `!unsafe` scalars as plain strings (what Ansible shows of them)."""


UnsafeLoader.add_constructor("!unsafe", lambda loader, node: loader.construct_scalar(node))


def ansible_playbook() -> str:
    """The `ansible-playbook` beside this Python (the test extras install it), else on PATH."""
    playbook = Path(sys.executable).with_name("ansible-playbook")
    found = str(playbook) if playbook.exists() else shutil.which("ansible-playbook")
    assert found, "ansible-playbook not found: install the test extras (pip install -e '.[test]')"
    return found

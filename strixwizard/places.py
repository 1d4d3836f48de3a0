"""Where strixwizard keeps its own files on a node: each path defined here once.

Strings only: the pure modules (facts, fixes) import them too. The head's own folders
(journals, history, the wizard's state) are `files.state_dir()`."""

from __future__ import annotations

#: Files a deploy writes (environment, launch scripts) and the tmpfiles.d rules of fixes.
NODE_CONFIG_DIR = "/etc/strixwizard"
#: What strixwizard keeps on a node between runs: journals, the stacks' run folders.
NODE_STATE_DIR = "/var/lib/strixwizard"
#: Each node's copy of the journal of a fix or deploy run (`RUN.json`) and its lock (`.lock`).
NODE_JOURNAL_DIR = f"{NODE_STATE_DIR}/journal"

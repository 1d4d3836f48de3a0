"""What strixwizard keeps about a site is private (0600 files, 0700 directories), and a
private key others can read is refused, as OpenSSH refuses it."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from strixwizard.live.history import History
from strixwizard.node import NodeError, SshTarget
from strixwizard.node.ssh import open_client
from strixwizard.services.capture import capture_local


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_history_database_is_private(tmp_path: Path) -> None:
    path = tmp_path / "state" / "strixwizard" / "history.sqlite"
    with History(path) as history:
        history.runs()
    assert mode(path) == 0o600 and mode(path.parent) == 0o700
    path.chmod(0o644)
    History(path).close()
    assert mode(path) == 0o600


def test_local_capture_archive_is_private(tmp_path: Path) -> None:
    out = capture_local(tmp_path / "me", as_tar=True, root=str(tmp_path / "empty-root"))
    assert mode(out) == 0o600


@pytest.mark.parametrize("key_mode", [0o644, 0o640, 0o604, 0o660])
def test_private_key_readable_by_others_is_refused(tmp_path: Path, key_mode: int) -> None:
    key = tmp_path / "id_ed25519"
    key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    key.chmod(key_mode)
    target = SshTarget(name="n", host="10.99.255.254", key_file=str(key),
                       known_hosts=tmp_path / "known_hosts", connect_timeout=0.1)
    with pytest.raises(NodeError, match=rf"permissions 0{key_mode:o}: .*chmod 600 {key}"):
        open_client(target)

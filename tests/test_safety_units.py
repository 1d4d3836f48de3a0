"""Generated systemd units bind to the right device whatever the interface is called: the
`BindsTo=` name is systemd's own escaping (checked against `systemd-escape`), and the unit
passes `systemd-analyze verify` without a warning."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from fixes.steps import systemd_path_escape, unit_name, unit_text

NAMES = ["enp1s0-a", "br.10", "vlan-1.20", ".hidden", "f;id>x", "p$%q", "näme", "a_b"]


def _tool(name: str) -> str:
    found = shutil.which(name)
    assert found, f"{name} not found: Debian's systemd package provides it"
    return found


@pytest.mark.parametrize("netdev", NAMES)
def test_binds_to_is_systemd_escaped(netdev: str) -> None:
    expected = subprocess.run([_tool("systemd-escape"), "--path",
                               f"/sys/subsystem/net/devices/{netdev}"],
                              capture_output=True, text=True, check=True).stdout.strip()
    assert systemd_path_escape(f"/sys/subsystem/net/devices/{netdev}") == expected
    text = unit_text("net.mtu", f"MTU 9000 on {netdev}", [["ip", "link", "set", "dev", netdev,
                                                           "mtu", "9000"]], netdev)
    assert f"BindsTo={expected}.device\n" in text


@pytest.mark.parametrize("netdev", NAMES)
def test_unit_passes_systemd_analyze_verify(tmp_path: Path, netdev: str) -> None:
    path = tmp_path / unit_name("net.mtu", netdev)
    path.write_text(unit_text("net.mtu", f"MTU 9000 on {netdev}",
                              [["ip", "link", "set", "dev", netdev, "mtu", "9000"]], netdev))
    done = subprocess.run([_tool("systemd-analyze"), "verify", "--man=no", str(path)],
                          capture_output=True, text=True, timeout=60, check=False, cwd=tmp_path)
    assert done.returncode == 0 and not (done.stdout + done.stderr).strip(), done.stderr


def test_specifiers_and_variables_stay_literal() -> None:
    text = unit_text("net.mtu", "MTU on p$%q", [["ip", "link", "set", "dev", "p$%q"]], "p$%q")
    assert "Description=strixwizard: MTU on p$%%q\n" in text
    assert "ExecStart=ip link set dev 'p$$%%q'\n" in text

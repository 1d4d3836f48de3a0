"""Logins that are not root on a lab node, each with its own sudo rule, and no root login.

A lab node shares this machine's /etc (tests/support/lab.py: each node has a private mount
namespace and only its home is its own). A user is never added to this machine's files:
the node gets private copies, made in its lab folder and bind-mounted inside the node's own
mount namespace (seen by its sshd and what it runs, by nothing else):

- /etc/passwd, /etc/group, /etc/shadow: this machine's, plus one line per login;
- /etc/sudoers.d: one file with each login's rule, sudo's log (`sudo_log`), timestamps and
  lecture records in the lab folder (this machine's /run/sudo and /var/lib/sudo are never written) and
  `secure_path` starting with the node's stand-in folder (as the lab's sshd puts it on PATH);
- /home: each login's home, with the lab's client key as its authorized key.

The node's sshd gets `PermitRootLogin no` and is restarted: what the node does as root, it
does through sudo. The node's namespaces end with the lab, and so do these mounts.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

from tests.support.lab import Lab, LabError, LabHost

#: The first uid given to a lab login (far above what Debian gives its users).
FIRST_UID = 61000
#: A rule that lets a login run what strixwizard runs as root, without a password.
NOPASSWD_PYTHON = "ALL=(root) NOPASSWD: /usr/bin/python3"
#: Ubuntu's rule for its `sudo` group: everything, with the user's password.
WITH_PASSWORD = "ALL=(ALL:ALL) ALL"
SECURE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def _node_mount(host: LabHost, source: Path, target: str) -> None:
    done = host.run_in_node(["mount", "--bind", str(source), target])
    if done.returncode != 0:
        raise LabError(f"{host.name}: mount --bind {source} {target}: {done.stderr.strip()}")


def _sudoers(host: LabHost, rules: Mapping[str, str]) -> str:
    state = host.dir / "sudo"
    lines = ["# written by tests/support/lab_users.py; seen only inside this lab node",
             f"Defaults timestampdir={state / 'ts'}, lecture_status_dir={state / 'lectured'}",
             "Defaults !lecture, !syslog, !mail_badpass, !mail_no_user",
             f"Defaults logfile={sudo_log(host)}, loglinelen=0"]
    for user, rule in rules.items():
        lines += [f'Defaults:{user} secure_path="{host.bin_dir}:{SECURE_PATH}"', f"{user} {rule}"]
    return "\n".join(lines) + "\n"


def add_logins(lab: Lab, host: LabHost, rules: Mapping[str, str]) -> dict[str, int]:
    """Give `host` a login for each user of `rules` (user -> sudoers rule, e.g.
    `NOPASSWD_PYTHON`), keyed with the lab's client key, and no root login; returns each
    user's uid. Once per node (its mounts stay until the node ends)."""
    if shutil.which("sudo") is None:
        raise LabError("sudo is not installed: apt-get install sudo (scripts/install.sh test)")
    etc = host.dir / "etc"
    if etc.exists():
        raise LabError(f"{host.name}: its logins were made already")
    etc.mkdir(mode=0o755)
    homes = host.dir / "homes"
    homes.mkdir(mode=0o755)
    uids = {user: FIRST_UID + index for index, user in enumerate(rules)}
    client_pub = lab.client_key.with_name(lab.client_key.name + ".pub").read_text()
    extra = {"passwd": [f"{u}:x:{uid}:{uid}::/home/{u}:/bin/sh" for u, uid in uids.items()],
             "group": [f"{u}:x:{uid}:" for u, uid in uids.items()],
             "shadow": [f"{u}:*:19000:0:99999:7:::" for u in uids]}
    for name, lines in extra.items():
        copy = etc / name
        copy.write_text(Path("/etc", name).read_text() + "".join(line + "\n" for line in lines))
        shutil.copymode(Path("/etc", name), copy)
    for user, uid in uids.items():
        ssh = homes / user / ".ssh"
        ssh.mkdir(parents=True, mode=0o700)
        (ssh / "authorized_keys").write_text(client_pub)
        for path in (homes / user, ssh, ssh / "authorized_keys"):
            os.chown(path, uid, uid)
        (homes / user).chmod(0o700)
    sudo_log(host).parent.mkdir(mode=0o700, exist_ok=True)
    sudoers = etc / "sudoers.d"
    sudoers.mkdir(mode=0o755)
    (sudoers / "lab").write_text(_sudoers(host, rules))
    (sudoers / "lab").chmod(0o440)
    checked = subprocess.run(["visudo", "-cf", str(sudoers / "lab")], capture_output=True,
                             text=True, check=False)
    if checked.returncode != 0:
        raise LabError(f"{host.name}: the lab's sudoers file is refused: {checked.stdout}{checked.stderr}")
    for name in extra:
        _node_mount(host, etc / name, f"/etc/{name}")
    _node_mount(host, sudoers, "/etc/sudoers.d")
    _node_mount(host, homes, "/home")
    config = host.sshd_config.read_text()
    config = config.replace("PermitRootLogin prohibit-password", "PermitRootLogin no")
    config = config.replace(f"AuthorizedKeysFile {host.authorized_keys}",
                            f"AuthorizedKeysFile .ssh/authorized_keys {host.authorized_keys}")
    if "PermitRootLogin no" not in config:
        raise LabError(f"{host.name}: its sshd_config has no PermitRootLogin line to change")
    host.sshd_config.write_text(config)
    host.restart_sshd()
    return uids


def sudo_log(host: LabHost) -> Path:
    """Where the node's sudo writes one line per command it ran (or refused), in the lab folder."""
    return host.dir / "sudo" / "sudo.log"


def sudo_commands(host: LabHost, since: int = 0) -> list[str]:
    """The commands sudo ran as root on the node (what follows `COMMAND=` on each line of its
    log), from byte `since` of the log on."""
    log = sudo_log(host)
    text = log.read_bytes()[since:].decode(errors="replace") if log.exists() else ""
    return [line.split("COMMAND=", 1)[1] for line in text.splitlines() if "COMMAND=" in line]


def logins(host: LabHost) -> list[str]:
    """The users this node's sshd let in, in order (its log, LogLevel VERBOSE)."""
    text = host.sshd_log.read_text(errors="replace") if host.sshd_log.exists() else ""
    return [line.split("Accepted publickey for ", 1)[1].split()[0]
            for line in text.splitlines() if "Accepted publickey for " in line]

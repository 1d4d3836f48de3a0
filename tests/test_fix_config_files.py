"""The configuration files the fixes write are read back by the programs that will read them on
a node, or by a strict parser of their documented format where no such program can run here:

- limits.d (pam_limits): a `domain type item value` parser per limits.conf(5), and the real
  pam_limits module loaded by libpam from a private PAM configuration directory (the limits it
  sets are seen with strace: the test may lack the right to raise them);
- modprobe.d: an `options MODULE key=value` parser per modprobe.d(5) and `modprobe --showconfig`;
- systemd-networkd drop-ins: systemd's own lookup (`systemd-analyze cat-config --root`) finds the
  drop-in for the .network file, and a systemd.syntax(7) parser reads `[Link] MTUBytes=`;
- tmpfiles.d: `systemd-tmpfiles --root` creates and writes exactly the configfs paths meant,
  for RDMA device names with quotes, spaces, `%` and backslashes;
- systemd units: they bind to the right device whatever the interface is called (the `BindsTo=`
  name is systemd's own escaping, checked against `systemd-escape`) and pass `systemd-analyze
  verify` without a warning.

Interface, device and .network file names are hostile: what a node may report.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fixes import FIXES
from fixes.steps import systemd_path_escape, unit_name, unit_text
from strixwizard.demo.builder import FakeNode
from strixwizard.demo.hardware import RoceSetup, e810
from strixwizard.demo.scenarios import strix_halo_node
from strixwizard.discovery import Discovery
from strixwizard.fixing.model import Kind, Plan, SitePlan, Step
from strixwizard.fixing.planning import plan_site
from strixwizard.site import Fabric, NodeSpec, Site
from tests.support import scenarios
from tests.support.systemd_units import command_argv, settings

FABRIC = Fabric(mtu=9000, pfc_priority=3, trust="dscp", roce_version=2)
HOSTILE_NETDEVS = ["enp194s0np0", "f;id>PWNED0", "p$%q", "br.10", "vlan-1.20", "a`b`", "x'y\"z"]


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"{name} not installed")
    return found


def _node(host: str, ip: str, mac: str, netdev: str, rdmadev: str, *, memlock_kb: int | None = None,
          network_file: str | None = None, out_of_tree: bool = False) -> FakeNode:
    node = strix_halo_node(host)
    node.limits(memlock_kb=memlock_kb)
    e810(node, ip, mac, setup=RoceSetup(mtu=1500, roce_mode=None), netdev=netdev, rdmadev=rdmadev,
         iwarp=out_of_tree)
    if out_of_tree:
        node.devlink_params.clear()  # Intel's out-of-tree irdma: no devlink RoCE parameter
    node.file("/proc/1/comm", "systemd\n")
    if network_file is not None:
        ifindex = next(link["ifindex"] for link in node.ip_links if link["ifname"] == netdev)
        node.file(f"/run/systemd/netif/links/{ifindex}",
                  f"ADMIN_STATE=configured\nNETWORK_FILE={network_file}\n")
    node.finish()
    return node


def _plan(tmp_path: Path, netdev: str = "enp194s0np0", rdmadev: str = "rocep194s0",
          only: tuple[str, ...] = (), **options: object) -> SitePlan:
    nodes = {
        "node-a": _node("strix-a", "192.168.100.1/30", "b4:96:91:9c:3a:10", netdev, rdmadev,
                        **options),  # type: ignore[arg-type]
        "node-b": _node("strix-b", "192.168.100.2/30", "b4:96:91:9c:41:d8", netdev, rdmadev,
                        **options),  # type: ignore[arg-type]
    }
    facts = scenarios.facts_of(tmp_path, nodes)
    site = Site(name="t", nodes=tuple(NodeSpec(name=n, snapshot=n) for n in facts), fabric=FABRIC)
    return plan_site(Discovery.of_facts(site, list(facts.values())), only, persist=True, fixes=FIXES)


def _file_steps(plan: SitePlan, fix: str, node: str = "node-a") -> list[Step]:
    plans: list[Plan] = [p for p in plan.plans if p.fix == fix and p.node == node]
    return [s for p in plans for s in p.steps if s.kind is Kind.FILE]


def _file_step(plan: SitePlan, fix: str, directory: str) -> Step:
    (step,) = [s for s in _file_steps(plan, fix) if s.target.startswith(directory)]
    assert step.after is not None
    return step


def _install(root: Path, step: Step) -> Path:
    """The step's file written under `root` as the node would have it."""
    path = root / step.target.lstrip("/")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(step.after or "", encoding="utf-8")
    return path


# -- limits.d ------------------------------------------------------------------------------

LIMIT_ITEMS = {"core", "data", "fsize", "memlock", "nofile", "rss", "stack", "cpu", "nproc", "as",
               "maxlogins", "maxsyslogins", "nonewprivs", "priority", "locks", "sigpending",
               "msgqueue", "nice", "rtprio"}
DOMAIN = re.compile(r"\*|[@%]?[A-Za-z_][A-Za-z0-9_.-]*\$?|%|:?\d*:?\d*|@:?\d*:?\d*")


def parse_limits_conf(text: str) -> list[tuple[str, str, str, str]]:
    """limits.conf(5), strictly: `#` comments, blank lines, else exactly four fields."""
    rules = []
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        fields = stripped.split()
        if len(fields) != 4:
            raise ValueError(f"line {number}: {len(fields)} fields, not 4: {line!r}")
        domain, kind, item, value = fields
        if not DOMAIN.fullmatch(domain):
            raise ValueError(f"line {number}: bad domain {domain!r}")
        if kind not in ("soft", "hard", "-"):
            raise ValueError(f"line {number}: bad type {kind!r}")
        if item not in LIMIT_ITEMS:
            raise ValueError(f"line {number}: unknown item {item!r}")
        if item == "memlock" and not (value in ("unlimited", "infinity", "-1") or value.isdigit()):
            raise ValueError(f"line {number}: bad memlock value {value!r}")
        rules.append((domain, kind, item, value))
    return rules


_PAM_CHILD = r"""
import ctypes, resource, sys
pam = ctypes.CDLL("libpam.so.0")
CONV = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
                        ctypes.c_void_p)
class Conv(ctypes.Structure):
    _fields_ = [("conv", CONV), ("appdata_ptr", ctypes.c_void_p)]
callback = CONV(lambda n, messages, replies, data: 19)  # PAM_CONV_ERR: nothing is asked
conv = Conv(callback, None)
handle = ctypes.c_void_p()
pam.pam_start_confdir.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(Conv),
                                  ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
resource.setrlimit(resource.RLIMIT_MEMLOCK, (65536, 65536))
rc = pam.pam_start_confdir(b"strixwizard-limits", sys.argv[1].encode(), ctypes.byref(conv),
                           sys.argv[2].encode(), ctypes.byref(handle))
assert rc == 0, rc
sys.exit(pam.pam_open_session(handle, 0))
"""


def pam_limits_memlock(tmp_path: Path, text: str, user: str) -> tuple[str, str] | None:
    """The memlock (soft, hard) pam_limits sets for `user` from a limits file holding `text`, as
    the setrlimit it calls shows it; None when it leaves memlock as it found it (64 KiB).

    pam_limits starts from PID 1's limits (unlimited memlock on this machine), which would hide
    a broken file: the child runs as PID 1 of its own PID namespace, so the limits it starts
    from are its own 64 KiB."""
    strace, unshare = _tool("strace"), _tool("unshare")
    if not any(Path(d, "security", "pam_limits.so").exists()
               for d in ("/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu", "/usr/lib64")):
        pytest.skip("pam_limits not installed")
    conf = tmp_path / f"limits-{user}.conf"
    conf.write_text(text)
    pam_dir = tmp_path / "pam.d"
    pam_dir.mkdir(exist_ok=True)
    (pam_dir / "strixwizard-limits").write_text(f"session required pam_limits.so conf={conf}\n")
    trace = tmp_path / f"trace-{user}"
    done = subprocess.run([strace, "-f", "-qq", "-e", "trace=prlimit64,setrlimit", "-o", str(trace),
                           unshare, "--pid", "--fork", "--mount-proc",
                           sys.executable, "-c", _PAM_CHILD, user, str(pam_dir)],
                          capture_output=True, text=True, timeout=60, check=False)
    if done.returncode != 0 and "unshare" in done.stderr:
        pytest.skip(f"no PID namespace here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    calls = re.findall(r"RLIMIT_MEMLOCK, \{rlim_cur=([^,]+), rlim_max=([^}]+)\}", trace.read_text())
    assert len(calls) == 2 and calls[0] == ("64*1024", "64*1024"), calls  # the child's, then pam's
    return None if calls[1] == calls[0] else calls[1]


def test_memlock_file_parses_as_limits_conf(tmp_path: Path) -> None:
    plan = _plan(tmp_path, only=("limits.memlock",), memlock_kb=8192)
    step = _file_step(plan, "limits.memlock", "/etc/security/limits.d/")
    assert step.target.endswith(".conf")  # pam_limits reads only *.conf in limits.d
    assert parse_limits_conf(step.after or "") == [
        ("*", "soft", "memlock", "unlimited"), ("*", "hard", "memlock", "unlimited"),
        ("root", "soft", "memlock", "unlimited"), ("root", "hard", "memlock", "unlimited")]


def test_strict_limits_parser_refuses_what_pam_limits_would_skip() -> None:
    for bad in ("* soft memlock", "* soft memlok unlimited", "* sof memlock 1", "* soft memlock x"):
        with pytest.raises(ValueError):
            parse_limits_conf(bad + "\n")


@pytest.mark.parametrize("user", ["root", "nobody"])
def test_memlock_file_is_read_by_pam_limits(tmp_path: Path, user: str) -> None:
    plan = _plan(tmp_path, only=("limits.memlock",), memlock_kb=8192)
    text = _file_step(plan, "limits.memlock", "/etc/security/limits.d/").after or ""
    assert pam_limits_memlock(tmp_path, text, user) == ("RLIM64_INFINITY", "RLIM64_INFINITY")


def test_pam_limits_oracle_sees_a_broken_file_and_the_root_exception(tmp_path: Path) -> None:
    """The check above can fail: a misspelt item sets nothing, and `*` does not cover root."""
    assert pam_limits_memlock(tmp_path, "root soft memlok unlimited\n", "root") is None
    assert pam_limits_memlock(tmp_path, "* soft memlock unlimited\n* hard memlock unlimited\n",
                              "root") is None
    assert pam_limits_memlock(tmp_path, "root soft memlock 32\n", "root") == ("32*1024", "64*1024")


# -- modprobe.d ----------------------------------------------------------------------------

MODULE = re.compile(r"[A-Za-z0-9_-]+")
OPTION = re.compile(r"[A-Za-z0-9_.-]+=[^\s\"]*|[A-Za-z0-9_.-]+")


def parse_modprobe_conf(text: str) -> list[tuple[str, str, list[str]]]:
    """modprobe.d(5), strictly, for the `options` command strixwizard writes."""
    commands = []
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        command, *args = stripped.split()
        if command != "options" or len(args) < 2:
            raise ValueError(f"line {number}: not `options MODULE option...`: {line!r}")
        module, *options = args
        if not MODULE.fullmatch(module) or not all(OPTION.fullmatch(o) for o in options):
            raise ValueError(f"line {number}: bad module or option: {line!r}")
        commands.append((command, module.replace("-", "_"), options))
    return commands


@pytest.mark.parametrize("netdev", ["enp194s0np0", "f;id>PWNED0"])
def test_modprobe_file_parses_and_modprobe_reads_it(tmp_path: Path, netdev: str) -> None:
    plan = _plan(tmp_path, netdev, only=("roce.enable",), out_of_tree=True)
    step = _file_step(plan, "roce.enable", "/etc/modprobe.d/")
    assert step.target.endswith(".conf")  # modprobe reads only *.conf in modprobe.d
    assert parse_modprobe_conf(step.after or "") == [("options", "irdma", ["roce_ena=1"])]
    path = _install(tmp_path / "node", step)
    done = subprocess.run([_tool("modprobe"), "--showconfig", "-C", str(path.parent)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert [line for line in done.stdout.splitlines() if line.startswith("options irdma ")] == [
        "options irdma roce_ena=1"]


# -- systemd-networkd drop-ins -------------------------------------------------------------

def parse_systemd_ini(text: str) -> dict[str, dict[str, list[str]]]:
    """systemd.syntax(7), strictly: `[Section]` headers, `Key=value`, `#`/`;` comments, no
    continuation lines (strixwizard writes none)."""
    sections: dict[str, dict[str, list[str]]] = {}
    current: dict[str, list[str]] | None = None
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped[0] in "#;":
            continue
        if stripped.endswith("\\"):
            raise ValueError(f"line {number}: continuation line")
        if re.fullmatch(r"\[[A-Za-z][A-Za-z0-9]*\]", stripped):
            current = sections.setdefault(stripped[1:-1], {})
            continue
        key, sep, value = stripped.partition("=")
        if current is None or not sep or not re.fullmatch(r"[A-Za-z][A-Za-z0-9]*", key.strip()):
            raise ValueError(f"line {number}: not `Key=value` in a section: {line!r}")
        current.setdefault(key.strip(), []).append(value.strip())
    return sections


@pytest.mark.parametrize("netdev", HOSTILE_NETDEVS)
@pytest.mark.parametrize("where", ["/etc/systemd/network", "/usr/lib/systemd/network",
                                   "/run/systemd/network"])
def test_networkd_dropin_is_found_by_systemd_for_its_network_file(
        tmp_path: Path, netdev: str, where: str) -> None:
    base = f"10-{netdev}.network"
    plan = _plan(tmp_path, netdev, only=("net.mtu",), network_file=f"{where}/{base}")
    step = _file_step(plan, "net.mtu", "/etc/systemd/network/")
    assert step.target == f"/etc/systemd/network/{base}.d/90-strixwizard-mtu.conf"
    assert parse_systemd_ini(step.after or "") == {"Link": {"MTUBytes": ["9000"]}}
    root = tmp_path / "node"
    network = root / where.lstrip("/") / base
    network.parent.mkdir(parents=True)
    network.write_text(f"[Match]\nName={netdev}\n")
    dropin = _install(root, step)
    done = subprocess.run([_tool("systemd-analyze"), "cat-config", f"--root={root}",
                           f"systemd/network/{base}"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert f"# {dropin}\n{step.after}" in done.stdout
    assert done.stdout.index(f"# {network}\n") < done.stdout.index(f"# {dropin}\n")


@pytest.mark.parametrize("network_file", ["/run/systemd/network/", "/etc/systemd/network/..",
                                          "/etc/systemd/network/.network", "/etc/x/10-a.conf"])
def test_no_networkd_dropin_for_a_network_file_networkd_would_not_read(
        tmp_path: Path, network_file: str) -> None:
    """A NETWORK_FILE= that names no .network file: the MTU is kept by a unit instead."""
    plan = _plan(tmp_path, only=("net.mtu",), network_file=network_file)
    assert [s for s in _file_steps(plan, "net.mtu") if "/systemd/network/" in s.target] == []
    assert any(s.target.startswith("/etc/systemd/system/") for s in _file_steps(plan, "net.mtu"))


# -- tmpfiles.d ----------------------------------------------------------------------------

HOSTILE_RDMADEVS = ["rocep194s0", "roce%h", "ro ce", 'q"q', "b\\s", "it's", "x$(id)", "mlx*",
                    "d[0]?"]
#: Other devices' directories a mis-escaped glob or path would reach.
DECOYS = ["mlx5_0", "d0x", "bs", "b", "roce", "x", "rocep194s1"]


@pytest.mark.parametrize("rdmadev", HOSTILE_RDMADEVS)
def test_tmpfiles_rules_write_exactly_the_device_configfs(tmp_path: Path, rdmadev: str) -> None:
    plan = _plan(tmp_path / "plan", rdmadev=rdmadev, only=("rdma.roce_v2_default",))
    step = _file_step(plan, "rdma.roce_v2_default", "/etc/strixwizard/")
    root = tmp_path / "node"
    rules = _install(root, step)
    configfs = root / "sys/kernel/config/rdma_cm"
    for device in [rdmadev, *DECOYS]:
        ports = configfs / device / "ports/1"
        ports.mkdir(parents=True)  # configfs makes these when the directory is created
        for name in ("default_roce_mode", "default_roce_tos"):
            (ports / name).write_text("\n")
    (configfs / rdmadev).rename(configfs / "moved")  # the `d` line must make it again
    done = subprocess.run([_tool("systemd-tmpfiles"), f"--root={root}", "--create", str(rules)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0 and not done.stderr.strip(), done.stderr
    assert (configfs / rdmadev).is_dir()
    (configfs / rdmadev).rmdir()
    (configfs / "moved").rename(configfs / rdmadev)
    done = subprocess.run([_tool("systemd-tmpfiles"), f"--root={root}", "--create", str(rules)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0 and not done.stderr.strip(), done.stderr
    ports = configfs / rdmadev / "ports/1"
    assert (ports / "default_roce_mode").read_text() == "RoCE v2"
    assert (ports / "default_roce_tos").read_text() == "104"
    assert sorted(p.name for p in configfs.iterdir()) == sorted({rdmadev, *DECOYS})
    for decoy in set(DECOYS) - {rdmadev}:
        assert (configfs / decoy / "ports/1/default_roce_mode").read_text() == "\n", decoy


def test_tmpfiles_rules_are_not_written_for_a_device_name_with_a_newline(tmp_path: Path) -> None:
    plan = _plan(tmp_path, rdmadev="roce\nx", only=("rdma.roce_v2_default",))
    assert _file_steps(plan, "rdma.roce_v2_default") == []
    (cm,) = [p for p in plan.plans if p.fix == "rdma.roce_v2_default" and p.node == "node-a"]
    assert cm.persistence.startswith("runtime only") and "tmpfiles.d" in cm.persistence


def _unit_commands(text: str) -> list[list[str]]:
    """The unit's ExecStart= lines as systemd runs them (systemd.syntax(7) "Quoting": C escapes
    undone inside quotes too, then `$$` and `%%`)."""
    return [command_argv(line) for line in settings(text, "ExecStart")]


@pytest.mark.parametrize("rdmadev", HOSTILE_RDMADEVS)
def test_rdma_cm_unit_waits_for_its_rdma_device_before_making_the_directory(
        tmp_path: Path, rdmadev: str) -> None:
    """An RDMA device registers after its netdev (rdma-core's udev rule loads mlx5_ib on the
    netdev's add event; soft-RoCE needs `rdma link add`): the unit waits, bounded, for
    /sys/class/infiniband/DEV before systemd-tmpfiles makes rdma_cm/DEV, and is not ordered
    before network.target (a soft-RoCE unit after the network would otherwise stall the boot)."""
    plan = _plan(tmp_path / "plan", rdmadev=rdmadev, only=("rdma.roce_v2_default",))
    step = _file_step(plan, "rdma.roce_v2_default", "/etc/systemd/system/")
    unit = _install(tmp_path / "unit", step)
    done = subprocess.run([_tool("systemd-analyze"), "verify", "--man=no", str(unit)],
                          capture_output=True, text=True, timeout=60, check=False, cwd=unit.parent)
    assert done.returncode == 0 and not (done.stdout + done.stderr).strip(), done.stderr
    text = step.after or ""
    assert "Before=network.target" not in text
    wait, tmpfiles = _unit_commands(text)
    assert tmpfiles[:2] == ["systemd-tmpfiles", "--create"]
    assert wait[:2] == ["/bin/sh", "-c"] and wait[4:] == [f"/sys/class/infiniband/{rdmadev}", "90"]

    device = tmp_path / "infiniband" / rdmadev  # the same script, on a path this test can make
    absent = subprocess.run([*wait[:4], str(device), "1"], capture_output=True, text=True,
                            timeout=30, check=False)
    assert absent.returncode == 1 and "did not appear within 1 s" in absent.stderr
    waiter = subprocess.Popen([*wait[:4], str(device), "20"], stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(1.5)
        assert waiter.poll() is None  # still waiting: the device has not registered yet
        device.mkdir(parents=True)
        assert waiter.wait(timeout=10) == 0
    finally:
        if waiter.poll() is None:
            waiter.kill()
            waiter.wait()


# -- systemd units -------------------------------------------------------------------------

#: Interface names a generated unit binds to (`BindsTo=` the device systemd names after them).
UNIT_NETDEVS = ["enp1s0-a", "br.10", "vlan-1.20", ".hidden", "f;id>x", "p$%q", "näme", "a_b"]


def _systemd_tool(name: str) -> str:
    """A tool of Debian's systemd package: this machine must have it (missing fails, not skips)."""
    found = shutil.which(name)
    assert found, f"{name} not found: Debian's systemd package provides it"
    return found


@pytest.mark.parametrize("netdev", UNIT_NETDEVS)
def test_binds_to_is_systemd_escaped(netdev: str) -> None:
    expected = subprocess.run([_systemd_tool("systemd-escape"), "--path",
                               f"/sys/subsystem/net/devices/{netdev}"],
                              capture_output=True, text=True, check=True).stdout.strip()
    assert systemd_path_escape(f"/sys/subsystem/net/devices/{netdev}") == expected
    text = unit_text("net.mtu", f"MTU 9000 on {netdev}", [["ip", "link", "set", "dev", netdev,
                                                           "mtu", "9000"]], netdev)
    assert f"BindsTo={expected}.device\n" in text


@pytest.mark.parametrize("netdev", UNIT_NETDEVS)
def test_unit_passes_systemd_analyze_verify(tmp_path: Path, netdev: str) -> None:
    path = tmp_path / unit_name("net.mtu", netdev)
    path.write_text(unit_text("net.mtu", f"MTU 9000 on {netdev}",
                              [["ip", "link", "set", "dev", netdev, "mtu", "9000"]], netdev))
    done = subprocess.run([_systemd_tool("systemd-analyze"), "verify", "--man=no", str(path)],
                          capture_output=True, text=True, timeout=60, check=False, cwd=tmp_path)
    assert done.returncode == 0 and not (done.stdout + done.stderr).strip(), done.stderr


def test_specifiers_and_variables_stay_literal() -> None:
    text = unit_text("net.mtu", "MTU on p$%q", [["ip", "link", "set", "dev", "p$%q"]], "p$%q")
    assert "Description=strixwizard: MTU on p$%%q\n" in text
    assert "ExecStart=ip link set dev 'p$$%%q'\n" in text
    assert _unit_commands(text) == [["ip", "link", "set", "dev", "p$%q"]]

"""A multi-host test lab: network namespaces, each running a real OpenSSH sshd.

Layout of one lab of two hosts (``k`` is an even number claimed per lab)::

    root namespace                        namespace <prefix>0 = node0
      unreachable 10.99.0.0/16              mgmt0 10.99.k.10/24    sshd on :22
      bridge sw<k>br 10.99.k.1/24           fab0  10.99.(k+1).1/30 ──┐
        ├── sw<k>m0 ═══ veth ═══ node0 mgmt0                          │ veth
        └── sw<k>m1 ═══ veth ═══ node1 mgmt0                          │
                                          namespace <prefix>1 = node1 │
                                            mgmt0 10.99.k.11/24       │
                                            fab0  10.99.(k+1).2/30 ──┘

- Management: one veth per host from its namespace (``mgmt0``) into a bridge in
  the root namespace; the bridge has ``.1``, host ``i`` has ``.(10+i)``.  The
  root namespace reaches the hosts only through that bridge's /24 route; the
  rest of 10.99.0.0/16 is ``unreachable`` so nothing leaves by the default route.
  The namespaces have no default route at all.
- Fabric: hosts are paired 0-1, 2-3, ... by a veth pair straight between the two
  namespaces (``fab0`` on both sides), one /30 per pair.  With an odd number of
  hosts the last one has no fabric link (``fabric_addr`` and ``fabric_peer`` are
  None).  ``Lab(..., fabric="switch")`` instead joins every host's ``fab0`` to a
  fabric bridge ``sw<k>fb`` in the root namespace (a switch: no address on it,
  so the root namespace still has no route to the fabric): host ``i`` has
  ``10.99.(k+1).(1+i)/24`` and ``fabric_peer`` None; every host reaches every
  other one, as a cluster behind one switch does.
- Routes (bridge, mgmt0, fab0) carry ``quickack 1``: without it delayed ACKs add
  tens of milliseconds to each SSH exchange.
- Each host runs ``/usr/sbin/sshd -D`` with a config, host key, authorized keys,
  pid file and log in the host's own directory; ``/etc/ssh`` is never read or
  written.  The key exchange is limited to curve25519 (the post-quantum
  sntrup/mlkem ones cost ~100 ms of CPU per connection).
- Each host is a node of its own: ``ip netns exec NS unshare --pid --fork
  --mount-proc --kill-child python3 -c NODE_INIT HOSTDIR/home`` starts a small
  init, PID 1 of a new PID namespace with its own /proc, in a private mount
  namespace (``ip netns exec`` already enters one that is a slave of the host's;
  ``unshare`` makes a further private one).  The init bind-mounts the host's
  home on /root, then only reaps orphans; sshd is started into its namespaces
  with ``nsenter --target INIT --pid --mount --net``.  So the bind mount is seen
  only by that sshd and what it runs, the real /root is untouched, and a process
  started over SSH sees only its node's processes (``ray stop``, ``pkill`` on
  one node reach that node alone).  Killing the init (its root-namespace PID is
  ``init_pid``) ends every process of the node; ``kill_sshd`` stops the sshd
  alone and ``start_sshd`` starts a new one in the same node while its init
  lives (a new node once ``kill_all`` ended it).  ``proc`` is the node's own
  /proc seen from the root namespace, ``root_pid`` maps a PID a node reports
  (pid files, ``$$``) to the root namespace's.  Commands over SSH
  thus run with HOME=/root being an empty per-host directory: no ``.bashrc``, no
  pyenv (which costs ~250 ms per command on this machine), PATH is sshd's
  default, so ``python3`` is the system one.  Consequence: the lab's workdir
  must not live under /root (sshd would not see its own files); ``Lab`` refuses
  such a workdir.
- Processes: every init and sshd is tracked by its root-namespace PID.  Killing
  always goes through a pidfd and first checks that the process is in one of
  this lab's namespaces, so a recorded PID that was reused can never hit an
  unrelated process.  ``down()`` kills the inits (which ends their PID
  namespaces) and then any other process still inside the lab's network
  namespaces (``run_in_ns`` commands), found by comparing network-namespace
  inodes in /proc.  The root namespace sees every node's processes: never
  ``pkill`` from it.
- Parallel labs: a lock file serialises choosing ``k`` (a free pair of /24s:
  management ``10.99.k.0/24``, fabric ``10.99.(k+1).0/24``, k even in 2..252)
  and creating its bridge.  Namespace names carry the PID and a per-process
  counter (``lab.prefix``, e.g. ``swlab-4242-0-``), so leftovers never collide.
- The unreachable route is added with ``proto 77`` as a marker.  ``down()``
  removes it only when it carries that marker (a lab added it, not an admin)
  and no other lab's route is left inside 10.99.0.0/16.
- ``down()`` is idempotent and undoes a partial ``up()``: every name derives
  from ``prefix``, ``n`` and ``k``, and each object is removed "if it exists";
  root-namespace links are removed only if they carry the lab's alias (set
  on each link as it is created), so a lab never deletes another's.
- Stale labs: each live lab has a state file in /run/strixwizard-lab/, written
  as soon as ``k`` is claimed.  ``sweep_stale_labs()`` tears down those whose
  owning process died without ``down()`` (a SIGKILLed test run); the pytest
  fixture and ``scripts/lab.py up`` call it first.

Using it from pytest (``conftest.py``)::

    from tests.support.lab import lab_fixture
    lab3 = lab_fixture(3)            # a session-scoped fixture named "lab3"

or by hand::

    with Lab(tmp_path_factory.mktemp("lab"), 3) as lab:
        yield lab
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import json
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

LAB_NET = "10.99.0.0/16"
LAB_NET_PREFIX = "10.99."
#: Marks the unreachable route as added by a lab (not a registered protocol number).
ROUTE_PROTO = "77"
SSHD = "/usr/sbin/sshd"
#: Debian's own Python runs each node's init (no virtualenv, no pyenv)
NODE_PYTHON = "/usr/bin/python3"
PRIVSEP_DIR = Path("/run/sshd")
LOCK_FILE = Path("/run/lock/strixwizard-lab.lock")
STATE_FORMAT = "strixwizard-lab/1"
#: One state file per live lab (tmpfs: gone at reboot, like the namespaces).
REGISTRY = Path("/run/strixwizard-lab")
#: held while sweeping stale labs (in REGISTRY, never a lab's state file: those end in .json)
SWEEP_LOCK = ".sweep.lock"
MAX_HOSTS = 128  # 64 fabric /30s fit in one /24
READY_TIMEOUT = 10.0
KILL_TIMEOUT = 3.0
CMD_TIMEOUT = 30.0
SSH_PORT = 22
#: A compiler cache for what nodes compile (the llama.cpp build command's lab test): CMake takes
#: its compiler launcher from these variables (CMake 3.17+), so the product's build script runs
#: unchanged. Outside /root, which each node sees as its own home; kept between runs like the VM
#: kernel. Same paths on every run (/root/llama-build inside a node), so a second run hits.
CCACHE_DIR = Path("/var/cache/strixwizard-ccache")

#: tool -> Debian package that provides it
REQUIRED_TOOLS: dict[str, str] = {
    "ip": "iproute2",
    SSHD: "openssh-server",
    "ssh-keygen": "openssh-client",
    "ssh": "openssh-client",
    "unshare": "util-linux",
    "nsenter": "util-linux",
    "mount": "mount",
    NODE_PYTHON: "python3",
}

#: PID 1 of a lab node (argv[1]: the host's home).  Mounts the home on /root, says
#: "ready", then reaps orphans (daemons whose parent exited are re-parented to it).
#: Its exit, on SIGTERM, makes the kernel kill every process of the namespace.
_NODE_INIT = """
import os, signal, sys, time
signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
child = os.fork()
if child == 0:
    os.execvp("mount", ["mount", "--bind", sys.argv[1], "/root"])
if os.waitpid(child, 0)[1] != 0:
    sys.exit("node init: mount --bind of the home on /root failed")
print("ready", flush=True)
os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
while True:
    try:
        os.wait()
    except ChildProcessError:
        time.sleep(0.2)
"""

_lab_counter = itertools.count()


class LabError(RuntimeError):
    """The lab could not be set up or torn down."""


def require_lab_tools() -> None:
    """Raise LabError naming what is missing: root, or a tool and its apt package."""
    problems = []
    if os.geteuid() != 0:
        problems.append("the lab needs root (network namespaces, bridges, sshd)")
    missing = {
        tool: pkg
        for tool, pkg in REQUIRED_TOOLS.items()
        if not (os.access(tool, os.X_OK) if tool.startswith("/") else shutil.which(tool))
    }
    if missing:
        packages = " ".join(sorted(set(missing.values())))
        problems.append(f"missing {', '.join(missing)}: apt-get install {packages}")
    if problems:
        raise LabError("cannot run the test lab: " + "; ".join(problems))


def _run(
    argv: Sequence[str], *, stdin: str | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(list(argv), input=stdin, capture_output=True, text=True, timeout=CMD_TIMEOUT)
    if check and proc.returncode != 0:
        raise LabError(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr.strip()}")
    return proc


def _ip_batch(lines: Iterable[str], netns: str | None = None) -> None:
    """Run many ``ip`` commands in one process (``ip -batch``); stops at the first error."""
    argv = ["ip"] + (["-n", netns] if netns else []) + ["-batch", "-"]
    _run(argv, stdin="".join(line + "\n" for line in lines))


def _ip_json(*args: str) -> list[dict[str, Any]]:
    out = _run(["ip", "-j", *args]).stdout.strip()
    return json.loads(out) if out else []


@contextlib.contextmanager
def _lab_lock() -> Iterator[None]:
    """Serialise block allocation and the unreachable route between labs."""
    LOCK_FILE.parent.mkdir(parents=True, exist_ok=True)
    with open(LOCK_FILE, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _lab_routes() -> list[dict[str, Any]]:
    """Routes of the root namespace's main table inside 10.99.0.0/16."""
    return [r for r in _ip_json("-4", "route", "show") if r.get("dst", "").startswith(LAB_NET_PREFIX)]


def _unreachable_route(routes: list[dict[str, Any]]) -> dict[str, Any] | None:
    return next((r for r in routes if r.get("dst") == LAB_NET and r.get("type") == "unreachable"), None)


def _claim_block() -> int:
    """Pick an even k whose 10.99.k.0/24 and 10.99.(k+1).0/24 no route or link uses.

    Must run under the lab lock, and the caller must create the bridge (whose
    route marks the block taken) before releasing it.
    """
    taken: set[int] = set()
    for route in _lab_routes():
        octets = route["dst"].split("/")[0].split(".")
        if route["dst"] != LAB_NET and len(octets) == 4:
            taken.add(int(octets[2]) & ~1)
    for link in _ip_json("link", "show"):
        m = re.match(r"sw(\d+)[a-z]", link.get("ifname", ""))
        if m:
            taken.add(int(m.group(1)))
    for k in range(2, 254, 2):
        if k not in taken:
            return k
    raise LabError("no free /23 left in 10.99.0.0/16 (leftover labs? see scripts/lab.py)")


def _netns_inode(netns: str) -> tuple[int, int] | None:
    try:
        st = os.stat(f"/run/netns/{netns}")
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def _pid_netns_inode(pid: int) -> tuple[int, int] | None:
    try:
        st = os.stat(f"/proc/{pid}/ns/net")
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def _pids_in_netns(netnses: Iterable[str]) -> list[int]:
    """PIDs of all processes living in any of these (named) network namespaces."""
    inodes = {ino for ino in map(_netns_inode, netnses) if ino is not None}
    if not inodes:
        return []
    return [
        int(entry)
        for entry in os.listdir("/proc")
        if entry.isdigit() and _pid_netns_inode(int(entry)) in inodes
    ]


def _kill_in_netns(pids: Iterable[int], netnses: Iterable[str], timeout: float = KILL_TIMEOUT) -> None:
    """SIGTERM, then SIGKILL, the given PIDs that live in one of ``netnses``."""
    inodes = {ino for ino in map(_netns_inode, netnses) if ino is not None}
    _kill_where(pids, lambda pid: _pid_netns_inode(pid) in inodes, timeout)


def _kill_owned(pids: Iterable[int], workdir: str, timeout: float = KILL_TIMEOUT) -> None:
    """SIGTERM, then SIGKILL, those of ``pids`` whose command line names ``workdir`` (a lab's
    own node init or sshd, when its namespace's name is already gone)."""
    def ours(pid: int) -> bool:
        try:
            return workdir.encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return False

    _kill_where(pids, ours, timeout)


def _kill_where(pids: Iterable[int], ours: Callable[[int], bool], timeout: float) -> None:
    """SIGTERM, then SIGKILL, the PIDs for which ``ours`` holds, waiting (bounded) until they
    have exited. Through pidfds: the check and the signal address the same process, even if
    a PID is reused meanwhile."""
    fds: list[int] = []
    try:
        for pid in set(pids):
            try:
                fd = os.pidfd_open(pid)
            except OSError:
                continue
            if ours(pid):
                fds.append(fd)
            else:
                os.close(fd)
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for fd in fds:
                with contextlib.suppress(ProcessLookupError):
                    signal.pidfd_send_signal(fd, sig)
            if _wait_pidfds(fds, timeout):
                return
    finally:
        for fd in fds:
            os.close(fd)


def _wait_pidfds(fds: list[int], timeout: float) -> bool:
    """True once every pidfd reports its process exited (within ``timeout``)."""
    pending = set(fds)
    deadline = time.monotonic() + timeout
    while pending:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        poller = select.poll()
        for fd in pending:
            poller.register(fd, select.POLLIN)
        for fd, _ in poller.poll(left * 1000):
            pending.discard(fd)
    return True


def _keygen(path: Path, comment: str) -> subprocess.Popen[bytes]:
    """Start generating an ed25519 key pair at ``path`` (replacing an old one)."""
    for old in (path, path.with_name(path.name + ".pub")):
        old.unlink(missing_ok=True)
    return subprocess.Popen(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def _wait_all(procs: Sequence[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        _, err = proc.communicate(timeout=CMD_TIMEOUT)
        if proc.returncode != 0:
            raise LabError(f"ssh-keygen failed: {err.decode().strip()}")


def _quickack_route(subnet: str, dev: str, src: str) -> str:
    """``ip`` batch line replacing the kernel's connected route by one with quickack.

    Without quickack, delayed ACKs stall SSH exchanges by tens of milliseconds.
    """
    return f"route replace {subnet} dev {dev} proto kernel scope link src {src} quickack 1"


def _public_key(path: Path) -> str:
    """``ssh-ed25519 AAAA...`` from a .pub file, without the comment."""
    return " ".join(path.read_text().split()[:2])


@dataclass
class LabHost:
    """One lab node: a network namespace with its own sshd."""

    index: int
    name: str
    netns: str
    dir: Path
    mgmt_addr: str
    fabric_addr: str | None = None
    fabric_peer: str | None = None
    #: the host's public key, ``ssh-ed25519 AAAA...`` (no comment)
    host_key_pub: str = ""
    sshd_pid: int | None = None
    #: root-namespace PID of the node's init (PID 1 of its PID namespace)
    init_pid: int | None = None
    _proc: subprocess.Popen[bytes] | None = field(default=None, repr=False, compare=False)
    _init: subprocess.Popen[bytes] | None = field(default=None, repr=False, compare=False)

    @property
    def home(self) -> Path:
        """Seen as /root by this host's sshd and the commands it runs."""
        return self.dir / "home"

    @property
    def host_key(self) -> Path:
        return self.dir / "ssh_host_ed25519_key"

    @property
    def sshd_config(self) -> Path:
        return self.dir / "sshd_config"

    @property
    def authorized_keys(self) -> Path:
        return self.dir / "authorized_keys"

    @property
    def sshd_log(self) -> Path:
        return self.dir / "sshd.log"

    @property
    def bin_dir(self) -> Path:
        """First on PATH for commands run over SSH: drop stand-in executables here."""
        return self.dir / "bin"

    def exec_count(self) -> int:
        """Sessions that ran a command, as this host's sshd logged them (LogLevel VERBOSE)."""
        if not self.sshd_log.exists():
            return 0
        return self.sshd_log.read_text(errors="replace").count("Starting session: command")

    def stand_in(self, name: str, script: str) -> Path:
        """Install an executable `name` (a shell script) for this host's SSH sessions only."""
        path = self.bin_dir / name
        path.write_text(script)
        path.chmod(0o755)
        return path

    def kill_all(self) -> None:
        """Kill this node's init, and so its sshd and every process of the node: the host goes
        down mid-run.  The next ``start_sshd`` boots a new node."""
        _kill_in_netns([self.init_pid] if self.init_pid else [], [self.netns])
        _kill_in_netns(_pids_in_netns([self.netns]), [self.netns])
        self._reap()

    def _reap(self) -> None:
        """Collect our dead children (bounded) and forget their PIDs."""
        for proc in (self._proc, self._init):
            if proc is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=KILL_TIMEOUT)
        self._proc = self._init = None
        self.sshd_pid = self.init_pid = None

    @property
    def proc(self) -> Path:
        """The node's own /proc (its PID namespace's), seen from the root namespace."""
        if not self.node_running():
            raise LabError(f"{self.name}: the node is down (no init)")
        return Path(f"/proc/{self.init_pid}/root/proc")

    def node_pids(self) -> dict[int, str]:
        """PID -> command line (space-joined) of every process of this node, as the node's
        own /proc lists them (PIDs of the node's namespace)."""
        found: dict[int, str] = {}
        for entry in self.proc.iterdir():
            if entry.name.isdigit():
                with contextlib.suppress(OSError):
                    raw = (entry / "cmdline").read_bytes()
                    found[int(entry.name)] = raw.rstrip(b"\0").replace(b"\0", b" ").decode(errors="replace")
        return found

    def pid_alive(self, pid: int) -> bool:
        """The node's process ``pid`` (a PID of the node's namespace) runs, not a zombie."""
        try:
            return _pid_alive(pid, self.proc)
        except LabError:  # the node is down: nothing of it runs
            return False

    def root_pid(self, pid: int) -> int | None:
        """The root-namespace PID of this node's process ``pid`` (as the node reports it:
        a pid file, ``$$``); None if the node has no such process."""
        if not self.node_running():
            return None
        try:
            node_ns = os.stat(f"/proc/{self.init_pid}/ns/pid").st_ino
        except OSError:
            return None
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                if os.stat(f"/proc/{entry}/ns/pid").st_ino != node_ns:
                    continue
                status = Path(f"/proc/{entry}/status").read_text()
            except OSError:
                continue
            nspid = next((line.split()[1:] for line in status.splitlines() if line.startswith("NSpid:")), [])
            if nspid and nspid[-1] == str(pid):
                return int(entry)
        return None

    def run_in_node(
        self, argv: Sequence[str], *, check: bool = False, timeout: float = CMD_TIMEOUT
    ) -> subprocess.CompletedProcess[str]:
        """Run ``argv`` in this node's namespaces (network, PID, mounts), as an SSH session
        would, output captured."""
        if not self.node_running():
            raise LabError(f"{self.name}: the node is down (no init)")
        return subprocess.run(
            ["nsenter", f"--target={self.init_pid}", "--pid", "--mount", "--net", "--", *argv],
            capture_output=True,
            text=True,
            check=check,
            timeout=timeout,
        )

    def run_in_ns(
        self, argv: Sequence[str], *, check: bool = False, timeout: float = CMD_TIMEOUT
    ) -> subprocess.CompletedProcess[str]:
        """Run ``argv`` inside this host's namespace (``ip netns exec``), output captured."""
        return subprocess.run(
            ["ip", "netns", "exec", self.netns, *argv],
            capture_output=True,
            text=True,
            check=check,
            timeout=timeout,
        )

    def mtu(self, dev: str = "fab0") -> int:
        """The MTU of `dev` in this host's namespace, as the kernel reports it."""
        out = self.run_in_ns(["ip", "-j", "link", "show", "dev", dev], check=True).stdout
        return int(json.loads(out)[0]["mtu"])

    def start_sshd(self) -> None:
        """Start sshd in the node (booting the node first if it is down); returns once its
        PID is known, not when it accepts connections (see ``wait_sshd``)."""
        if self.sshd_running():
            raise LabError(f"{self.name}: sshd already running (pid {self.sshd_pid})")
        PRIVSEP_DIR.mkdir(mode=0o755, exist_ok=True)
        if not self.node_running():
            self._boot()
        argv = ["nsenter", f"--target={self.init_pid}", "--pid", "--mount", "--net", "--",
                SSHD, "-D", "-e", "-f", str(self.sshd_config)]
        with open(self.sshd_log, "ab") as log:
            # nsenter forks into the PID namespace: sshd is its child.
            self._proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # no terminal signals; survives a detached script
            )
        self.sshd_pid = _child_pid(self._proc)

    def sshd_running(self) -> bool:
        if self._proc is not None:
            return self._proc.poll() is None
        return self.sshd_pid is not None and _pid_netns_inode(self.sshd_pid) == _netns_inode(self.netns)

    def node_running(self) -> bool:
        """The node's init lives (and so its PID namespace, its processes, its /root)."""
        if self._init is not None:
            return self._init.poll() is None and self.init_pid is not None
        return self.init_pid is not None and _pid_netns_inode(self.init_pid) == _netns_inode(self.netns)

    def _boot(self) -> None:
        """Start the node's init in a new PID namespace and wait until it has mounted /root."""
        argv = ["ip", "netns", "exec", self.netns, "unshare", "--pid", "--fork", "--mount-proc",
                "--kill-child", "--", NODE_PYTHON, "-c", _NODE_INIT, str(self.home)]
        with open(self.sshd_log, "ab") as log:
            # ip netns exec execs unshare: the PID is unshare's, the init is its child.
            self._init = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=log,
                start_new_session=True,
            )
        assert self._init.stdout is not None
        with self._init.stdout as ready:
            readable, _, _ = select.select([ready], [], [], READY_TIMEOUT)
            line = ready.readline() if readable else b""
        self.init_pid = _child_pid(self._init)
        if line != b"ready\n" or self.init_pid is None:
            log_text = self.sshd_log.read_text(errors="replace").strip()[-2000:]
            self.kill_all()
            raise LabError(f"{self.name}: the node's init did not start: {log_text or '(no output)'}")

    def wait_sshd(self, timeout: float = READY_TIMEOUT) -> None:
        """Wait until sshd accepts TCP connections."""
        wait_for_sshds([self], timeout)

    def kill_sshd(self) -> None:
        """Stop this host's sshd (by its PID only); open sessions and the node's other
        processes are left alone."""
        if self.sshd_pid is not None:
            _kill_in_netns([self.sshd_pid], [self.netns])
        if self._proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._proc.wait(timeout=KILL_TIMEOUT)
        self._proc = None
        self.sshd_pid = None

    def restart_sshd(self, timeout: float = READY_TIMEOUT) -> None:
        self.kill_sshd()
        self.start_sshd()
        self.wait_sshd(timeout)

    def to_state(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "name": self.name,
            "netns": self.netns,
            "dir": str(self.dir),
            "mgmt_addr": self.mgmt_addr,
            "fabric_addr": self.fabric_addr,
            "fabric_peer": self.fabric_peer,
            "host_key_pub": self.host_key_pub,
            "sshd_pid": self.sshd_pid,
            "init_pid": self.init_pid,
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> LabHost:
        return cls(**{**state, "dir": Path(state["dir"])})


def _child_pid(proc: subprocess.Popen[bytes], timeout: float = READY_TIMEOUT) -> int | None:
    """The PID of ``proc``'s first child, once it has forked; None if ``proc`` exits first."""
    children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError, ValueError):
            first = children.read_text().split()
            if first:
                return int(first[0])
        if proc.poll() is not None:
            return None
        time.sleep(0.002)
    return None


def wait_for_sshds(hosts: Sequence[LabHost], timeout: float = READY_TIMEOUT) -> None:
    """Poll until every host's sshd accepts a TCP connection; bounded by ``timeout``."""
    pending = list(hosts)
    deadline = time.monotonic() + timeout
    while pending:
        for host in list(pending):
            if not host.sshd_running():
                log = host.sshd_log.read_text(errors="replace").strip()[-2000:]
                raise LabError(f"{host.name}: sshd exited during start: {log or '(no output)'}")
            with (
                contextlib.suppress(OSError),
                socket.create_connection((host.mgmt_addr, SSH_PORT), 0.2),
            ):
                pending.remove(host)
        if pending:
            if time.monotonic() > deadline:
                names = ", ".join(h.name for h in pending)
                raise LabError(f"sshd not accepting connections after {timeout}s: {names}")
            time.sleep(0.01)


class Lab:
    """``n`` hosts in network namespaces, each with its own sshd, under ``workdir``.

    Attributes after ``up()``: ``hosts``, ``client_key`` (private key authorised
    on every host), ``known_hosts``, ``ssh_config`` (``ssh -F`` it, then use the
    host names), ``bridge``, ``mgmt_net``, ``fabric_net``.  ``prefix`` is the
    unique namespace-name prefix of this instance.
    """

    def __init__(self, workdir: Path, n: int, prefix: str = "swlab", fabric: str = "pairs") -> None:
        if fabric not in ("pairs", "switch"):
            raise ValueError(f"fabric must be 'pairs' or 'switch', not {fabric!r}")
        self.fabric = fabric
        if not 1 <= n <= MAX_HOSTS:
            raise ValueError(f"n must be in 1..{MAX_HOSTS}, not {n}")
        if not re.fullmatch(r"[a-z][a-z0-9]{0,15}", prefix):
            raise ValueError(f"prefix must be [a-z][a-z0-9]{{0,15}}, not {prefix!r}")
        self.workdir = Path(workdir).resolve()
        if self.workdir == Path("/root") or Path("/root") in self.workdir.parents:
            raise ValueError("the lab's workdir must not be under /root (each sshd sees its own /root)")
        self.n = n
        self.prefix = f"{prefix}-{os.getpid()}-{next(_lab_counter)}-"
        #: the process that tears this lab down; None once detached (scripts/lab.py)
        self.owner_pid: int | None = os.getpid()
        self.client_key = self.workdir / "client_key"
        self.known_hosts = self.workdir / "known_hosts"
        self.ssh_config = self.workdir / "ssh_config"
        self.hosts: list[LabHost] = []
        #: k: management 10.99.k.0/24, fabric 10.99.(k+1).0/24; None until claimed
        self.block: int | None = None
        self._used = False

    # -- public ------------------------------------------------------------

    @property
    def bridge(self) -> str | None:
        return None if self.block is None else f"sw{self.block}br"

    @property
    def fabric_bridge(self) -> str | None:
        """The switch of a ``fabric="switch"`` lab (absent in a paired one)."""
        return None if self.block is None else f"sw{self.block}fb"

    @property
    def netns_names(self) -> list[str]:
        """Every namespace this lab may have made (names are derived, not recorded)."""
        return [f"{self.prefix}{i}" for i in range(self.n)]

    @property
    def mgmt_net(self) -> str:
        return f"10.99.{self._k}.0/24"

    @property
    def fabric_net(self) -> str:
        return f"10.99.{self._k + 1}.0/24"

    def up(self) -> Lab:
        """Create everything and wait for every sshd; on any failure, tear down and re-raise."""
        if self._used:
            raise LabError("a Lab can be brought up only once; make a new one")
        self._used = True
        require_lab_tools()
        try:
            self.workdir.mkdir(parents=True, exist_ok=True)
            self._create_bridge()
            self._make_hosts()
            keygens = self._start_keygens()
            self._create_namespaces()
            _wait_all(keygens)
            self._write_host_files()
            for host in self.hosts:
                host.start_sshd()
            wait_for_sshds(self.hosts)
            self._register()  # now with the sshd PIDs
        except BaseException as exc:
            try:
                self.down()
            except Exception as cleanup:
                exc.add_note(f"and the teardown after it failed too: {cleanup}")
            raise
        return self

    def down(self) -> None:
        """Kill, delete and unroute everything this lab made; idempotent.  The workdir stays."""
        errors: list[str] = []
        for step in (
            self._kill_processes,
            self._delete_namespaces,
            self._delete_links,
            self._delete_bridge,
            self._release_route,
        ):
            try:
                step()
            except Exception as exc:  # keep going: remove as much as we can
                errors.append(f"{step.__name__}: {exc}")
        if errors:
            raise LabError("lab teardown incomplete: " + "; ".join(errors))
        self._registry_file.unlink(missing_ok=True)

    def detach(self) -> None:
        """Leave the lab up when this process exits; ``sweep_stale_labs`` then skips it."""
        self.owner_pid = None
        self._register()

    def __enter__(self) -> Lab:
        return self.up()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.down()

    def host(self, name: str) -> LabHost:
        for host in self.hosts:
            if name in (host.name, host.netns, host.mgmt_addr):
                return host
        raise KeyError(name)

    def ssh_argv(self, host: LabHost, *command: str, key: Path | None = None) -> list[str]:
        """OpenSSH client argv for running ``command`` on ``host``; ignores ~/.ssh/config."""
        argv = ["ssh", "-F", "/dev/null", "-i", str(key or self.client_key)]
        for option, value in self._client_options().items():
            argv += ["-o", f"{option}={value}"]
        return [*argv, f"root@{host.mgmt_addr}", *command]

    def write_site_yaml(
        self,
        path: Path,
        hosts: Sequence[LabHost] | None = None,
        *,
        known_hosts: Path | None = None,
        deadline: float = 30.0,
        connect_timeout: float = 5.0,
    ) -> Path:
        """Write a site file listing ``hosts`` (default: all), trusting the lab's known_hosts.

        ``known_hosts`` points the site at another known_hosts file (to test unknown or
        changed host keys).
        """
        lines = [
            "site: lab",
            "ssh:",
            f"  known_hosts: {json.dumps(str(known_hosts or self.known_hosts))}",
            f"  deadline: {deadline}",
            f"  connect_timeout: {connect_timeout}",
            "nodes:",
        ]
        for host in self.hosts if hosts is None else hosts:
            lines += [
                f"  - name: {host.name}",
                f"    host: {host.mgmt_addr}",
                "    user: root",
                f"    key: {json.dumps(str(self.client_key))}",
            ]
            if host.fabric_addr:
                lines.append(f"    fabric_address: {host.fabric_addr}")
        path = Path(path)
        path.write_text("\n".join(lines) + "\n")
        return path

    def save_state(self, path: Path) -> Path:
        """Record what ``down`` needs so another process can tear the lab down.

        Every name derives from ``prefix``, ``n`` and ``block``; the PIDs are
        checked against the namespaces before any signal is sent.
        """
        state = {
            "format": STATE_FORMAT,
            "workdir": str(self.workdir),
            "n": self.n,
            "fabric": self.fabric,
            "prefix": self.prefix,
            "owner_pid": self.owner_pid,
            "block": self.block,
            "hosts": [h.to_state() for h in self.hosts],
        }
        path = Path(path)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(state, indent=2) + "\n")
        tmp.replace(path)
        return path

    @classmethod
    def from_state(cls, path: Path) -> Lab:
        """A Lab rebuilt from ``save_state`` output; only good for inspection and ``down()``."""
        state = json.loads(Path(path).read_text())
        if state.get("format") != STATE_FORMAT:
            raise LabError(f"{path}: not a lab state file ({STATE_FORMAT})")
        lab = cls(Path(state["workdir"]), state["n"], fabric=state.get("fabric", "pairs"))
        lab.prefix = state["prefix"]
        lab.owner_pid = state["owner_pid"]
        lab.block = state["block"]
        lab.hosts = [LabHost.from_state(h) for h in state["hosts"]]
        lab._used = True
        return lab

    # -- up ----------------------------------------------------------------

    @property
    def _registry_file(self) -> Path:
        return REGISTRY / f"{self.prefix.rstrip('-')}.json"

    def _register(self) -> None:
        REGISTRY.mkdir(mode=0o700, exist_ok=True)
        self.save_state(self._registry_file)

    @property
    def _k(self) -> int:
        if self.block is None:
            raise LabError("lab is not up")
        return self.block

    def _create_bridge(self) -> None:
        """Under the lock: safety route, a free block, and the bridge that claims it."""
        with _lab_lock():
            if _unreachable_route(_lab_routes()) is None:
                _run(["ip", "route", "add", "unreachable", LAB_NET, "proto", ROUTE_PROTO])
            self.block = k = _claim_block()
            self._register()  # before anything is named after k
            bridge = f"sw{k}br"
            _ip_batch(
                [
                    f"link add name {bridge} type bridge",
                    f"link set dev {bridge} alias {self.prefix}",
                    f"addr add 10.99.{k}.1/24 dev {bridge}",
                    f"link set dev {bridge} up",
                    _quickack_route(f"10.99.{k}.0/24", bridge, f"10.99.{k}.1"),
                ]
            )

    def _make_hosts(self) -> None:
        k = self._k
        for i in range(self.n):
            host = LabHost(
                index=i,
                name=f"node{i}",
                netns=f"{self.prefix}{i}",
                dir=self.workdir / f"node{i}",
                mgmt_addr=f"10.99.{k}.{10 + i}",
            )
            pair, side = divmod(i, 2)
            if self.fabric == "switch":
                host.fabric_addr = f"10.99.{k + 1}.{1 + i}"
            elif pair * 2 + 1 < self.n:  # odd last host: no fabric link
                host.fabric_addr = f"10.99.{k + 1}.{4 * pair + 1 + side}"
                host.fabric_peer = f"node{i + 1 - 2 * side}"
            self.hosts.append(host)

    def _start_keygens(self) -> list[subprocess.Popen[bytes]]:
        procs = [_keygen(self.client_key, "strixwizard-lab-client")]
        for host in self.hosts:
            host.dir.mkdir(parents=True, exist_ok=True)
            host.home.mkdir(mode=0o700, exist_ok=True)
            procs.append(_keygen(host.host_key, f"strixwizard-lab-{host.name}"))
        return procs

    def _create_namespaces(self) -> None:
        k = self._k
        for host in self.hosts:
            _run(["ip", "netns", "add", host.netns])
        root_cmds = []
        for host in self.hosts:
            veth = f"sw{k}m{host.index}"
            root_cmds.append(
                f"link add name {veth} up master {self.bridge} type veth peer name mgmt0 netns {host.netns}"
            )
            root_cmds.append(f"link set dev {veth} alias {self.prefix}")
        if self.fabric == "switch":
            switch = self.fabric_bridge
            root_cmds += [f"link add name {switch} type bridge", f"link set dev {switch} alias {self.prefix}",
                          f"link set dev {switch} up"]
            for host in self.hosts:
                veth = f"sw{k}f{host.index}"
                root_cmds.append(
                    f"link add name {veth} up master {switch} type veth peer name fab0 netns {host.netns}")
                root_cmds.append(f"link set dev {veth} alias {self.prefix}")
        for a, b in self._fabric_pairs():
            root_cmds.append(f"link add name fab0 netns {a.netns} type veth peer name fab0 netns {b.netns}")
        _ip_batch(root_cmds)
        for host in self.hosts:
            _ip_batch(self._namespace_cmds(host), netns=host.netns)

    def _fabric_pairs(self) -> list[tuple[LabHost, LabHost]]:
        if self.fabric == "switch":
            return []
        return [(self.hosts[i], self.hosts[i + 1]) for i in range(0, self.n - 1, 2)]

    def _namespace_cmds(self, host: LabHost) -> list[str]:
        k = self._k
        cmds = [
            "link set dev lo up",
            f"addr add {host.mgmt_addr}/24 dev mgmt0",
            "link set dev mgmt0 up",
            _quickack_route(f"10.99.{k}.0/24", "mgmt0", host.mgmt_addr),
        ]
        if host.fabric_addr:
            subnet, bits = f"10.99.{k + 1}.{4 * (host.index // 2)}/30", 30
            if self.fabric == "switch":
                subnet, bits = f"10.99.{k + 1}.0/24", 24
            cmds += [
                f"addr add {host.fabric_addr}/{bits} dev fab0",
                "link set dev fab0 up",
                _quickack_route(subnet, "fab0", host.fabric_addr),
            ]
        return cmds

    def _write_host_files(self) -> None:
        client_pub = self.client_key.with_name(self.client_key.name + ".pub").read_text()
        known = []
        for host in self.hosts:
            host.host_key_pub = _public_key(host.host_key.with_name(host.host_key.name + ".pub"))
            known.append(f"{host.mgmt_addr} {host.host_key_pub}\n")
            host.authorized_keys.write_text(client_pub)
            host.bin_dir.mkdir(exist_ok=True)
            host.sshd_config.write_text(self._sshd_config(host))
        self.known_hosts.write_text("".join(known))
        self.ssh_config.write_text(self._ssh_config())

    def _sshd_config(self, host: LabHost) -> str:
        path = f"PATH={host.bin_dir}:/usr/local/bin:/usr/bin:/bin"
        cache = _compiler_cache_env()
        return "\n".join(
            [
                "# written by tests/support/lab.py; this sshd never reads /etc/ssh",
                f"ListenAddress {host.mgmt_addr}",
                f"Port {SSH_PORT}",
                f"HostKey {host.host_key}",
                f"PidFile {host.dir / 'sshd.pid'}",
                f"AuthorizedKeysFile {host.authorized_keys}",
                "PasswordAuthentication no",
                "KbdInteractiveAuthentication no",
                "UsePAM no",
                "PermitRootLogin prohibit-password",
                "StrictModes no",
                "KexAlgorithms curve25519-sha256,curve25519-sha256@libssh.org",
                "UseDNS no",
                "LogLevel VERBOSE",  # logs each session: exec_count() reads it
                f"SetEnv {path}",
                "PrintMotd no",
                "PrintLastLog no",
                "MaxStartups 100",  # tests open many connections at once
                "Subsystem sftp internal-sftp",
                # root's sessions only: the cache is root's (a login user's build runs as root
                # through sudo, which drops these variables)
                *([] if cache is None else ["Match User root", f"    SetEnv {path} {cache}"]),
                "",
            ]
        )

    def _client_options(self) -> dict[str, str]:
        return {
            "IdentitiesOnly": "yes",
            "UserKnownHostsFile": str(self.known_hosts),
            "GlobalKnownHostsFile": "/dev/null",
            "StrictHostKeyChecking": "yes",
            "BatchMode": "yes",
            "ConnectTimeout": "5",
            "LogLevel": "ERROR",
        }

    def _ssh_config(self) -> str:
        """For people: ``ssh -F WORKDIR/ssh_config node0``."""
        lines = ["Host *", "  User root", f"  IdentityFile {self.client_key}"]
        lines += [f"  {option} {value}" for option, value in self._client_options().items()]
        for host in self.hosts:
            lines += [f"Host {host.name}", f"  HostName {host.mgmt_addr}"]
        return "\n".join(lines) + "\n"

    # -- down --------------------------------------------------------------

    def _kill_processes(self) -> None:
        """Our inits and sshds first (by PID: an init takes its whole node with it), then
        anything else left in our namespaces."""
        netnses = self.netns_names
        recorded = [pid for h in self.hosts for pid in (h.init_pid, h.sshd_pid) if pid]
        _kill_in_netns(recorded, netnses)
        # a namespace whose name is gone (deleted by hand) still lives in its processes: ours
        # are the recorded ones whose command line names this lab's folder
        _kill_owned(recorded, str(self.workdir))
        for host in self.hosts:
            host._reap()  # no-op for already-dead ones
        _kill_in_netns(_pids_in_netns(netnses), netnses)

    def _delete_namespaces(self) -> None:
        for netns in reversed(self.netns_names):
            if Path("/run/netns", netns).exists():
                done = _run(["ip", "netns", "del", netns], check=False)
                if done.returncode != 0 and Path("/run/netns", netns).exists():  # gone is gone
                    raise LabError(f"ip netns del {netns} failed ({done.returncode}): "
                                   f"{done.stderr.strip()}")

    def _own_links(self) -> set[str]:
        """Root-namespace links carrying this lab's alias (set right after creating each)."""
        return {link["ifname"] for link in _ip_json("link", "show") if link.get("ifalias") == self.prefix}

    def _delete_links(self, timeout: float = 2.0) -> None:
        """Root-side veths vanish with their namespace (the kernel's cleanup is
        batched, ~50 ms for 16 hosts, where deleting one by one costs ~15 ms
        each).  Wait a bounded while, then delete any left explicitly: someone
        may still hold a namespace open (a pyroute2 handle, say)."""
        deadline = time.monotonic() + timeout
        while True:
            veths = self._own_links() - {self.bridge, self.fabric_bridge}
            if not veths or time.monotonic() > deadline:
                break
            time.sleep(0.01)
        for name in sorted(veths):
            _run(["ip", "link", "del", "dev", name], check=False)

    def _delete_bridge(self) -> None:
        own = self._own_links()
        for bridge in (self.fabric_bridge, self.bridge):
            if bridge in own:
                done = _run(["ip", "link", "del", "dev", bridge], check=False)
                if done.returncode != 0 and bridge in self._own_links():  # gone is gone
                    raise LabError(f"ip link del dev {bridge} failed ({done.returncode}): "
                                   f"{done.stderr.strip()}")

    def _release_route(self) -> None:
        """Drop the unreachable route once no lab uses 10.99/16, if a lab added it.

        Whichever lab goes down last removes it, not necessarily the one that
        added it; a route without the lab's ``proto`` marker (an admin's) stays.
        """
        with _lab_lock():
            routes = _lab_routes()
            unreachable = _unreachable_route(routes)
            others = [r for r in routes if r is not unreachable]
            if unreachable is not None and unreachable.get("protocol") == ROUTE_PROTO and not others:
                _run(["ip", "route", "del", "unreachable", LAB_NET, "proto", ROUTE_PROTO])


def _pid_alive(pid: int, proc: Path = Path("/proc")) -> bool:
    try:
        stat = (proc / str(pid) / "stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def sweep_stale_labs(*, include_detached: bool = False) -> list[str]:
    """Tear down labs whose owning process died without ``down()`` (a SIGKILLed run).

    Labs are found through their state files in REGISTRY.  One whose owner still
    runs is left alone, and so is a detached one (``scripts/lab.py up --detach``)
    unless ``include_detached``.  Returns the prefixes of the labs torn down.
    """
    swept = []
    REGISTRY.mkdir(mode=0o700, parents=True, exist_ok=True)
    # One sweeper at a time: test processes side by side (pytest-xdist) each sweep before their
    # first lab, and two tearing down the same stale lab removed each other's namespaces.
    with open(REGISTRY / SWEEP_LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for path in sorted(REGISTRY.glob("*.json")):
            if not path.exists():  # swept by the one before us
                continue
            try:
                lab = Lab.from_state(path)
            except (LabError, OSError, ValueError, KeyError, TypeError):
                # Written by another version of this file (or half written): not ours to judge.
                # Its owner tears it down; a crash here would fail every lab test of this run.
                continue
            if lab.owner_pid is None and not include_detached:
                continue
            if lab.owner_pid is not None and _pid_alive(lab.owner_pid):
                continue
            lab.down()
            swept.append(lab.prefix)
    return swept


def reset_hosts(lab: Lab, markers: str = "fault-*") -> None:
    """Each host as a test of a shared lab expects it: no stand-in, no marker file of the
    tests (`markers`, a glob in its home), the fabric MTU at 1500."""
    for host in lab.hosts:
        for path in [*host.bin_dir.glob("*"), *host.home.glob(markers)]:
            path.unlink()
        host.run_in_ns(["ip", "link", "set", "dev", "fab0", "mtu", "1500"], check=True)


def _compiler_cache_env() -> str | None:
    """sshd SetEnv words that put ccache in front of a node's compilers (None without ccache)."""
    if shutil.which("ccache") is None:
        return None
    CCACHE_DIR.mkdir(mode=0o700, parents=True, exist_ok=True)
    return (f"CCACHE_DIR={CCACHE_DIR} CCACHE_MAXSIZE=2G"
            " CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache")


def lab_fixture(
    n: int, *, scope: str = "session", name: str | None = None, fabric: str = "pairs"
) -> Callable[..., Any]:
    """A pytest fixture yielding an up ``Lab`` of ``n`` hosts; assign it in conftest.py.

    ``lab3 = lab_fixture(3)`` makes a fixture named ``lab3``.  Missing tools or
    not being root is an error, not a skip: the lab is part of the test suite.
    """
    import pytest  # only tests need it; scripts/lab.py does not

    def _lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
        require_lab_tools()
        sweep_stale_labs()
        with Lab(tmp_path_factory.mktemp("lab"), n, fabric=fabric) as lab:
            yield lab

    return pytest.fixture(scope=scope, name=name)(_lab)  # type: ignore[call-overload,no-any-return]

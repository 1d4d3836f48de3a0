"""A lab with a real kernel RDMA stack: soft-RoCE (``rdma_rxe``) between small qemu VMs.

Beside the namespace lab (tests/support/lab.py), whose kernel has no RDMA, this one boots
Debian's own kernel in ``qemu-system-x86_64 -accel tcg`` (nested KVM hangs on
this machine kind), so sysfs, GID tables, configfs ``rdma_cm``, ``rdma -j link``,
``ib_write_lat`` and pyverbs are real.  Timings under emulation are not.

- Kernel: ``apt-get download`` of the package ``linux-image-amd64`` depends on,
  unpacked with ``dpkg -x`` into a cache directory (never installed here).
  ``build_kernel()`` keeps only ``vmlinuz``, a busybox initramfs and a manifest,
  keyed by kernel release (see ``cache_dir``).
- Initramfs: busybox-static plus the modules ``modprobe -d TREE --show-depends``
  resolves (after ``depmod -b``) for ``MODULES``, loaded in that order.
  ``crc32_generic`` comes first: without it ``rdma_rxe`` fails "failed to init
  crc32 algorithm".  It mounts this machine's ``/`` READ-ONLY over virtio-9p
  (qemu's export is read-only as well) under a tmpfs overlay, so the VM has the
  same sshd, python3, pyverbs, rdma-core and perftest, and nothing it writes
  reaches this machine.  Then it runs the VM's own ``stage2.sh``.
- Each VM's directory (shared read-only as 9p tag ``vmlab``) holds its
  ``stage2.sh``, sshd config, host key and authorized keys; ``/etc/ssh`` of this
  machine is never used.  ``stage2.sh`` mounts proc/sys/configfs, gives the VM
  its own hostname, machine-id and empty ``/root``, sets the addresses, runs
  ``rdma link add rxe0 type rxe netdev eth0`` and execs sshd.  With ``sudo`` in
  this machine's tree it also makes the login ``SUDO_USER`` in the VM's own
  /etc (the overlay): its own key (``user_key``, never authorised for root), a
  sudoers rule running python3 as root without a password
  (``write_site_yaml(login=SUDO_USER)``: a site reached through ``become: sudo``).
- Fabric (``eth0``): VMs are paired 0-1, 2-3, ... by qemu ``-netdev socket``,
  frames travelling only over loopback.  Pair ``p`` uses 192.168.(77+p).0/24,
  sides ``.1`` and ``.2``.  Default ``fabric="udp"``: each qemu sends its frames
  to the peer's UDP port on 127.0.0.1 (``udp=...,localaddr=...``).  ``"tcp"``:
  the even VM listens, its peer connects.  Over the TCP stream Nagle's algorithm
  holds back a frame that follows another (an RC ACK, then the next write), so
  ``ib_write_lat`` there shows ~25 ms instead of well under one.
- Management (``eth1``): ``-netdev user,restrict=on,hostfwd=tcp:127.0.0.1:PORT-:22``:
  the guest can reach nothing, the head reaches its sshd on a loopback port.
- Processes: only the qemu PIDs this lab started are signalled, through a pidfd
  after checking the process's command line still carries this lab's name;
  ``down()`` runs on every exit path (context manager, fixture finalizer,
  ``atexit``), and each qemu gets ``PR_SET_PDEATHSIG`` so a SIGKILLed owner
  takes its VMs with it.

From pytest: the session's shared pairs of tests/conftest.py (``soft_roce_pair``, reset
between modules by ``VmLab.reset``; ``llama_pair``; ``systemd_vms``), or ``vm_lab_fixture(n)``
for a lab of a module's own; by hand: ``python scripts/lab.py up --rdma-vms 2 --dir /tmp/vmlab``.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import fcntl
import gzip
import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from tests.support.lab import _public_key, _wait_pidfds  # the namespace lab's own helpers

KERNEL_META_PACKAGE = "linux-image-amd64"
#: modules the VM loads (their dependencies are resolved by modprobe)
MODULES = (
    "crc32_generic",
    "virtio_pci",
    "virtio_net",
    "9pnet_virtio",
    "9p",
    "overlay",
    "rdma_rxe",
    "ib_uverbs",
    "rdma_ucm",
    "virtio_blk",  # the persistent disk (init="systemd" mode)
    "crc32c_generic",  # ext4's checksums: crc32c-intel needs SSE4.2, which qemu64 lacks
    "ext4",
)
#: CPU-specific accelerators modprobe may list that the TCG CPU (qemu64) cannot run
SKIPPED_MODULES = ("crc32c-intel.ko", "crc32c_intel.ko")
BUSYBOX = Path("/bin/busybox")
SSHD = "/usr/sbin/sshd"
QEMU = "qemu-system-x86_64"
RDMA_DEVICE = "rxe0"
#: seconds between the fabric netdev coming up and rxe0 registering, on systemd VMs
RDMA_REGISTER_GAP_S = 3
FABRIC_NETDEV = "eth0"
#: the guest address user-mode networking forwards to
GUEST_MGMT_ADDR = "10.0.2.15"
MANIFEST = "manifest.json"
#: generous: on 2 cores shared with builds a VM reaches sshd in 10 s idle, in minutes busy
BOOT_TIMEOUT = 180.0
BUILD_TIMEOUT = 600.0
KILL_TIMEOUT = 5.0
VM_MEMORY_MB = 512
#: how a pair's fabric frames travel between the two qemus, always on 127.0.0.1
FABRIC_MODES = ("udp", "tcp")
#: "sh": stage2.sh execs sshd (PID 1 is a shell script, everything is lost at power-off);
#: "systemd": the VM boots systemd from this machine's tree with a persistent disk (below)
INIT_MODES = ("sh", "systemd")
DISK_MB = 256
#: the file the lab's boot step reads from the persistent layer for the next boot's kernel
#: command line (systemd-boot's kernel-install file; what the plans tell a node without
#: grubby to edit)
KERNEL_CMDLINE_FILE = "/etc/kernel/cmdline"
BASE_CMDLINE = "console=ttyS0 panic=-1 loglevel=4 net.ifnames=0"
#: words of the persisted command line the lab never passes on (they would take the boot away)
_CMDLINE_WORD = re.compile(r"[A-Za-z0-9_.:,=/+-]{1,200}")
_RESERVED = ("init=", "rdinit=", "console=", "root=", "vmlab.", "panic=", "systemd.unit=")
REBOOT_TIMEOUT = 240.0
#: The login that is not root in each "sh" VM, its uid, and its sudo rule (made at boot when
#: this machine has sudo: the VM runs this machine's tree)
SUDO_USER = "alice"
SUDO_UID = 61000
SUDO_RULE = f"{SUDO_USER} ALL=(root) NOPASSWD: /usr/bin/python3"
SUDO = "/usr/bin/sudo"
#: Python in a VM (SSH sessions, systemd units) writes no bytecode: an overlay's lower layer must
#: not change while mounted (this machine's tree), and a .pyc the VM wrote to its persistent
#: layer shortly before a reboot was once read back truncated ("marshal data too short").
NO_BYTECODE = "PYTHONDONTWRITEBYTECODE=1"
#: this project's packages, compiled before a lab boots so the VMs find current bytecode in
#: the lower layer and this machine does not write into it while they run
_SOURCE_ROOT = Path(__file__).resolve().parents[2]
_PACKAGES = ("strixwizard", "checks", "fixes")

#: tool -> Debian package that provides it
REQUIRED_TOOLS: dict[str, str] = {
    QEMU: "qemu-system-x86",
    str(BUSYBOX): "busybox-static",
    "cpio": "cpio",
    "depmod": "kmod",
    "modprobe": "kmod",
    "apt-get": "apt",
    "dpkg-deb": "dpkg",
    SSHD: "openssh-server",
    "ssh-keygen": "openssh-client",
    "mkfs.ext4": "e2fsprogs",  # init="systemd": the persistent disk
    "debugfs": "e2fsprogs",
}
_SBIN = ("/usr/sbin", "/sbin")


class VmLabError(RuntimeError):
    """The VM lab could not be built, booted or torn down."""


def _which(tool: str) -> str | None:
    if tool.startswith("/"):
        return tool if os.access(tool, os.X_OK) else None
    found = shutil.which(tool)
    if found:
        return found
    return next((f"{d}/{tool}" for d in _SBIN if os.access(f"{d}/{tool}", os.X_OK)), None)


def missing_tools() -> dict[str, str]:
    """Tools the VM lab needs that are not installed, with their Debian packages."""
    return {tool: pkg for tool, pkg in REQUIRED_TOOLS.items() if _which(tool) is None}


def require_vm_tools() -> None:
    """Raise VmLabError naming what is missing (root, a tool and its apt package)."""
    problems = []
    if os.geteuid() != 0:
        problems.append("the VM lab needs root (9p export of / with the files' owners)")
    missing = missing_tools()
    if missing:
        problems.append(
            f"missing {', '.join(missing)}: apt-get install {' '.join(sorted(set(missing.values())))}"
        )
    if problems:
        raise VmLabError("cannot run the VM lab: " + "; ".join(problems))


def _run(
    argv: Sequence[str], *, cwd: Path | None = None, timeout: float = 120.0
) -> subprocess.CompletedProcess[str]:
    tool = _which(argv[0]) or argv[0]
    try:
        proc = subprocess.run([tool, *argv[1:]], cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise VmLabError(f"{' '.join(argv)} did not finish within {timeout:g} s") from None
    if proc.returncode != 0:
        raise VmLabError(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
    return proc


# -- kernel and initramfs -------------------------------------------------


def cache_dir() -> Path:
    """$STRIXWIZARD_VMLAB_CACHE, else /var/cache/strixwizard-vmlab (root), else $XDG_CACHE_HOME."""
    override = os.environ.get("STRIXWIZARD_VMLAB_CACHE")
    if override:
        return Path(override)
    if os.geteuid() == 0:
        return Path("/var/cache/strixwizard-vmlab")
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "strixwizard-vmlab"


def kernel_package() -> str:
    """The versioned package ``linux-image-amd64`` depends on, e.g. linux-image-6.1.0-57-amd64."""
    out = _run(["apt-cache", "depends", KERNEL_META_PACKAGE]).stdout
    for line in out.splitlines():
        kind, _, name = line.strip().partition(": ")
        if kind == "Depends" and name.startswith("linux-image-"):
            return name.strip()
    raise VmLabError(f"apt-cache depends {KERNEL_META_PACKAGE}: no linux-image-* dependency in {out!r}")


@dataclass(frozen=True)
class KernelImage:
    """A cached kernel and initramfs, ready to boot."""

    release: str  # e.g. 6.1.0-57-amd64
    package: str
    version: str  # the Debian package version, e.g. 6.1.192-3
    vmlinuz: Path
    initramfs: Path

    @property
    def provenance(self) -> str:
        return f"Debian kernel {self.release} ({self.package} {self.version})"

    @classmethod
    def load(cls, directory: Path) -> KernelImage:
        manifest = json.loads((directory / MANIFEST).read_text())
        return cls(
            release=manifest["release"],
            package=manifest["package"],
            version=manifest["version"],
            vmlinuz=directory / "vmlinuz",
            initramfs=directory / "initramfs.cpio.gz",
        )


def resolve_modules(tree: Path, release: str, modules: Sequence[str] = MODULES) -> list[Path]:
    """Module files to insmod, dependencies first, each once (``modprobe --show-depends``)."""
    _run(["depmod", "-b", str(tree), release])
    ordered: list[Path] = []
    for module in modules:
        out = _run(["modprobe", "-d", str(tree), "-S", release, "--show-depends", module]).stdout
        for line in out.splitlines():
            parts = line.split()
            if (len(parts) >= 2 and parts[0] == "insmod" and Path(parts[1]) not in ordered
                    and Path(parts[1]).name not in SKIPPED_MODULES):
                ordered.append(Path(parts[1]))
    if not ordered:
        raise VmLabError(f"modprobe resolved no module files for {', '.join(modules)}")
    return ordered


def _write_cpio_gz(root: Path, dest: Path) -> None:
    """``find . | cpio -o -H newc | gzip`` with argv lists and no shell."""
    names = sorted(str(p.relative_to(root)) for p in root.rglob("*"))
    proc = subprocess.run(
        [_which("cpio") or "cpio", "-o", "-H", "newc", "--quiet", "--owner=0:0"],
        cwd=root,
        input="\n".join(names).encode() + b"\n",
        capture_output=True,
        timeout=120,
    )
    if proc.returncode != 0:
        raise VmLabError(f"cpio failed: {proc.stderr.decode(errors='replace').strip()}")
    with gzip.open(dest, "wb", compresslevel=6) as fh:
        fh.write(proc.stdout)


def _stage1_init(module_names: Sequence[str]) -> str:
    """The initramfs's /init: modules, 9p root read-only under a tmpfs overlay, then stage2."""
    return "\n".join(
        [
            "#!/bin/busybox sh",
            "/bin/busybox --install -s /bin",
            'fail() { echo "vmlab: $*"; sleep 1; poweroff -f; }',
            "mkdir -p /proc /sys /dev /lower /conf /rw /newroot",
            "mount -t proc proc /proc && mount -t sysfs sysfs /sys && mount -t devtmpfs devtmpfs /dev",
            f"for m in {' '.join(module_names)}; do",
            '  insmod "/modules/$m" || fail "insmod $m failed"',
            "done",
            "opts=trans=virtio,version=9p2000.L,msize=262144,ro",
            "mount -t 9p -o $opts,cache=loose hostroot /lower || fail 'cannot mount the 9p root'",
            "mount -t 9p -o $opts vmlab /conf || fail 'cannot mount the vmlab share'",
            "if grep -q vmlab.disk /proc/cmdline; then",
            "  i=0; while [ ! -b /dev/vda ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done",
            "  mount -t ext4 /dev/vda /rw || fail 'cannot mount the persistent disk'",
            "else",
            "  mount -t tmpfs -o size=256m,mode=0755 tmpfs /rw",
            "fi",
            "mkdir -p /rw/upper /rw/work",
            "mount -t overlay overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work /newroot"
            " || fail 'cannot mount the overlay'",
            "mkdir -p /newroot/vmlab && mount --move /conf /newroot/vmlab",
            "umount /proc /sys; umount /dev",
            "echo 'vmlab: stage 1 done'",
            "exec switch_root /newroot /bin/sh /vmlab/stage2.sh",
            "",
        ]
    )


def build_kernel(cache: Path | None = None, *, timeout: float = BUILD_TIMEOUT) -> KernelImage:
    """The cached kernel and initramfs for Debian's current amd64 kernel, built if absent.

    A lock serialises concurrent builds; the result appears atomically (rename).
    """
    cache = cache or cache_dir()
    package = kernel_package()
    release = package.removeprefix("linux-image-")
    # keyed by what goes into the initramfs too: a lab that loads other modules builds its own
    digest = hashlib.sha256(repr((MODULES, SKIPPED_MODULES, _stage1_init(()))).encode()).hexdigest()[:8]
    dest = cache / f"{release}-{digest}"
    if (dest / MANIFEST).exists():
        return KernelImage.load(dest)
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (dest / MANIFEST).exists():
            return KernelImage.load(dest)
        work = cache / f".{dest.name}.building"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir()
        try:
            _build_into(work, package, release, timeout)
            shutil.rmtree(dest, ignore_errors=True)
            work.rename(dest)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return KernelImage.load(dest)


def _build_into(work: Path, package: str, release: str, timeout: float) -> None:
    _run(["apt-get", "download", "-q", package], cwd=work, timeout=timeout)
    debs = sorted(work.glob(f"{package}_*.deb"))
    if not debs:
        raise VmLabError(f"apt-get download {package} left no .deb in {work}")
    version = _run(["dpkg-deb", "-f", str(debs[0]), "Version"]).stdout.strip()
    tree = work / "tree"
    _run(["dpkg-deb", "-x", str(debs[0]), str(tree)], timeout=timeout)
    modules = resolve_modules(tree, release)
    initramfs = work / "initramfs"
    (initramfs / "modules").mkdir(parents=True)
    (initramfs / "bin").mkdir()
    shutil.copy2(BUSYBOX, initramfs / "bin" / "busybox")
    names = []
    for module in modules:
        shutil.copy2(module, initramfs / "modules" / module.name)
        names.append(module.name)
    init = initramfs / "init"
    init.write_text(_stage1_init(names))
    init.chmod(0o755)
    _write_cpio_gz(initramfs, work / "initramfs.cpio.gz")
    shutil.copy2(tree / "boot" / f"vmlinuz-{release}", work / "vmlinuz")
    shutil.rmtree(tree)
    shutil.rmtree(initramfs)
    for deb in debs:
        deb.unlink()
    manifest = {"release": release, "package": package, "version": version, "modules": names}
    (work / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")


# -- VMs ------------------------------------------------------------------


def _free_port(kind: socket.SocketKind = socket.SOCK_STREAM) -> int:
    with socket.socket(socket.AF_INET, kind) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _set_pdeathsig() -> None:
    """In the child: die with the parent (PR_SET_PDEATHSIG = 1), even if it is SIGKILLed."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGKILL, 0, 0, 0)


def _keygen(path: Path, comment: str) -> None:
    for old in (path, path.with_name(path.name + ".pub")):
        old.unlink(missing_ok=True)
    _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)])


@dataclass
class Vm:
    """One VM: a qemu process, its sshd on a loopback port, rxe0 on its fabric netdev."""

    index: int
    name: str
    dir: Path
    ssh_port: int
    fabric_addr: str | None = None
    fabric_peer: str | None = None
    #: the fabric's qemu ``-netdev socket`` options, e.g. ``udp=127.0.0.1:A,localaddr=127.0.0.1:B``
    fabric_socket: str | None = None
    #: "tcp" mode, connecting side: the peer's listening port, waited for before starting
    fabric_waits_for: int | None = None
    host_key_pub: str = ""
    pid: int | None = None
    boot_seconds: float | None = None
    #: words the lab's boot step read from the persistent layer's KERNEL_CMDLINE_FILE
    cmdline_extra: tuple[str, ...] = ()
    boots: int = 0
    _proc: subprocess.Popen[bytes] | None = field(default=None, repr=False, compare=False)

    @property
    def console_log(self) -> Path:
        return self.dir / "console.log"

    @property
    def disk(self) -> Path:
        return self.dir / "disk.img"

    @property
    def host_key(self) -> Path:
        return self.dir / "ssh_host_ed25519_key"

    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def console_tail(self, chars: int = 3000) -> str:
        try:
            return self.console_log.read_text(errors="replace")[-chars:]
        except OSError:
            return "(no console log)"


class VmLab:
    """``n`` soft-RoCE VMs under ``workdir``; ``up()`` boots them, ``down()`` kills them."""

    def __init__(
        self, workdir: Path, n: int, *, kernel: KernelImage | None = None, fabric: str = "udp",
        init: str = "sh"
    ) -> None:
        if not 1 <= n <= 8:
            raise ValueError(f"n must be in 1..8, not {n}")
        if fabric not in FABRIC_MODES:
            raise ValueError(f"fabric must be one of {', '.join(FABRIC_MODES)}, not {fabric!r}")
        if init not in INIT_MODES:
            raise ValueError(f"init must be one of {', '.join(INIT_MODES)}, not {init!r}")
        self.fabric = fabric
        #: "systemd": systemd is PID 1 and each VM's writable layer is an ext4 disk image
        #: (DISK_MB, its vmN/disk.img), so /etc and /var survive `reboot()`
        self.init = init
        self.workdir = Path(workdir).resolve()
        self.n = n
        self.kernel = kernel
        #: carried on every qemu command line: the check before any signal
        self.tag = f"swvm-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.client_key = self.workdir / "client_key"
        #: the key of SUDO_USER: authorised for that login only, never for root
        self.user_key = self.workdir / "user_key"
        self.known_hosts = self.workdir / "known_hosts"
        self.vms: list[Vm] = []
        self._used = False

    # -- public ------------------------------------------------------------

    def up(self, timeout: float | None = None) -> VmLab:
        """Build (or reuse) the kernel, boot every VM, wait for every sshd; tear down on failure."""
        if self._used:
            raise VmLabError("a VmLab can be brought up only once; make a new one")
        self._used = True
        require_vm_tools()
        _LIVE.add(self)
        try:
            self.kernel = self.kernel or build_kernel()
            self.workdir.mkdir(parents=True, exist_ok=True)
            self._make_vms()
            self._write_files()
            compile_tree_bytecode()
            started = time.monotonic()
            for vm in self.vms:
                self._start(vm)
            self._wait_ready(started, timeout or (REBOOT_TIMEOUT if self.init == "systemd"
                                                  else BOOT_TIMEOUT))
        except BaseException:
            self.down()
            raise
        return self

    def down(self) -> None:
        """Kill every qemu this lab started (by PID, after checking its tag); idempotent."""
        fds: list[tuple[int, Vm]] = []
        for vm in self.vms:
            if vm.pid is None:
                continue
            with contextlib.suppress(OSError):
                fd = os.pidfd_open(vm.pid)
                if self.tag in _cmdline(vm.pid):
                    fds.append((fd, vm))
                else:
                    os.close(fd)
        try:
            for sig in (signal.SIGTERM, signal.SIGKILL):
                for fd, _ in fds:
                    with contextlib.suppress(ProcessLookupError):
                        signal.pidfd_send_signal(fd, sig)
                if _wait_pidfds([fd for fd, _ in fds], KILL_TIMEOUT):
                    break
        finally:
            for fd, _ in fds:
                os.close(fd)
        for vm in self.vms:
            if vm._proc is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    vm._proc.wait(timeout=KILL_TIMEOUT)
            vm._proc = None
            vm.pid = None
        _LIVE.discard(self)

    def kill(self, vm: Vm) -> None:
        """Kill one VM (a node lost mid-run)."""
        if vm.pid is not None and self.tag in _cmdline(vm.pid) and vm._proc is not None:
            vm._proc.kill()
            vm._proc.wait(timeout=KILL_TIMEOUT)
        vm._proc = None
        vm.pid = None

    def __enter__(self) -> VmLab:
        return self.up()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.down()

    def restart(self, vm: Vm, timeout: float | None = None) -> None:
        """Power ``vm`` off (if it runs) and boot it again with the same ports, keys and disk."""
        self.kill(vm)
        started = time.monotonic()
        self._start(vm)
        self._wait_ready(started, timeout or (REBOOT_TIMEOUT if self.init == "systemd" else BOOT_TIMEOUT),
                         [vm])

    def baseline_problems(self, vm: Vm) -> list[str]:
        """How ``vm`` differs from what ``up()`` made: sshd answering, the fabric at MTU 1500 with
        its address, rxe0 ACTIVE over it with that address's RoCE v2 GID at index 1, none of
        the programs the tests start running, nothing the tool writes on a node left."""
        if not vm.running():
            return ["not running"]
        script = (
            f"echo mtu=$(cat /sys/class/net/{FABRIC_NETDEV}/mtu);"
            f" echo addr=$(ip -4 -o addr show dev {FABRIC_NETDEV} | awk '{{print $4}}' | tr '\\n' ' ');"
            f" echo rdma=$(rdma -j link show 2>/dev/null);"
            f" echo gid1=$(cat /sys/class/infiniband/{RDMA_DEVICE}/ports/1/gids/1 2>/dev/null);"
            f" echo running=$(pgrep -l -x '{'|'.join(TEST_PROGRAMS)}' | tr '\\n' ' ');"
            f" echo written=$(ls -d {' '.join(NODE_WRITES)} 2>/dev/null | tr '\\n' ' ')"
        )
        try:
            done = self.run(vm, script, timeout=60)
        except subprocess.TimeoutExpired:
            return ["no answer over SSH within 60 s"]
        if done.returncode != 0:
            return [f"ssh failed ({done.returncode}): {done.stderr.strip()[-300:]}"]
        seen = dict(line.partition("=")[::2] for line in done.stdout.splitlines())
        problems = []
        if seen.get("mtu") != "1500":
            problems.append(f"fabric MTU {seen.get('mtu')}")
        if vm.fabric_addr and seen.get("addr", "").split() != [f"{vm.fabric_addr}/24"]:
            problems.append(f"fabric addresses {seen.get('addr')!r}")
        links = json.loads(seen.get("rdma") or "[]")
        if [(lk.get("ifname"), lk.get("state"), lk.get("netdev")) for lk in links] != [
                (RDMA_DEVICE, "ACTIVE", FABRIC_NETDEV)]:
            problems.append(f"rdma links {seen.get('rdma')}")
        if vm.fabric_addr and seen.get("gid1") != _ipv4_mapped_gid(vm.fabric_addr):
            problems.append(f"GID 1 is {seen.get('gid1')!r}")
        if seen.get("running", "").strip():
            problems.append(f"still running: {seen['running'].strip()}")
        if seen.get("written", "").strip():
            problems.append(f"left on the node: {seen['written'].strip()}")
        return problems

    def reset(self) -> None:
        """Bring every VM back to what ``up()`` made (see ``baseline_problems``), for the next
        module of a session that shares this lab: end the tests' programs (in the VM's own
        kernel, where every process but sshd is a test's), remove what the tool wrote, restore
        MTU, address and rxe0; a VM that still differs (or was killed) is booted again. Raises
        VmLabError naming what is still wrong after that."""
        for vm in self.vms:
            if vm.running() and self.baseline_problems(vm):
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.run(vm, _reset_script(vm), timeout=90)
            if self.baseline_problems(vm):
                self.restart(vm)
            problems = self.baseline_problems(vm)
            if problems:
                raise VmLabError(f"{vm.name} could not be reset: {'; '.join(problems)}")

    def vm(self, name: str) -> Vm:
        return next(vm for vm in self.vms if vm.name == name)

    def ssh_argv(self, vm: Vm, *command: str) -> list[str]:
        """OpenSSH client argv for running ``command`` on ``vm``; ignores ~/.ssh/config."""
        options = {
            "IdentitiesOnly": "yes",
            "UserKnownHostsFile": str(self.known_hosts),
            "GlobalKnownHostsFile": "/dev/null",
            "StrictHostKeyChecking": "yes",
            "BatchMode": "yes",
            "ConnectTimeout": "10",
            "LogLevel": "ERROR",
        }
        argv = ["ssh", "-F", "/dev/null", "-i", str(self.client_key), "-p", str(vm.ssh_port)]
        for option, value in options.items():
            argv += ["-o", f"{option}={value}"]
        return [*argv, "root@127.0.0.1", *command]

    def run(self, vm: Vm, *command: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
        """Run a command on ``vm`` over SSH, output captured, bounded by ``timeout``.

        As with ``ssh``, the words are joined and the VM's shell parses them.
        """
        return subprocess.run(self.ssh_argv(vm, *command), capture_output=True, text=True, timeout=timeout)

    def write_site_yaml(
        self,
        path: Path,
        *,
        deadline: float = 120.0,
        connect_timeout: float = 15.0,
        fabric_mtu: int = 1500,
        allow_soft_rdma: bool = False,
        login: str = "root",
    ) -> Path:
        """A site file for the VMs (generous deadlines: emulated CPUs are slow).

        The fabric MTU is the VMs' own (1500) unless told, so nothing is "to fix" by default.
        `login=SUDO_USER`: the nodes are reached as that user with its own key, through
        `become: sudo`.
        """
        if login not in ("root", SUDO_USER):
            raise ValueError(f"the VMs have no login {login!r}")
        key = self.client_key if login == "root" else self.user_key
        lines = [
            "site: vmlab",
            *(["allow_soft_rdma: true"] if allow_soft_rdma else []),
            "fabric:",
            f"  mtu: {fabric_mtu}",
            "ssh:",
            f"  known_hosts: {json.dumps(str(self.known_hosts))}",
            f"  deadline: {deadline}",
            f"  connect_timeout: {connect_timeout}",
            "nodes:",
        ]
        for vm in self.vms:
            lines += [
                f"  - name: {vm.name}",
                "    host: 127.0.0.1",
                f"    port: {vm.ssh_port}",
                f"    user: {login}",
                f"    key: {json.dumps(str(key))}",
                *(["    become: sudo"] if login != "root" else []),
            ]
            if vm.fabric_addr:
                lines.append(f"    fabric_address: {vm.fabric_addr}")
        path = Path(path)
        path.write_text("\n".join(lines) + "\n")
        return path

    # -- up ----------------------------------------------------------------

    def _make_vms(self) -> None:
        for i in range(self.n):
            vm = Vm(index=i, name=f"vm{i}", dir=self.workdir / f"vm{i}", ssh_port=_free_port())
            pair, side = divmod(i, 2)
            if pair * 2 + 1 < self.n:
                vm.fabric_addr = f"192.168.{77 + pair}.{1 + side}"
                vm.fabric_peer = f"vm{i + 1 - 2 * side}"
            self.vms.append(vm)
        for i in range(0, self.n - 1, 2):
            first, second = self.vms[i], self.vms[i + 1]
            if self.fabric == "tcp":
                port = _free_port()
                first.fabric_socket = f"listen=127.0.0.1:{port}"
                second.fabric_socket = f"connect=127.0.0.1:{port}"
                second.fabric_waits_for = port
            else:
                a, b = _free_port(socket.SOCK_DGRAM), _free_port(socket.SOCK_DGRAM)
                first.fabric_socket = f"udp=127.0.0.1:{b},localaddr=127.0.0.1:{a}"
                second.fabric_socket = f"udp=127.0.0.1:{a},localaddr=127.0.0.1:{b}"

    def _write_files(self) -> None:
        _keygen(self.client_key, "strixwizard-vmlab-client")
        _keygen(self.user_key, f"strixwizard-vmlab-{SUDO_USER}")
        client_pub = self.client_key.with_name(self.client_key.name + ".pub").read_text()
        user_pub = self.user_key.with_name(self.user_key.name + ".pub").read_text()
        known = []
        for vm in self.vms:
            vm.dir.mkdir(parents=True, exist_ok=True)
            _keygen(vm.host_key, f"strixwizard-vmlab-{vm.name}")
            vm.host_key_pub = _public_key(vm.host_key.with_name(vm.host_key.name + ".pub"))
            known.append(f"[127.0.0.1]:{vm.ssh_port} {vm.host_key_pub}\n")
            (vm.dir / "authorized_keys").write_text(client_pub)
            (vm.dir / "user_authorized_keys").write_text(user_pub)
            # systemd mode: PAM too, as Debian's sshd, so limits.d (pam_limits) reaches sessions
            (vm.dir / "sshd_config").write_text(_sshd_config(pam=self.init == "systemd"))
            stage2 = vm.dir / "stage2.sh"
            if self.init == "systemd":
                stage2.write_text(_stage2_systemd(vm, _host_enabled_units()))
                fabric = vm.dir / "fabric.sh"
                fabric.write_text(_fabric_script(vm))
                fabric.chmod(0o755)
                _make_disk(vm.disk)
            else:
                stage2.write_text(_stage2_script(vm))
            stage2.chmod(0o755)
        self.known_hosts.write_text("".join(known))

    def _qemu_argv(self, vm: Vm) -> list[str]:
        kernel = self.kernel
        assert kernel is not None
        argv = [
            _which(QEMU) or QEMU,
            "-name", f"{vm.name},process={self.tag}",
            "-accel", "tcg",
            "-m", str(VM_MEMORY_MB),
            "-smp", "1",
            "-nodefaults", "-no-user-config", "-display", "none", "-monitor", "none",
            "-serial", f"file:{vm.console_log}",
            "-kernel", str(kernel.vmlinuz),
            "-initrd", str(kernel.initramfs),
            "-append", " ".join(self._kernel_cmdline(vm)),
            "-no-reboot",
            "-fsdev", "local,id=hostroot,path=/,security_model=passthrough,readonly=on,multidevs=remap",
            "-device", "virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot",
            "-fsdev", f"local,id=vmlab,path={vm.dir},security_model=passthrough,readonly=on",
            "-device", "virtio-9p-pci,fsdev=vmlab,mount_tag=vmlab",
        ]  # fmt: skip
        if self.init == "systemd":
            argv += ["-drive", f"file={vm.disk},if=virtio,format=raw"]
        if vm.fabric_socket is not None:
            mac = f"52:54:00:77:00:{vm.index + 1:02x}"
            argv += [
                "-netdev", f"socket,id=fabric,{vm.fabric_socket}",
                "-device", f"virtio-net-pci,netdev=fabric,mac={mac},addr=0x5",
            ]  # fmt: skip
        argv += [
            "-netdev", f"user,id=mgmt,restrict=on,hostfwd=tcp:127.0.0.1:{vm.ssh_port}-:22",
            "-device", f"virtio-net-pci,netdev=mgmt,mac=52:54:00:00:00:{vm.index + 1:02x},addr=0x6",
        ]  # fmt: skip
        return argv

    def _kernel_cmdline(self, vm: Vm) -> list[str]:
        words = [BASE_CMDLINE]
        if self.init == "systemd":
            # fstab=no: this machine's /etc/fstab (the lower layer's) is not the VM's
            words += ["vmlab.disk=1", "fstab=no", "systemd.show_status=0",
                      f"systemd.setenv={NO_BYTECODE}"]
        return [*words, *vm.cmdline_extra]

    def reboot_all(self, timeout: float = REBOOT_TIMEOUT) -> None:
        """`reboot()` every VM, all going down at once (a cluster-wide reboot)."""
        procs = [(vm, vm._proc) for vm in self.vms]
        for vm, _ in procs:
            self.run(vm, "systemctl", "reboot", timeout=30)
        for vm, proc in procs:
            self._boot_again(vm, proc, timeout)

    def reboot(self, vm: Vm, timeout: float = REBOOT_TIMEOUT) -> None:
        """`systemctl reboot` in the VM, then the lab's boot step: qemu runs with -no-reboot, so
        it exits; the next boot's kernel command line gets the words of KERNEL_CMDLINE_FILE in
        the persistent layer (read from the disk image with debugfs, never mounted here), and
        the same disk, ports and keys; returns once sshd answers again."""
        if self.init != "systemd":
            raise VmLabError("reboot() needs init='systemd' (a persistent disk)")
        proc = vm._proc
        self.run(vm, "systemctl", "reboot", timeout=30)
        self._boot_again(vm, proc, timeout)

    def _boot_again(self, vm: Vm, proc: subprocess.Popen[bytes] | None, timeout: float) -> None:
        if self.init != "systemd":
            raise VmLabError("reboot() needs init='systemd' (a persistent disk)")
        assert proc is not None
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise VmLabError(f"{vm.name}: did not go down within {timeout:g} s after "
                             f"`systemctl reboot`; console:\n{vm.console_tail()}") from None
        if "reboot: Restarting system" not in vm.console_tail(20000):
            raise VmLabError(f"{vm.name}: qemu exited without a reboot; console:\n{vm.console_tail()}")
        vm._proc, vm.pid = None, None
        vm.cmdline_extra = persisted_cmdline(vm.disk)
        started = time.monotonic()
        self._start(vm)
        self._wait_ready(started, timeout, [vm])

    def _start(self, vm: Vm) -> None:
        if vm.fabric_waits_for is not None:
            _wait_listening(vm.fabric_waits_for, self.vm(vm.fabric_peer or "").console_log)
        if vm.console_log.exists() and vm.boots:  # the previous boot's console, kept
            vm.console_log.replace(vm.dir / f"console.{vm.boots}.log")
        vm.boots += 1
        vm.console_log.write_bytes(b"")
        with open(vm.dir / "qemu.log", "ab") as log:
            vm._proc = subprocess.Popen(
                self._qemu_argv(vm),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_set_pdeathsig,
            )
        vm.pid = vm._proc.pid

    def _wait_ready(self, started: float, timeout: float, vms: Sequence[Vm] | None = None) -> None:
        """Until every VM's sshd answers with an SSH banner; dead qemu or timeout is an error."""
        pending = list(self.vms if vms is None else vms)
        deadline = started + timeout
        while pending:
            for vm in list(pending):
                if not vm.running():
                    qemu_log = (vm.dir / "qemu.log").read_text(errors="replace")[-1500:]
                    raise VmLabError(
                        f"{vm.name}: qemu exited during boot: {qemu_log}\nconsole:\n{vm.console_tail()}"
                    )
                if _ssh_banner(vm.ssh_port):
                    vm.boot_seconds = time.monotonic() - started
                    pending.remove(vm)
            if pending:
                if time.monotonic() > deadline:
                    vm = pending[0]
                    raise VmLabError(
                        f"{vm.name}: sshd not reached within {timeout:g} s; console:\n{vm.console_tail()}"
                    )
                time.sleep(0.5)


#: programs the tests start in a VM (directly or through the tool), ended between modules
TEST_PROGRAMS = ("ggml-rpc-server", "llama-server", "ib_write_lat", "ib_write_bw", "ib_send_lat",
                 "ib_send_bw", "qperf", "sockperf", "python3", "python", "iperf3")
#: what the tool writes on a node (deploy, fix, journals), removed between modules
NODE_WRITES = ("/etc/strixwizard", "/var/lib/strixwizard", "/etc/security/limits.d/*strixwizard*",
               "/usr/bin/ggml-rpc-server", "/usr/bin/llama-server",
               f"/sys/kernel/config/rdma_cm/{RDMA_DEVICE}")


def _ipv4_mapped_gid(address: str) -> str:
    """The RoCE v2 GID of an IPv4 address as sysfs writes it (``0000:...:ffff:c0a8:4d01``)."""
    a, b, c, d = (int(part) for part in address.split("."))
    return f"0000:0000:0000:0000:0000:ffff:{a << 8 | b:04x}:{c << 8 | d:04x}"


def _reset_script(vm: Vm) -> str:
    """Run in ``vm`` by ``VmLab.reset``: back to what the boot made."""
    lines = [
        f"pkill -9 -x '{'|'.join(TEST_PROGRAMS)}'",
        f"[ -d /sys/kernel/config/rdma_cm/{RDMA_DEVICE} ] && rmdir /sys/kernel/config/rdma_cm/{RDMA_DEVICE}",
        f"rm -rf {' '.join(NODE_WRITES[:-1])}",
        f"ip link set dev {FABRIC_NETDEV} mtu 1500",
    ]
    if vm.fabric_addr:
        lines += [
            f"ip -4 addr flush dev {FABRIC_NETDEV}",
            f"[ -d /sys/class/infiniband/{RDMA_DEVICE} ] && rdma link delete {RDMA_DEVICE}",
            f"ip addr add {vm.fabric_addr}/24 dev {FABRIC_NETDEV}",
            f"rdma link add {RDMA_DEVICE} type rxe netdev {FABRIC_NETDEV}",
            "sleep 1",
        ]
    return "; ".join(lines) + "; true"


def compile_tree_bytecode() -> None:
    """Bytecode for this project's packages, as importing them here would write it (timestamp
    pycs beside the sources; current ones are left as they are)."""
    import compileall

    for package in _PACKAGES:
        compileall.compile_dir(_SOURCE_ROOT / package, quiet=2)


def _sshd_config(pam: bool = False) -> str:
    return "\n".join(
        [
            "# written by tests/support/vmlab.py; this sshd never reads /etc/ssh",
            f"ListenAddress {GUEST_MGMT_ADDR}",
            "Port 22",
            "HostKey /vmlab/ssh_host_ed25519_key",
            "PidFile /run/sshd.pid",
            "AuthorizedKeysFile /vmlab/authorized_keys",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            f"UsePAM {'yes' if pam else 'no'}",
            "PermitRootLogin prohibit-password",
            "StrictModes no",
            "KexAlgorithms curve25519-sha256,curve25519-sha256@libssh.org",
            "UseDNS no",
            f"SetEnv PATH=/usr/bin:/bin:/usr/sbin:/sbin {NO_BYTECODE}",
            "PrintMotd no",
            "PrintLastLog no",
            "MaxStartups 50",
            "Subsystem sftp internal-sftp",
            f"Match User {SUDO_USER}",  # last: a Match block runs to the end of the file
            "    AuthorizedKeysFile /vmlab/user_authorized_keys",
            "",
        ]
    )


#: the folders a VM gets empty tmpfs mounts on: a tree under one of them would be hidden
_VM_PRIVATE_DIRS = ("/run", "/tmp", "/var/tmp", "/var/log", "/root")
#: where the tree is held while those folders are mounted over
_HOLD = "/.vmlab-tree"


def _keep_tree_visible(*mounts: str) -> list[str]:
    """``mounts`` (the VM's own /run, /tmp, /root...), with this project's tree kept at its path:
    a clone under /tmp or /root (the tests' venv, the timer unit's python) stays visible in the
    VM wherever it lives. Bind it aside first, mount, then move it back into the new tmpfs."""
    tree = str(_SOURCE_ROOT)
    if not any(tree == d or tree.startswith(d + "/") for d in _VM_PRIVATE_DIRS):
        return list(mounts)
    quoted = shlex.quote(tree)
    return [
        f"mkdir -p {_HOLD} && mount --bind {quoted} {_HOLD}",
        *mounts,
        f"mkdir -p {quoted} && mount --move {_HOLD} {quoted}",
    ]


def _stage2_script(vm: Vm) -> str:
    """Run as PID 1 in the overlay root: the VM's own identity, addresses, rxe0, sshd."""
    machine_id = uuid.uuid5(uuid.NAMESPACE_DNS, f"{vm.name}.vmlab").hex
    lines = [
        "#!/bin/sh",
        "mount -t proc proc /proc",
        "mount -t sysfs sysfs /sys",
        "mount -t devtmpfs devtmpfs /dev",
        "mkdir -p /dev/pts /dev/shm && mount -t devpts devpts /dev/pts && mount -t tmpfs tmpfs /dev/shm",
        "mount -t configfs configfs /sys/kernel/config",
        *_keep_tree_visible(
            "for d in /run /tmp /var/tmp /var/log; do mount -t tmpfs -o mode=1777 tmpfs $d; done",
            "mount -t tmpfs -o mode=0700 tmpfs /root",
        ),
        f"hostname {vm.name}",
        f"echo {vm.name} > /etc/hostname",
        f"echo {machine_id} > /etc/machine-id",
        "ip link set lo up",
        f"ip addr add {GUEST_MGMT_ADDR}/24 dev eth1 && ip link set eth1 up",
    ]
    if vm.fabric_addr:
        lines += [
            f"ip addr add {vm.fabric_addr}/24 dev {FABRIC_NETDEV} && ip link set {FABRIC_NETDEV} up",
            f"rdma link add {RDMA_DEVICE} type rxe netdev {FABRIC_NETDEV}"
            " || echo 'vmlab: rdma link add failed'",
        ]
    lines += [*_sudo_login(vm),
        "mkdir -p /run/sshd && chmod 0755 /run/sshd",
        "echo 'vmlab: starting sshd'",
        f"exec {SSHD} -D -e -f /vmlab/sshd_config",
        "",
    ]
    return "\n".join(lines)


def _sudo_login(vm: Vm) -> list[str]:
    """Shell lines making SUDO_USER in the VM's own /etc (the overlay: this machine's files are
    never written) with its sudoers rule, when this machine's tree has sudo."""
    if not os.access(SUDO, os.X_OK):
        return []
    secure_path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    sudoers = [f'Defaults:{SUDO_USER} secure_path="{secure_path}"',
               f'Defaults:{SUDO_USER} env_keep += "{NO_BYTECODE.split("=")[0]}"', SUDO_RULE]
    return [
        f"echo '{SUDO_USER}:x:{SUDO_UID}:{SUDO_UID}::/home/{SUDO_USER}:/bin/sh' >> /etc/passwd",
        f"echo '{SUDO_USER}:x:{SUDO_UID}:' >> /etc/group",
        f"echo '{SUDO_USER}:*:19000:0:99999:7:::' >> /etc/shadow",
        f"mkdir -p /home/{SUDO_USER} && chown {SUDO_UID}:{SUDO_UID} /home/{SUDO_USER}",
        f"echo '127.0.1.1 {vm.name}' >> /etc/hosts",  # sudo resolves its host name
        "mkdir -p /etc/sudoers.d",
        f"printf '%s\\n' {' '.join(shlex.quote(line) for line in sudoers)} > /etc/sudoers.d/vmlab",
        "chmod 0440 /etc/sudoers.d/vmlab",
    ]


def _host_enabled_units() -> list[str]:
    """The units this machine's /etc enables (its sshd, databases, timers...): the VM sees
    them in the lower layer, and masks them, so only the lab's units and what is written
    inside the VM start there."""
    wants = Path("/etc/systemd/system")
    names = {p.name for p in wants.glob("*.wants/*")} | {p.name for p in wants.glob("*.requires/*")}
    return sorted(names | {"serial-getty@ttyS0.service", "getty@tty1.service", "ssh.service",
                           "ssh.socket", "sshd.service"})


def _make_disk(path: Path, size_mb: int = DISK_MB) -> None:
    """A sparse ext4 image: the VM's overlay upper layer (its /etc, /var, ...)."""
    path.unlink(missing_ok=True)
    with open(path, "wb") as fh:
        fh.truncate(size_mb * 1024 * 1024)
    _run(["mkfs.ext4", "-q", "-F", "-L", "vmlab", "-E", "root_owner=0:0", str(path)])


def replay_journal(disk: Path) -> None:
    """Replay what the persistent layer's ext4 journal still holds (`e2fsck -E journal_only`),
    so debugfs reads what the VM wrote. The upper layer sits under the overlay root: a
    shutdown that could not remount it read-only leaves its last commits in the journal only
    (the reboot tier once read no /etc/kernel/cmdline after the VM had synced it). Never while
    qemu runs (it writes the image); the next boot would replay the same."""
    tool = _which("e2fsck") or "e2fsck"
    subprocess.run([tool, "-E", "journal_only", "-p", str(disk)], capture_output=True,
                   timeout=120, check=False)


def persisted_cmdline(disk: Path) -> tuple[str, ...]:
    """KERNEL_CMDLINE_FILE of the VM's persistent layer, as words for the next boot; words the
    lab reserves (init=, console=, ...) and anything not a plain kernel parameter are dropped."""
    replay_journal(disk)
    tool = _which("debugfs") or "debugfs"
    done = subprocess.run([tool, "-R", f"cat /upper{KERNEL_CMDLINE_FILE}", str(disk)],
                          capture_output=True, text=True, timeout=60, check=False)
    if done.returncode != 0:
        return ()
    words = done.stdout.split()
    return tuple(w for w in words if _CMDLINE_WORD.fullmatch(w) and not w.startswith(_RESERVED))


def persisted_bytecode(disk: Path, scratch: Path) -> list[str]:
    """The .pyc files a VM wrote over this project's tree into its persistent layer (read from
    the disk image with debugfs, never mounted here): none while NO_BYTECODE holds. Read while
    the VM runs, so its journal is not replayed (that writes the image)."""
    tool = _which("debugfs") or "debugfs"
    scratch.mkdir(parents=True, exist_ok=True)
    subprocess.run([tool, "-R", f'rdump "/upper{_SOURCE_ROOT}" "{scratch}"', str(disk)],
                   capture_output=True, timeout=120, check=False)
    return sorted(str(p.relative_to(scratch)) for p in scratch.rglob("*.pyc"))


def _fabric_script(vm: Vm) -> str:
    """Run by vmlab-fabric.service at each boot: the addresses and rxe0 (the lab's, not the
    node's configuration: the same every boot). The NICs are found by their MACs and named
    eth0 (fabric) and eth1 (management) as in the "sh" mode, whatever udev named them."""
    mgmt_mac = f"52:54:00:00:00:{vm.index + 1:02x}"
    fabric_mac = f"52:54:00:77:00:{vm.index + 1:02x}"
    lines = [
        "#!/bin/sh",
        "name() { for d in /sys/class/net/*; do",
        '  [ "$(cat "$d/address")" = "$1" ] && [ "${d##*/}" != "$2" ] &&'
        ' ip link set dev "${d##*/}" down && ip link set dev "${d##*/}" name "$2"; done; }',
        "udevadm settle -t 60",  # udev's own renames first (ens5...), then ours
        "ip link set lo up",
    ]
    if vm.fabric_addr:
        lines += [f"name {fabric_mac} {FABRIC_NETDEV}"]
    mgmt = "eth1" if vm.fabric_addr else "eth0"
    lines += [
        f"name {mgmt_mac} {mgmt}",
        f"ip addr add {GUEST_MGMT_ADDR}/24 dev {mgmt} 2>/dev/null; ip link set {mgmt} up",
    ]
    if vm.fabric_addr:
        lines += [
            f"ip addr add {vm.fabric_addr}/24 dev {FABRIC_NETDEV} 2>/dev/null;"
            f" ip link set {FABRIC_NETDEV} up",
            # A real NIC's RDMA device registers after its netdev (rdma-core's udev rule loads
            # mlx5_ib on the netdev's add event); the lab makes that gap certain, so a boot-time
            # unit bound to the netdev that needs the RDMA device meets it on every boot (CI
            # once found the rdma_cm unit had run before rxe0 existed)
            f"[ -d /sys/class/infiniband/{RDMA_DEVICE} ] ||"
            f" {{ sleep {RDMA_REGISTER_GAP_S}; rdma link add {RDMA_DEVICE} type rxe netdev"
            f" {FABRIC_NETDEV}; }}",
        ]
    return "\n".join([*lines, "ip -br link", "exit 0", ""])


def _stage2_systemd(vm: Vm, masked: Sequence[str]) -> str:
    """Before systemd: the VM's identity on the persistent layer (first boot), the lab's own
    units in /run (remade every boot, never in the node's /etc), this machine's units masked."""
    machine_id = uuid.uuid5(uuid.NAMESPACE_DNS, f"{vm.name}.vmlab").hex
    run = "/run/systemd/system"
    fabric_unit = "\n".join([
        "[Unit]", "Description=vmlab: addresses and rxe0", "DefaultDependencies=no",
        # the lab plays the node's network manager and its wait-online service: the addresses
        # are up before network-online.target, which units that need them (the persisted
        # llama.cpp units, the timer) order after. `Before=network-pre.target` alone ordered
        # nothing: that target is passive, in no boot transaction unless something pulls it in
        # (https://systemd.io/NETWORK_ONLINE/), so network-online.target came before the address
        "After=systemd-modules-load.service systemd-udevd.service",
        "Before=network.target network-online.target", "",
        "[Service]", "Type=oneshot", "RemainAfterExit=yes", "ExecStart=/bin/sh /vmlab/fabric.sh",
        "StandardOutput=journal+console", "StandardError=journal+console", ""])
    sshd_unit = "\n".join([
        "[Unit]", "Description=vmlab: the lab's sshd (/vmlab/sshd_config, never /etc/ssh)",
        "Requires=vmlab-fabric.service", "After=vmlab-fabric.service", "",
        "[Service]", "ExecStartPre=/bin/mkdir -p /run/sshd", f"ExecStart={SSHD} -D -e -f /vmlab/sshd_config",
        "Restart=always", "StandardOutput=journal+console", "StandardError=journal+console", ""])
    lines = [
        "#!/bin/sh",
        *_keep_tree_visible(
            "mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs /run",
            "for d in /tmp /var/tmp; do mount -t tmpfs -o mode=1777 tmpfs $d; done",
            "mount -t tmpfs -o mode=0700 tmpfs /root",
        ),
        f"[ -s /etc/vmlab-identity ] || {{ echo {vm.name} > /etc/hostname;"
        f" echo {machine_id} > /etc/machine-id; echo {vm.name} > /etc/vmlab-identity; }}",
        f"mkdir -p {run}/multi-user.target.wants",
        f"cat > {run}/vmlab-fabric.service <<'EOF'\n{fabric_unit}EOF",
        f"cat > {run}/vmlab-sshd.service <<'EOF'\n{sshd_unit}EOF",
        f"ln -sf ../vmlab-fabric.service {run}/multi-user.target.wants/vmlab-fabric.service",
        f"ln -sf ../vmlab-sshd.service {run}/multi-user.target.wants/vmlab-sshd.service",
        *(f"ln -sf /dev/null {run}/{name}" for name in masked if re.fullmatch(r"[\w@.:-]+", name)),
        "echo 'vmlab: starting systemd'",
        "exec /lib/systemd/systemd",
        "",
    ]
    return "\n".join(lines)


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _wait_listening(port: int, console: Path, timeout: float = 15.0) -> None:
    """Until the listening side of a ``-netdev socket`` pair accepts (qemu listens at start)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
            return
        time.sleep(0.1)
    raise VmLabError(f"fabric socket 127.0.0.1:{port} not listening after {timeout:g} s ({console})")


def _ssh_banner(port: int) -> bool:
    """True when something on the forwarded port speaks SSH (user-net accepts before the guest)."""
    try:
        with socket.create_connection(("127.0.0.1", port), 1.0) as sock:
            sock.settimeout(2.0)
            return sock.recv(4).startswith(b"SSH-")
    except OSError:
        return False


_LIVE: set[VmLab] = set()


@atexit.register
def _down_all() -> None:
    for lab in list(_LIVE):
        with contextlib.suppress(Exception):
            lab.down()


def vm_lab_fixture(n: int, *, scope: str = "module", name: str | None = None, init: str = "sh"
                   ) -> Callable[..., Any]:
    """A pytest fixture yielding an up ``VmLab`` of ``n`` VMs.

    Skips (with the reason) when the VM lab cannot run here: missing tools, not
    root, or no way to download the kernel.  A VM that boots but does not reach
    sshd is an error, not a skip.
    """
    import pytest

    def _vmlab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VmLab]:
        try:
            require_vm_tools()
            kernel = build_kernel()
        except VmLabError as exc:
            pytest.skip(f"VM lab unavailable: {exc}")
        with VmLab(tmp_path_factory.mktemp("vmlab"), n, kernel=kernel, init=init) as lab:
            yield lab

    _vmlab.vmlab_init = init  # type: ignore[attr-defined]  # tests/conftest.py: the vm tier
    return pytest.fixture(scope=scope, name=name)(_vmlab)  # type: ignore[call-overload,no-any-return]

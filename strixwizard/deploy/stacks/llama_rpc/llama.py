"""The llama.cpp RPC stack (`deploy --stack llama-rpc`): plan, launch lines, smoke verdict. Pure.

What llama.cpp does, read at its source (llama.cpp 0c1e570, as vendored in the
llama-cpp-python 0.3.36 sdist, `vendor/llama.cpp`):
- `tools/rpc/CMakeLists.txt`: the RPC server's binary is `ggml-rpc-server` (older builds:
  `rpc-server`); `tools/rpc/rpc-server.cpp` `rpc_server_params`: `-H/--host` (default
  127.0.0.1), `-p/--port` (default 50052), `-c/--cache` (tensor cache under
  `$LLAMA_CACHE` or `~/.cache/llama.cpp/rpc`), `-d/--device`, `-t/--threads`; any host but
  127.0.0.1 prints "Never expose the RPC server to an open network!". So each worker binds
  its FABRIC address only, never 0.0.0.0.
- `common/arg.cpp`: `llama-server --rpc HOST:PORT,...`, `-ngl`, `-sm {none,layer,row,tensor}`
  (`tensor` only in recent builds), `-lv N`; `--no-mmap` became `-lm/--load-mode none`
  there (the launcher asks the build's `--help` which one it has).
- RDMA (`ggml/src/ggml-rpc/transport.cpp`): with `GGML_RPC_RDMA` (on when libibverbs is found
  at build time, `ggml/src/ggml-rpc/CMakeLists.txt`) each side of a connection probes, at the
  HELLO handshake, for the RDMA port-1 GID equal to the TCP socket's *local* address
  (`rdma_build_target_gid`, `rdma_probe`; `GGML_RDMA_DEV` restricts the device,
  `GGML_RDMA_GID` forces the GID index), logs `RDMA probed: dev=... gid=N RoCEv2 ...`
  (transport.cpp:345) and, when both sides advertised RDMA, `RDMA activated: qpn=A->B ...`
  (transport.cpp:410), or `RDMA activate failed, staying on TCP` (transport.cpp:639). A side
  whose address has no matching GID (the address on another NIC, a GID-less iWARP port)
  silently stays on TCP. `GGML_RPC_NO_RDMA` forces TCP. The server's banner says
  `transport      : TCP (RDMA auto-negotiate enabled)` or `transport      : TCP` for a build
  without RDMA (ggml-rpc.cpp:2130-2132).
- `common/log.cpp:529-546`: llama-server shows ggml's INFO lines (the RDMA ones) only at
  verbosity 4, hence `-lv 4` on the head.

Processes are started by a fixed launcher (`START`) that takes every value as a positional
argument: it finds the first existing binary, exports `NAME=value` pairs given as data,
starts the program in its own session with its log and a pid file in the run directory
(`LlamaSettings.run_dir`), and waits until it listens. Undo (`STOP`) ends exactly that PID,
after checking that /proc/PID/exe is still the binary it started; the log stays.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field, replace
from typing import Any

from strixwizard.deploy.base import DeployPlan, DeploySettings, file_step, group_of, mkdir_step
from strixwizard.deploy.env import ClusterEnv
from strixwizard.deploy.health import probe_source
from strixwizard.deploy.process import START, candidates, process_step
from strixwizard.deploy.smoke import ERROR, FAIL, PASS, SmokeCheck
from strixwizard.deploy.stacks.llama_rpc.persist import RPC_UNIT, SERVER_UNIT, UNIT_DIR
from strixwizard.deploy.stacks.llama_rpc.placement import Placement
from strixwizard.facts import NodeFacts
from strixwizard.facts.llama_cpp import SEARCHED_AS_ROOT
from strixwizard.fixing.model import Plan, SitePlan, Step
from strixwizard.site import LLAMA_RPC

STACK = LLAMA_RPC  # the name strixwizard.site.STACKS gives it
RPC_PORT = 50052  # tools/rpc/rpc-server.cpp rpc_server_params.port
SERVER_PORT = 8080  # llama-server's default --port
RUN_DIR = "/var/lib/strixwizard/llama"
RPC_BINARIES = ("ggml-rpc-server", "rpc-server")
SERVER_BINARIES = ("llama-server",)
SPLIT_MODES = ("layer", "row", "tensor", "none")
RPC_TARGET = "ggml-rpc-server"
SERVER_TARGET = "llama-server"
@dataclass(frozen=True)
class LlamaSettings:
    """What the user picks for the llama.cpp stack (CLI flags; `bin_dir`'s default is the site
    file's `llama_bin_dir:`, the rest is not in the site file)."""

    model: str | None = None  # GGUF path on the head
    rpc_port: int = RPC_PORT
    server_port: int = SERVER_PORT
    server_host: str | None = None  # default: the head's fabric address
    split_mode: str = "layer"
    gpu_layers: str = "99"
    no_mmap: bool = False  # large models: read into memory instead of mapping the file
    cache: bool = True  # ggml-rpc-server -c: keep large tensors in a local cache
    devices: tuple[str, ...] = ()  # ggml-rpc-server -d (e.g. Vulkan0, ROCm0); default: all
    ctx_size: int | None = None
    bin_dir: str | None = None  # where the binaries are on the nodes (default: PATH)
    rpc_on_head: bool = False  # the head runs an RPC server too and lists itself in --rpc
    #: pid files and logs, apart from the target directory: a program that died leaves its
    #: log to be read, and the deploy's own files and directory still go on rollback
    run_dir: str = RUN_DIR
    health_timeout_s: float = 600.0
    persist: bool = False  # systemd units instead of runtime processes (deploy/stacks/llama_rpc/persist.py)
    unit_dir: str = UNIT_DIR

    def __post_init__(self) -> None:
        if self.split_mode not in SPLIT_MODES:
            raise ValueError(f"split mode {self.split_mode!r} (known: {', '.join(SPLIT_MODES)})")


@dataclass
class LlamaPlan(DeployPlan):
    llama: LlamaSettings = field(default_factory=LlamaSettings)
    rpc_argv: dict[str, tuple[str, ...]] = field(default_factory=dict)
    rpc_environment: dict[str, tuple[str, ...]] = field(default_factory=dict)
    server_argv: tuple[str, ...] = ()
    server_environment: tuple[str, ...] = ()
    placement: Placement | None = None  # llama-server -ts from the devices' free memory
    #: what each worker's line runs: the bare name the runtime launcher looks up, or under
    #: --persist the program its unit names (`unit_program`)
    rpc_program: dict[str, str] = field(default_factory=dict)
    server_program: str = SERVER_BINARIES[0]

    @property
    def workers(self) -> list[str]:
        return [n.node for n in self.env.nodes if n.node in self.rpc_argv]

    def endpoint(self, node: str) -> str:
        return f"{self.env.node(node).ip}:{self.llama.rpc_port}"

    @property
    def server_url(self) -> str:
        return f"http://{self.llama.server_host or self.env.head_ip}:{self.llama.server_port}"


def llama_json(plan: DeployPlan) -> dict[str, Any]:
    """The llama.cpp RPC stack's own fields of the plan's JSON (`model`: the GGUF path)."""
    assert isinstance(plan, LlamaPlan)
    return {
        "stack": STACK,
        "model": plan.llama.model,
        "rpc_argv": {k: list(v) for k, v in plan.rpc_argv.items()},
        "rpc_environment": {k: list(v) for k, v in plan.rpc_environment.items()},
        "server_argv": list(plan.server_argv),
        "server_line": shlex.join([*plan.server_environment, *plan.server_argv]),
        "server_url": plan.server_url,
        "tensor_split": None if plan.placement is None else {
            "ts": plan.placement.ts, "why": plan.placement.why,
            "devices": [{"node": d.node, "kind": d.kind, "free_bytes": d.free_bytes,
                         "source": d.source, "weights_bytes": round(h)}
                        for d, h in zip(plan.placement.devices, plan.placement.held_bytes,
                                        strict=True)]},
    }


def run_file(llama: LlamaSettings, name: str) -> str:
    return f"{llama.run_dir.rstrip('/')}/{name}"


def rpc_log(llama: LlamaSettings) -> str:
    return run_file(llama, f"{RPC_TARGET}.log")


def server_log(llama: LlamaSettings) -> str:
    return run_file(llama, f"{SERVER_TARGET}.log")


def rdma_environment(env: ClusterEnv, node: str) -> tuple[str, ...]:
    """NAME=value pairs from the node's facts: the RDMA device and the GID index of the
    fabric address (transport.cpp `rdma_probe`), or TCP forced for the tcp profile."""
    this = env.node(node)
    if env.profile != "rdma":
        return ("GGML_RPC_NO_RDMA=1",)
    pairs = []
    if this.device:
        pairs.append(f"GGML_RDMA_DEV={this.device}")
    if this.gid_index is not None:
        pairs.append(f"GGML_RDMA_GID={this.gid_index}")
    return tuple(pairs)


def rpc_server_argv(env: ClusterEnv, node: str, llama: LlamaSettings) -> tuple[str, ...]:
    argv = ["-H", env.node(node).ip, "-p", str(llama.rpc_port)]
    if llama.cache:
        argv.append("-c")
    if llama.devices:
        argv += ["-d", ",".join(llama.devices)]
    return tuple(argv)


def llama_server_argv(env: ClusterEnv, workers: list[str], llama: LlamaSettings,
                      ts: str | None = None) -> tuple[str, ...]:
    argv = ["-m", llama.model or "MODEL.gguf", "--host", llama.server_host or env.head_ip,
            "--port", str(llama.server_port),
            "--rpc", ",".join(f"{env.node(w).ip}:{llama.rpc_port}" for w in workers),
            "-ngl", llama.gpu_layers, "-sm", llama.split_mode, "-lv", "4"]
    if ts is not None:
        argv += ["-ts", ts]  # slashes: `-ts 15,85` is two llama-bench runs (placement.py)
    if llama.no_mmap:
        argv.append("--no-mmap")
    if llama.ctx_size is not None:
        argv += ["-c", str(llama.ctx_size)]
    return tuple(argv)


def launcher(settings: DeploySettings) -> str:
    return settings.path("llama-start.sh")


def start_argv(settings: DeploySettings, pidfile: str, log: str, port: int, mode: str,
               names: tuple[str, ...], environment: tuple[str, ...], args: tuple[str, ...]
               ) -> tuple[str, ...]:
    return ("sh", launcher(settings), pidfile, log, str(port), mode, *names, "--",
            *environment, "--", *args)


def plan_llama(env: ClusterEnv, facts: dict[str, NodeFacts], settings: DeploySettings,
               llama: LlamaSettings) -> LlamaPlan:
    """RPC servers on the workers (first), then llama-server on the head; one group, so a
    failing node rolls every node back. The addresses, RDMA device and GID index come through
    `env`; the facts give each device's free memory and the head's build (`-ts`)."""
    group = group_of(env)
    workers = [n.node for n in env.nodes if n.node != env.head or llama.rpc_on_head]
    if not workers:
        raise ValueError("no RPC worker: the cluster has only its head")
    order = [w for w in workers if w != env.head] + [env.head]
    from strixwizard.deploy.stacks.llama_rpc.load import (
        cache_notes,
        load_notes,
        model_bytes,
        needs_no_mmap,
    )

    size = model_bytes(llama.model)
    no_mmap_given = llama.no_mmap
    if needs_no_mmap(size) and not llama.no_mmap:
        llama = replace(llama, no_mmap=True)  # llama.cpp#19745: see deploy/stacks/llama_rpc/load.py
    deploy = LlamaPlan(env, settings, SitePlan(env.site), llama=llama)
    from strixwizard.deploy.stacks.llama_rpc.placement import place

    deploy.placement = place(size, facts, workers, env.head, llama.split_mode)
    ts = deploy.placement.ts
    persistence = ("runtime only: not started at boot; run `strixwizard deploy --stack "
                   "llama-rpc --apply` again after a reboot")
    if llama.persist:
        persistence = ("systemd units, started now and at every boot; `strixwizard deploy "
                       "--rollback` disables and removes them")
    server = llama_server_argv(env, workers, llama, ts)
    deploy.server_argv = server
    deploy.server_environment = rdma_environment(env, env.head)
    rpc_list = server[server.index("--rpc") + 1]
    notes = [f"llama-server line: {shlex.join(['env', *deploy.server_environment, 'llama-server', *server])}",
             "the same model from the CLI: " + shlex.join(
                 ["llama-cli", "-m", server[1], "--rpc", rpc_list, "-ngl", llama.gpu_layers,
                  "-sm", llama.split_mode, *(("-ts", ts) if ts else ()), "-p", "Hello"]),
             "throughput: " + shlex.join(["llama-bench", "-m", server[1], "--rpc", rpc_list,
                                          "-ngl", llama.gpu_layers,
                                          *(("-ts", ts) if ts else ())])]
    placement = deploy.placement
    notes.append(f"-ts {ts}: {placement.why}: {placement.arithmetic}" if ts else
                 f"-ts not set (llama.cpp's default split): {placement.why}")
    if not llama.model:
        notes.append("pass --gguf PATH (a GGUF file on the head) to start llama-server")
    notes += load_notes(size, len([w for w in workers if w != env.head]) or 1, no_mmap_given)
    notes += cache_notes({w: facts[w].rpc_cache for w in workers if w in facts}, llama.cache)
    plans: list[Plan] = []
    for node in order:
        steps: list[Step] = [] if llama.persist else [
            mkdir_step(settings.target_dir),
            file_step(launcher(settings), "write the llama.cpp launcher (pid file, log, "
                      "waits until the program listens)", START, mode=0o755)]
        if node in workers:
            environment = rdma_environment(env, node)
            args = rpc_server_argv(env, node, llama)
            deploy.rpc_argv[node] = args
            deploy.rpc_environment[node] = environment
            deploy.rpc_program[node] = RPC_BINARIES[0]
            pidfile, log = run_file(llama, f"{RPC_TARGET}.pid"), rpc_log(llama)
            if llama.persist:
                deploy.rpc_program[node] = unit_program(llama, rpc_names(facts.get(node)))
                steps += _unit(llama, RPC_UNIT, f"ggml-rpc-server on {env.node(node).ip}:"
                               f"{llama.rpc_port} (llama.cpp RPC worker, fabric address only)",
                               deploy.rpc_program[node], args, environment, log)
            else:
                steps.append(process_step(
                    RPC_TARGET, f"start ggml-rpc-server on {env.node(node).ip}:{llama.rpc_port} "
                    "(fabric address only)" + (f" with {' '.join(environment)}" if environment
                                               else ""),
                    pidfile, start_argv(settings, pidfile, log, llama.rpc_port, "rpc",
                                        candidates(RPC_BINARIES, llama.bin_dir), environment,
                                        args)))
        if node == env.head and llama.model:
            pidfile, log = run_file(llama, f"{SERVER_TARGET}.pid"), server_log(llama)
            summary = f"llama-server on {deploy.server_url} with --rpc to {len(workers)} worker(s)"
            if llama.persist:
                deploy.server_program = unit_program(llama, SERVER_BINARIES)
                steps += _unit(llama, SERVER_UNIT, summary, deploy.server_program, server,
                               deploy.server_environment, log)
            else:
                steps.append(process_step(
                    SERVER_TARGET, f"start {summary}", pidfile,
                    start_argv(settings, pidfile, log, llama.server_port, "server",
                               candidates(SERVER_BINARIES, llama.bin_dir),
                               deploy.server_environment, server)))
        plans.append(_plan(node, env, steps, notes, persistence, group))
    deploy.site_plan.plans = plans
    deploy.notes = list(env.warnings)
    if not llama.bin_dir:
        deploy.notes += unlooked_folders(facts, [n.node for n in env.nodes], workers,
                                         env.head if llama.model else None)
    if env.profile != "rdma":
        deploy.notes.append("TCP profile: RDMA is switched off on every end (GGML_RPC_NO_RDMA=1)")
    return deploy


def _plan(node: str, env: ClusterEnv, steps: list[Step], notes: list[str], persistence: str,
          group: str) -> Plan:
    head = node == env.head
    return Plan("deploy.llama-server" if head else "deploy.llama-rpc", node,
                SERVER_TARGET if head else RPC_TARGET, tuple(steps),
                notes=tuple(notes) if head else (), persistence=persistence, group=group)


#: Folders doctor's survey searches (facts/llama_cpp.py SEARCHED_AS_ROOT) that a node's PATH
#: seldom holds: the runtime launcher and a unit find a program there only through
#: --llama-bin-dir.
OFF_PATH = tuple(d for d in SEARCHED_AS_ROOT if d != "/usr/local/bin")


def unlooked_folders(facts: dict[str, NodeFacts], nodes: list[str], workers: list[str],
                     head: str | None) -> list[str]:
    """A note per folder where doctor found the programs a node runs only in a folder the
    deploy does not look in unasked (a build left in its build folder: the start would say
    "not installed")."""
    nodes_in: dict[str, list[str]] = {}
    for node in (n for n in nodes if n in workers or n == head):
        build = facts[node].llama.build if node in facts else None
        if build is None:
            continue
        wanted = [build.rpc_server] if node in workers else []
        if node == head:
            wanted.append(next((p for p in build.programs if p.name in SERVER_BINARIES), None))
        for folder in sorted({p.path.rsplit("/", 1)[0] for p in wanted if p is not None}):
            if folder in OFF_PATH:
                nodes_in.setdefault(folder, []).append(node)
    return [f"{', '.join(nodes)}: the llama.cpp programs are in {folder} (doctor found them "
            f"there), a folder the deploy looks in only when told: give --llama-bin-dir {folder} "
            f"(or `llama_bin_dir: {folder}` in the site file), unless root's PATH there finds them"
            for folder, nodes in nodes_in.items()]


def rpc_names(node_facts: NodeFacts | None) -> tuple[str, ...]:
    """The RPC server's names for a unit of this node: the one its llama.cpp survey found (an
    older build has only `rpc-server`), else every name, newest first."""
    build = node_facts.llama.build if node_facts is not None else None
    found = build.rpc_server if build is not None else None
    return (found.name,) if found is not None and found.name in RPC_BINARIES else RPC_BINARIES


def unit_program(llama: LlamaSettings, names: tuple[str, ...]) -> str:
    """A unit names one program: the first name, in --llama-bin-dir when given (systemd looks a
    bare name up on its own fixed search path)."""
    return candidates(names, llama.bin_dir)[0]


def _unit(llama: LlamaSettings, unit: str, summary: str, binary: str,
          args: tuple[str, ...], environment: tuple[str, ...], log: str) -> tuple[Step, ...]:
    from strixwizard.deploy.stacks.llama_rpc.persist import unit_steps, unit_text

    return unit_steps(llama.unit_dir, unit, summary,
                      unit_text(summary, binary, args, environment, log, llama.run_dir),
                      llama.run_dir)


# -- smoke verdict ------------------------------------------------------------------------

_PROBED = re.compile(r"RDMA probed:\s+dev=(\S+)\s+gid=(\d+)")
_ACTIVATED = re.compile(r"RDMA activated:\s+qpn=(\d+)->(\d+)\s+mtu=(\d+)")
#: An RDMA error: a line naming the verbs path (RDMA, ibv_*, a queue pair or completion queue,
#: a memory region) and a failure — `RDMA CQ poll timeout` (llama.cpp PR #20590, a Strix Halo
#: pair on ConnectX-4/5), a QP that went to error, `failed to register ...`.
_RDMA_WORD = re.compile(r"\bRDMA\b|\bibv_\w+|\bQPs?\b|\bCQs?\b|memory region", re.I)
_ERROR_WORD = re.compile(r"time(?:d )?out|\berror\b|\bfail(?:ed|ure)?\b|\bIBV_WC_(?!SUCCESS)",
                         re.I)
_ACTIVATE_FAILED = "RDMA activate failed, staying on TCP"
_BANNER_RDMA = "transport      : TCP (RDMA auto-negotiate enabled)"
_BANNER = re.compile(r"^\s*transport\s*: TCP\s*$", re.M)


@dataclass(frozen=True)
class RdmaEvidence:
    """What one end's log says about the RDMA negotiation."""

    probed: tuple[str, ...]  # devices, from `RDMA probed: dev=...`
    activated: int  # `RDMA activated:` lines
    activate_failed: int
    build_without_rdma: bool  # the server banner says plain `TCP`
    lines: tuple[str, ...]
    #: RDMA errors printed after the first `RDMA activated` line, as printed (stripped)
    errors: tuple[str, ...] = ()

    @classmethod
    def of(cls, log: str) -> RdmaEvidence:
        lines = tuple(line.strip() for line in log.splitlines()
                      if "RDMA" in line or "transport      :" in line)
        return cls(tuple(dict.fromkeys(m.group(1) for m in _PROBED.finditer(log))),
                   len(_ACTIVATED.findall(log)), log.count(_ACTIVATE_FAILED),
                   bool(_BANNER.search(log)) and _BANNER_RDMA not in log, lines[:6],
                   _errors_after_activation(log))


def _errors_after_activation(log: str) -> tuple[str, ...]:
    errors: list[str] = []
    active = False
    for raw in log.splitlines():
        if _ACTIVATED.search(raw):
            active = True
            continue
        if active and _RDMA_WORD.search(raw) and _ERROR_WORD.search(raw) and (
                _ACTIVATE_FAILED not in raw):
            line = raw.strip()
            if line not in errors:
                errors.append(line)
    return tuple(errors)


def _why_tcp(end: str, address: str, evidence: RdmaEvidence) -> str:
    if evidence.build_without_rdma:
        return (f"{end}: the build has no RDMA transport (banner `transport : TCP`): rebuild "
                "with libibverbs-dev installed (GGML_RPC_RDMA)")
    if evidence.activate_failed:
        return (f"{end}: `RDMA activate failed, staying on TCP` (the queue pair did not connect: "
                "check MTU and that both GIDs are RoCE v2)")
    if not evidence.probed:
        return (f"{end}: no `RDMA probed` line: no RDMA port has a GID equal to {address} (the "
                "address is on another NIC than the RDMA one, a GID-less iWARP port, or a build "
                "without RDMA)")
    return f"{end}: probed {', '.join(evidence.probed)} but the peer did not advertise RDMA"


def judge_rdma(plan: LlamaPlan, logs: dict[str, str], head_log: str) -> SmokeCheck:
    """RDMA in use on both ends of every worker connection, or a FAIL naming the TCP fallback."""
    env = plan.env
    head = RdmaEvidence.of(head_log)
    ends = {w: RdmaEvidence.of(logs.get(w, "")) for w in plan.workers}
    evidence = tuple(f"{env.head} (llama-server): {line}" for line in head.lines) + tuple(
        f"{w} (ggml-rpc-server): {line}" for w, e in ends.items() for line in e.lines)
    if env.profile != "rdma":
        used = [w for w, e in ends.items() if e.activated] + (["head"] if head.activated else [])
        status = FAIL if used else PASS
        return SmokeCheck("llama.transport", status, "RDMA on " + ", ".join(used) if used
                          else "TCP", "TCP (tcp profile, GGML_RPC_NO_RDMA=1)",
                          "TCP profile: expect 50-130 µs per hop", evidence)
    expected = "RDMA activated on the head and on " + ", ".join(plan.workers)
    why = []
    if not head.activated:
        why.append(_why_tcp(f"{env.head} (llama-server)", env.head_ip, head))
    for worker, end in ends.items():
        if not end.activated:
            why.append(_why_tcp(f"{worker} (ggml-rpc-server)", env.node(worker).ip, end))
    if why:
        return SmokeCheck("llama.transport", FAIL, "TCP FALLBACK", expected,
                          "llama.cpp RPC fell back to TCP: " + "; ".join(why), evidence)
    broken = [(f"{env.head} (llama-server)", head.errors)] + [
        (f"{w} (ggml-rpc-server)", e.errors) for w, e in ends.items()]
    broken = [(end, errors) for end, errors in broken if errors]
    if broken:
        quoted = "; ".join(f"{end}: `{errors[0]}`" + (f" (+{len(errors) - 1} more)"
                                                       if len(errors) > 1 else "")
                           for end, errors in broken)
        return SmokeCheck("llama.transport", FAIL, "RDMA ERROR AFTER ACTIVATION", expected,
                          f"RDMA activated, then failed: {quoted}. The queue pair connected but "
                          "traffic did not complete: check the MTU on both ends (link.mtu), "
                          "PFC (link.pfc) and the fabric counters (fabric.counters)",
                          evidence + tuple(f"{end}: {line}" for end, errors in broken
                                           for line in errors))
    devices = sorted({d for e in [head, *ends.values()] for d in e.probed})
    return SmokeCheck("llama.transport", PASS, "RDMA on " + ", ".join(devices), expected, "",
                      evidence)


_RPC_BUFFER = re.compile(r"\bRPC\d*\[([^\]\s]+)\] (?:model|KV) buffer size")


def rpc_endpoints_holding_layers(head_log: str) -> tuple[str, ...]:
    """The `host:port` of every RPC server llama-server placed weights or KV cache on, in
    order: `RPC0[10.0.0.2:50052] model buffer size`, `RPC[10.0.0.2:50052] ...` (no index,
    older builds), `... KV buffer size`."""
    return tuple(dict.fromkeys(m.group(1) for m in _RPC_BUFFER.finditer(head_log)))


def judge_devices(plan: LlamaPlan, head_log: str) -> SmokeCheck:
    """Every worker holds part of the model: llama-server logs `RPCn[IP:PORT] model buffer`
    (`RPC[IP:PORT]` before llama.cpp numbered RPC devices, e.g. llama.cpp issue #11552), or
    at least the KV cache of its layers (`RPC[IP:PORT] KV buffer size`)."""
    holding = rpc_endpoints_holding_layers(head_log)
    missing = [w for w in plan.workers if plan.endpoint(w) not in holding]
    expected = "model weights on " + ", ".join(plan.endpoint(w) for w in plan.workers)
    if missing:
        return SmokeCheck("llama.workers", FAIL, "no weights on " + ", ".join(missing), expected,
                          "llama-server did not place layers on these RPC servers (-ngl, "
                          "--rpc and the model size decide)")
    return SmokeCheck("llama.workers", PASS, f"{len(plan.workers)} RPC server(s) hold layers",
                      expected)


#: Run on the head: wait for /health, then one completion; prints one JSON line.
#: argv: URL, prompt, n_predict, seconds to wait for /health.
HTTP_PROBE = probe_source(r"""url, prompt, n, wait = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
status = wait_for_health(url, float(wait), 0.2)
if status != 200:
    print(json.dumps({"health": status}, allow_nan=False))
    sys.exit(0)
body = json.dumps({"prompt": prompt, "n_predict": n, "seed": 1}, allow_nan=False).encode()
request = urllib.request.Request(url + "/completion", body, {"Content-Type": "application/json"})
started = time.monotonic()
with urllib.request.urlopen(request, timeout=120) as r:
    answer = json.load(r)
print(json.dumps({"health": 200, "seconds": time.monotonic() - started,
                  "predicted": answer.get("tokens_predicted"),
                  "timings": answer.get("timings", {}), "content": answer.get("content", "")},
                 allow_nan=False))
""")


def http_probe_argv(plan: LlamaPlan, wait_s: float, prompt: str = "Hello",
                    n_predict: int = 8) -> tuple[str, ...]:
    return ("python3", "-c", HTTP_PROBE, plan.server_url, prompt, str(n_predict), f"{wait_s:g}")


def judge_completion(plan: LlamaPlan, rc: int, stdout: str, stderr: str) -> list[SmokeCheck]:
    expected = f"{plan.server_url}/health 200, then a completion"
    try:
        answer = json.loads(stdout.strip().splitlines()[-1]) if rc == 0 else None
    except (ValueError, IndexError):
        answer = None
    if not isinstance(answer, dict):
        reason = (stderr or stdout).strip().splitlines()
        return [SmokeCheck("llama.completion", ERROR, "no answer", expected,
                           f"the HTTP probe exited {rc}: {reason[-1] if reason else ''}")]
    if answer.get("health") != 200:
        return [SmokeCheck("llama.completion", FAIL, f"/health: {answer.get('health')}",
                           expected, f"llama-server did not become ready; see "
                           f"{server_log(plan.llama)} on {plan.env.head}")]
    predicted = answer.get("predicted") or 0
    seconds = float(answer.get("seconds") or 0.0)
    timings = answer.get("timings") or {}
    rate = timings.get("predicted_per_second")
    status = PASS if predicted else FAIL
    observed = (f"{predicted} tokens in {seconds * 1000:.0f} ms"
                + (f", {rate:.1f} tokens/s" if isinstance(rate, (int, float)) else ""))
    return [SmokeCheck("llama.completion", status, observed, expected,
                       "" if predicted else "the completion returned no tokens")]

"""The ds4 plan: the transport to ask for, both ranks' launch lines, the steps that start
them, the settings, the question and the JSON fields. Pure.

What ds4 takes, read at its source and in published launchers (tests/data/deploy/ds4/SOURCE
names each):
- antirez/ds4 `ds4_help.c` ("Tensor Parallelism"): `--tensor-parallel` with `--role
  coordinator|worker`, `--listen HOST PORT` (coordinator), `--coordinator HOST PORT`
  (worker), `--transport auto|rdma|tcp` (default auto), `--rdma-device NAME`,
  `--rdma-gid-index N`; `-m FILE`, `-c N`, `--rocm` (ROCm builds); ds4-server's `--host`
  (default 127.0.0.1) and `--port` (default 8000). Tensor parallelism is always one 50/50
  worker: two nodes, no more.
- `rdma` is ds4's verbs transport (RoCE v2 on Linux); `odl` (OdinLink over USB4, the
  `odl_tb5` driver and `libodl_tb5.so`, device index `DS4_TP_ODL_DEV`) comes with
  antirez/ds4#1018, an open pull request: a build without it rejects `--transport odl`.
- ds4_tp.c `tp_hello_exchange`: only `auto` may fall back to TCP; an explicit transport that
  either side lacks fails closed ("tp: --transport rdma but this side has no active
  device"). So the plan never asks `auto`: it asks what the link gives, and TCP only when
  the link gives no RDMA path, saying that TCP is a fallback.
- The coordinator is `ds4-server` so the pair serves HTTP: upstream main's ds4-server still
  rejects `--tensor-parallel` (antirez/ds4#651); antirez/ds4#813 and #921 (open) and the
  wkljohn/ds4-strix-halo-tp-odinlink fork (`deploy/ds4-tp-caddy.sh`, the argv below but for
  `--listen 0.0.0.0`) take it. The worker is the `ds4` CLI, as that launcher runs it.
- Both ends need the same GGUF at the same path: the hello compares the model's size and id
  ("tp hello: model mismatch").
- The TP port (9000) is the one ds4's help examples and both published launchers use; ds4
  has no default for it.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from strixwizard.deploy.base import DeployPlan, DeploySettings, file_step, group_of, mkdir_step
from strixwizard.deploy.declare import refuse_control_characters
from strixwizard.deploy.env import ClusterEnv, DeployRefused, NodeEnv
from strixwizard.deploy.process import START, candidates, process_step
from strixwizard.errors import UsageError
from strixwizard.facts import NodeFacts
from strixwizard.fixing.model import Plan, SitePlan
from strixwizard.site import DS4

NAME = DS4  # the name strixwizard.site.STACKS gives it
TP_PORT = 9000
API_PORT = 8000  # ds4-server --port default
RUN_DIR = "/var/lib/strixwizard/ds4"
COORDINATOR_BINARIES = ("ds4-server",)
WORKER_BINARIES = ("ds4",)
#: ds4's `--transport` values the plan asks for (never `auto`: it falls back silently)
TRANSPORTS = ("rdma", "odl", "tcp")
#: link transports (strixwizard.topology) ds4's verbs transport runs over: it addresses the
#: peer by an IPv4-mapped GID (RoCE v2) or the GID index given (InfiniBand)
VERBS_LINKS = frozenset({"roce-v2", "infiniband"})
USB4_LINK = "thunderbolt-net"
ODL_NEEDS = "a ds4 build with antirez/ds4#1018 (open pull request) and the OdinLink driver"
SERVER_NEEDS = ("a ds4-server that takes --tensor-parallel (antirez/ds4#813 or #921, open; or "
                "the wkljohn/ds4-strix-halo-tp-odinlink fork): upstream main's does not "
                "(antirez/ds4#651)")
#: published ds4 TP=2 decode figures, DeepSeek-V4-Flash on two Strix Halo boxes
PUBLISHED = ("19.54 tok/s over RoCE v2 and 19.13 over OdinLink (wkljohn/ds4-strix-halo-tp-odinlink "
             "README); an early build: 8.29 over TCP, 8.57 over OdinLink RDMA "
             "(its docs/RDMA-WORKING.md)")


@dataclass(frozen=True)
class Ds4Settings:
    """What the user picks for the ds4 stack (none of it is in the site file)."""

    model: str | None = None  # the GGUF, at the same absolute path on both nodes
    transport: str | None = None  # rdma, odl or tcp; None: from the site's link
    odinlink: bool = False  # the OdinLink provider (odl_tb5 driver, libodl_tb5) is on both nodes
    odl_device: int = 0  # DS4_TP_ODL_DEV: the OdinLink device index (/dev/odl_tb5_N)
    tp_port: int = TP_PORT
    api_port: int = API_PORT
    api_host: str | None = None  # default: the head's fabric address
    ctx_size: int | None = None  # -c; None: ds4's default
    bin_dir: str | None = None  # where ds4 and ds4-server are on the nodes (default: PATH)
    run_dir: str = RUN_DIR  # pid files and logs
    health_timeout_s: float = 1800.0  # both ranks load the model before the pair connects

    def __post_init__(self) -> None:
        if self.transport is not None and self.transport not in TRANSPORTS:
            raise ValueError(f"ds4 transport {self.transport!r} (known: {', '.join(TRANSPORTS)})")
        for port in (self.tp_port, self.api_port):
            if not 0 < port < 65536:
                raise ValueError(f"port {port} is not a TCP port")
        if self.odl_device < 0:
            raise ValueError(f"OdinLink device index {self.odl_device} is negative")


@dataclass(frozen=True)
class TransportChoice:
    """The `--transport` the plan asks ds4 for, and why."""

    transport: str  # rdma, odl or tcp
    link: str  # the link's transport (strixwizard.topology): roce-v2, thunderbolt-net, ...
    fallback: bool  # TCP because the link gives ds4 no RDMA path
    why: str

    @property
    def rdma(self) -> bool:
        return self.transport != "tcp"


def transport_for(link: str, odinlink: bool = False, asked: str | None = None,
                  profile: str = "rdma") -> TransportChoice:
    """RoCE v2 or InfiniBand: `rdma` (on the tcp profile, `tcp` as that profile asks); USB4
    with the OdinLink provider on both nodes: `odl`; anything else: `tcp`, a fallback. A
    transport the user asked for is taken as asked."""
    if asked is not None:
        if asked not in TRANSPORTS:
            raise DeployRefused(f"no ds4 transport {asked!r} (known: {', '.join(TRANSPORTS)})")
        return TransportChoice(asked, link, False, f"--transport {asked}, as asked")
    if link in VERBS_LINKS and profile == "tcp":
        return TransportChoice("tcp", link, False,
                               f"{link} link on the tcp profile (--transport tcp): TCP, as asked")
    if link in VERBS_LINKS:
        why = f"{link} link: ds4's verbs transport (--transport rdma)"
        if link == "infiniband":
            why += "; no published ds4 run over InfiniBand yet"
        return TransportChoice("rdma", link, False, why)
    if link == USB4_LINK and odinlink:
        return TransportChoice("odl", link, False,
                               f"USB4 link with the OdinLink provider: --transport odl ({ODL_NEEDS})")
    usb4 = (" (USB4: install the OdinLink provider on both nodes and say so to ask "
            "--transport odl)") if link == USB4_LINK else ""
    return TransportChoice(
        "tcp", link, True,
        f"TCP is a fallback: the {link} link gives ds4 no RDMA path{usb4}; RDMA needs a RoCE v2 "
        f"or InfiniBand link (--transport rdma) or USB4 with OdinLink (--transport odl). "
        f"Published: {PUBLISHED}")


def pair(env: ClusterEnv) -> tuple[str, str]:
    """(head, worker): ds4's tensor parallelism is exactly one 50/50 worker."""
    workers = [n.node for n in env.nodes if n.node != env.head]
    if len(workers) != 1:
        raise DeployRefused(
            f"ds4 tensor parallelism runs on exactly two nodes (the head and one 50/50 worker); "
            f"cluster {env.site} has {len(env.nodes)}: pick two with --nodes")
    return env.head, workers[0]


def rdma_args(end: NodeEnv, choice: TransportChoice) -> tuple[str, ...]:
    """`--rdma-device` and `--rdma-gid-index` from the node's facts (the device on the fabric
    netdev, the GID table's RoCE v2 IPv4 entry), as the published launcher passes them."""
    if choice.transport != "rdma":
        return ()
    args: list[str] = []
    if end.device:
        args += ["--rdma-device", end.device]
    if end.gid_index is not None:
        args += ["--rdma-gid-index", str(end.gid_index)]
    return tuple(args)


def _model_args(ds4: Ds4Settings, choice: TransportChoice) -> list[str]:
    args = ["--transport", choice.transport, "--rocm", "-m", ds4.model or "MODEL.gguf"]
    if ds4.ctx_size is not None:
        args += ["-c", str(ds4.ctx_size)]
    return args


def coordinator_argv(env: ClusterEnv, choice: TransportChoice, ds4: Ds4Settings
                     ) -> tuple[str, ...]:
    """Rank 0, `ds4-server` on the head: listens for its worker on the head's fabric address
    only, and serves HTTP on `api_host` (default: that address too)."""
    head = env.node(env.head)
    return ("--role", "coordinator", "--tensor-parallel", "--listen", head.ip, str(ds4.tp_port),
            *_model_args(ds4, choice), *rdma_args(head, choice),
            "--host", ds4.api_host or head.ip, "--port", str(ds4.api_port))


def worker_argv(env: ClusterEnv, node: str, choice: TransportChoice, ds4: Ds4Settings
                ) -> tuple[str, ...]:
    """Rank 1, the `ds4` CLI on the worker: dials the coordinator at the head's fabric
    address (so the pair's sockets ride the fabric route)."""
    return ("--role", "worker", "--tensor-parallel", "--coordinator", env.head_ip,
            str(ds4.tp_port), *_model_args(ds4, choice), *rdma_args(env.node(node), choice))


def environment(choice: TransportChoice, ds4: Ds4Settings) -> tuple[str, ...]:
    """NAME=value pairs for both ranks: the OdinLink device index for `odl`."""
    return (f"DS4_TP_ODL_DEV={ds4.odl_device}",) if choice.transport == "odl" else ()


def api_url(env: ClusterEnv, ds4: Ds4Settings) -> str:
    return f"http://{ds4.api_host or env.head_ip}:{ds4.api_port}"


# -- the plan --------------------------------------------------------------------------------

COORDINATOR_TARGET = "ds4-server"
WORKER_TARGET = "ds4"
PERSISTENCE = "runtime only: not started at boot; run `strixwizard deploy --stack ds4 --apply` again"


@dataclass
class Ds4Plan(DeployPlan):
    ds4: Ds4Settings = field(default_factory=Ds4Settings)
    choice: TransportChoice = field(default_factory=lambda: transport_for("ethernet"))
    worker: str = ""
    coordinator_argv: tuple[str, ...] = ()
    worker_argv: tuple[str, ...] = ()
    environment: tuple[str, ...] = ()

    @property
    def api_url(self) -> str:
        return api_url(self.env, self.ds4)

    def line(self, rank: int) -> str:
        """Rank 0's or rank 1's launch line, as one would type it."""
        binary, argv = ((COORDINATOR_BINARIES[0], self.coordinator_argv) if rank == 0
                        else (WORKER_BINARIES[0], self.worker_argv))
        return shlex.join(["env", *self.environment, binary, *argv])


def run_file(ds4: Ds4Settings, name: str) -> str:
    return f"{ds4.run_dir.rstrip('/')}/{name}"


def log_of(ds4: Ds4Settings, target: str) -> str:
    return run_file(ds4, f"{target}.log")


def pid_of(ds4: Ds4Settings, target: str) -> str:
    return run_file(ds4, f"{target}.pid")


def launcher(settings: DeploySettings) -> str:
    return settings.path("ds4-start.sh")


def _start(settings: DeploySettings, ds4: Ds4Settings, target: str, port: int,
           names: tuple[str, ...], environment: tuple[str, ...], args: tuple[str, ...],
           mode: str = "http") -> tuple[str, ...]:
    """The shared launcher's argv (deploy/process.py START): `http` for the coordinator (alive
    is enough, a rank loads its model for minutes before the pair connects), `dials` for the
    worker, which connects out and never listens."""
    return ("sh", launcher(settings), pid_of(ds4, target), log_of(ds4, target), str(port), mode,
            *candidates(names, ds4.bin_dir), "--", *environment, "--", *args)


def plan_ds4(env: ClusterEnv, facts: dict[str, NodeFacts], settings: DeploySettings
             ) -> Ds4Plan:
    """Rank 1 (`ds4`) on the worker first, then rank 0 (`ds4-server`) on the head; one group,
    so a failing node rolls both back."""
    del facts  # the facts reach the plan through `env` (addresses, RDMA device, GID index)
    ds4 = settings.own(Ds4Settings) or Ds4Settings()
    head, worker = pair(env)
    choice = transport_for(env.transport, ds4.odinlink, ds4.transport, env.profile)
    plan = Ds4Plan(env, settings, SitePlan(env.site), ds4=ds4, choice=choice, worker=worker,
                   coordinator_argv=coordinator_argv(env, choice, ds4),
                   worker_argv=worker_argv(env, worker, choice, ds4),
                   environment=environment(choice, ds4))
    notes = [f"transport: --transport {choice.transport}: {choice.why}",
             f"rank 0 ({head}): {plan.line(0)}", f"rank 1 ({worker}): {plan.line(1)}",
             f"the coordinator is ds4-server: {SERVER_NEEDS}",
             "both nodes need the same GGUF at the same path (ds4's hello compares them)"]
    if choice.transport == "odl":
        notes.append(f"--transport odl needs {ODL_NEEDS}")
    if not ds4.model:
        notes.append("pass --model PATH (the GGUF, at the same path on both nodes) to start the pair")
    group = group_of(env)
    ranks = ((worker, WORKER_TARGET, WORKER_BINARIES, plan.worker_argv, ds4.tp_port, "dials",
              f"start ds4 rank 1 (worker), dialling {env.head_ip}:{ds4.tp_port} with "
              f"--transport {choice.transport}"),
             (head, COORDINATOR_TARGET, COORDINATOR_BINARIES, plan.coordinator_argv, ds4.api_port,
              "http", f"start ds4-server rank 0 (coordinator), its worker's peer on "
              f"{env.head_ip}:{ds4.tp_port}, serving {plan.api_url}"))
    for node, target, names, args, port, mode, summary in ranks:
        steps = [mkdir_step(settings.target_dir),
                 file_step(launcher(settings), "write the launcher (pid file, log, start)", START,
                           mode=0o755)]
        if ds4.model:
            steps.append(process_step(target, summary, pid_of(ds4, target),
                                      _start(settings, ds4, target, port, names,
                                             plan.environment, args, mode)))
        plan.site_plan.plans.append(Plan(
            f"deploy.{target}", node, target, tuple(steps),
            notes=tuple(notes) if node == head else (), persistence=PERSISTENCE, group=group))
    plan.notes = [*env.warnings, *([choice.why] if choice.fallback else [])]
    return plan


def ds4_settings_from(common: DeploySettings, values: Mapping[str, Any]) -> DeploySettings:
    """The ds4 options (and the model: the GGUF path on both nodes) as the stack's settings; a
    control character in a value that reaches a node is refused."""
    refuse_control_characters([("--model", values.get("model")),
                               ("--ds4-bin-dir", values["ds4_bin_dir"]),
                               ("--ds4-run-dir", values["ds4_run_dir"]),
                               ("--ds4-api-host", values["ds4_api_host"]),
                               ("--target-dir", common.target_dir)])
    try:
        ds4 = Ds4Settings(model=values.get("model"), transport=values["ds4_transport"] or None,
                          odinlink=values["ds4_odinlink"], odl_device=values["ds4_odl_device"],
                          tp_port=values["ds4_tp_port"], api_port=values["ds4_api_port"],
                          api_host=values["ds4_api_host"], ctx_size=values["ds4_ctx"],
                          bin_dir=values["ds4_bin_dir"], run_dir=values["ds4_run_dir"],
                          health_timeout_s=values["ds4_health_timeout"])
    except ValueError as error:
        raise UsageError(str(error)) from error
    return replace(common, stack=NAME, model=ds4.model, options=(ds4,))


def ds4_question(plan: DeployPlan) -> str:
    assert isinstance(plan, Ds4Plan)
    return (f"ds4 (rank 1) starts on {plan.worker}, dialling the head's fabric address, then "
            f"ds4-server (rank 0) on {plan.env.head}, both with --transport "
            f"{plan.choice.transport}; a journal is written first, a failing node rolls both "
            "back, then the smoke test runs (one completion, and the transport both ranks' logs "
            "name: a fallback to TCP fails it).")


def ds4_json(plan: DeployPlan) -> dict[str, Any]:
    """The plan's own JSON fields: the transport and why, each rank's argv and line."""
    assert isinstance(plan, Ds4Plan)
    return {
        "stack": NAME,
        "model": plan.ds4.model,
        "transport": {"asked": plan.choice.transport, "link": plan.choice.link,
                      "fallback": plan.choice.fallback, "why": plan.choice.why},
        "coordinator": {"node": plan.env.head, "rank": 0, "argv": list(plan.coordinator_argv),
                        "line": plan.line(0), "log": log_of(plan.ds4, COORDINATOR_TARGET)},
        "worker": {"node": plan.worker, "rank": 1, "argv": list(plan.worker_argv),
                   "line": plan.line(1), "log": log_of(plan.ds4, WORKER_TARGET)},
        "environment": list(plan.environment),
        "api_url": plan.api_url,
    }

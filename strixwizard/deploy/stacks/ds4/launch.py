"""ds4's two-box tensor parallelism: the transport to ask for, and both launch lines. Pure.

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

from dataclasses import dataclass

from strixwizard.deploy.env import ClusterEnv, DeployRefused, NodeEnv

STACK = "ds4"
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


def transport_for(link: str, odinlink: bool = False, asked: str | None = None
                  ) -> TransportChoice:
    """RoCE v2 or InfiniBand: `rdma`; USB4 with the OdinLink provider on both nodes: `odl`;
    anything else: `tcp`, a fallback. A transport the user asked for is taken as asked."""
    if asked is not None:
        if asked not in TRANSPORTS:
            raise DeployRefused(f"no ds4 transport {asked!r} (known: {', '.join(TRANSPORTS)})")
        return TransportChoice(asked, link, False, f"--transport {asked}, as asked")
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

"""`strixwizard advise`: one box or two, layer or tensor split, and does RDMA help? Pure.

For a model shape and a set of links, decode tok/s (one sequence) is predicted for each way
to run it, per token:

- ``single``: one node reads every weight once: t_comp = bytes read / bandwidth / efficiency.
- ``layer`` (llama.cpp RPC ``-sm layer``, a pipeline): the weights are still read one node at
  a time (t_comp as one node), plus per remote node the hop's host cost by transport, the
  client's waits (`rpc_builds`, by llama.cpp build) x RTT and the activations over the link:
  (N - 1) x (hop + waits x RTT + bytes / bandwidth).
- ``tensor`` (llama.cpp ``-sm tensor``): t_comp / N, plus per sync point a host-dispatch floor
  and an all-reduce; llama.cpp syncs ``TENSOR_SYNCS_PER_LAYER`` times per layer.
- ``vllm-tp`` (vLLM TP over Ray): t_comp / (N x vLLM efficiency) plus 2 all-reduces per layer.

Every constant below names where it comes from; the ones fitted to published rows say which
rows (the validation table marks those rows "calibration", the others are checks).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from strixwizard.decode.backends import SOURCE as BACKEND_SOURCE
from strixwizard.decode.backends import VULKAN, faster, time_factor
from strixwizard.decode.backends import kind as backend_kind
from strixwizard.decode.rpc_builds import CURRENT, RpcBuild, rpc_build
from strixwizard.decode.shapes import HIDDEN, LAYERS, ModelShape
from strixwizard.errors import UsageError
from strixwizard.readback import Range

INTERCONNECTS = Path(__file__).resolve().parent.parent / "data" / "interconnects.json"

SINGLE, LAYER, TENSOR, VLLM = "single", "layer", "tensor", "vllm-tp"
SPLITS = (SINGLE, LAYER, TENSOR, VLLM)
TCP, RDMA, NONE = "tcp", "rdma", "none"

#: The GPU memory pool of one node (amdgpu.gttsize=126976 MiB, kyuz0's setup guide), as in
#: `predict.NODE_MEMORY_BYTES`.
NODE_MEMORY_BYTES = 126976 * 2**20
#: Above this much weight llama.cpp RPC needs --no-mmap (https://github.com/ggml-org/llama.cpp/issues/19745).
NO_MMAP_BYTES = 100 * 2**30

#: llama.cpp RPC `-sm layer`, per remote node and token: the host cost of one pipeline hop by
#: transport + the client's waits (rpc_builds: measured for the current build, read from the
#: source for older ones; one for every build since November 2025) x the link's RTT + the
#: activations over its bandwidth. The waits cannot explain what a hop costs on Strix Halo:
#: wkljohn's one published same-nodes A/B (Qwen3.6-27B Q6_K, 9.50 tok/s on one node; two nodes
#: 8.83 over a TCP USB4 bond, 9.16 over OdinLink RDMA) adds 7.99 and 3.91 ms per token where one
#: wait is 0.13 and 0.02 ms. The rest is the hop's host cost, named here and taken from that
#: A/B: 7.99 - 0.13 - 0.02 (activations) = 7.84 ms over kernel TCP, 3.91 - 0.02 - 0.04 = 3.85 ms
#: over user-space verbs (the split's synchronisation and the transport's own per-message work,
#: which a faster wire does not remove).
#: Refitted with lhl's 1 -> 2 -> 3 -> 4-node curve of gpt-oss-120b (33.50, 28.87, 23.02, 21.61
#: tok/s over Ethernet, https://github.com/lhl/strix-halo-testing/blob/main/rpc-test/README.md)
#: least squares of (published - compute - waits x RTT - activations) per extra node over those
#: 3 rows gives 5.56 ms over kernel TCP on an Ethernet NIC; 3.85 ms over verbs from wkljohn's
#: RDMA row (`python benchmarks/advise_validation.py` prints each fit).
RPC_HOP_MS = {TCP: 5.56, RDMA: 3.85}
#: Kernel TCP over USB4 (thunderbolt-net) is a software network device: each message costs the
#: host more than over an Ethernet NIC (Hellas measured soft-RoCE's 64 B one-way latency at about
#: 65 µs over thunderbolt-net and 28 µs over 2.5 GbE, https://blog.hellas.ai/blog/thunderbolt-ibverbs/).
#: So the TCP hop is fitted per medium: over Ethernet NICs on lhl's 1-4 node curve, over USB4
#: on wkljohn's TCP row (the links of interconnects.json whose medium is "usb4").
USB4 = "usb4"
RPC_HOP_USB4_TCP_MS = 7.84
RPC_HOP_SOURCE = ("the host cost of a pipeline hop per extra node, fitted to lhl's 1-4 node "
                  "gpt-oss-120b curve (https://github.com/lhl/strix-halo-testing/blob/main/rpc-test/"
                  "README.md) and wkljohn's -sm layer TCP/RDMA A/B (https://github.com/wkljohn/"
                  "llama.cpp-strix-halo-RCCL-RDMA/blob/main/odinlink/RESULTS.md), less the waits and "
                  "the activations")
#: Activations cross a boundary as f32 rows of `hidden` elements, there and back.
ACTIVATION_BYTES = 4

#: `-sm tensor`: ggml-backend-meta.cpp, ggml_backend_meta_graph_compute() cuts the graph at
#: every node whose split state is PARTIAL (the attention output and the FFN down projection
#: of each layer: 2 per layer; a shared-expert and routed-expert pair is merged into one by
#: get_i_delayed) and all-reduces between the subgraphs, each subgraph a separate graph
#: compute on every backend (an RPC command for a remote one).
TENSOR_SYNCS_PER_LAYER = 2
TENSOR_SYNC_SOURCE = ("ggml/src/ggml-backend-meta.cpp, ggml_backend_meta_graph_compute(): one "
                      "all-reduce per PARTIAL node, 2 per layer (llama.cpp as vendored by "
                      "llama-cpp-python 0.3.36)")
#: The host-dispatch floor per sync point, fitted to wkljohn's -sm tensor TCP row (3.50 tok/s:
#: 285.7 ms per token, of which 52.9 ms compute and 128 x 0.286 ms all-reduce) = 1.53 ms; and
#: the CPU a busy-polling transport steals from it, fitted to the RDMA row of the same A/B
#: (3.30 tok/s with a 100 µs all-reduce): 21 % (wkljohn: "the plugin busy-spins").
TENSOR_DISPATCH_MS = 1.49
BUSY_POLL_STEAL = 0.215
#: The dispatch per sync grows with the graph each piece carries: `-sm tensor` resends the
#: graph before every sync point, measured at 8.5 KB + 33.3 KB x L + 20.6 KB x L^2 per token
#: and server (benchmarks/rpc_roundtrips.py, 2-16 layers), so per sync point (2 L of them)
#: 4.25 / L + 16.65 + 10.3 x L KB. TENSOR_DISPATCH_MS is the cost at 64 layers (wkljohn's
#: model); other layer counts scale with those bytes. The graph's size does not depend on the
#: hidden size, so the hidden size does not enter.
TENSOR_REFERENCE_LAYERS = 64


def graph_kb_per_sync(layers: int) -> float:
    return 4.25 / layers + 16.65 + 10.3 * layers


def tensor_dispatch_scale(layers: int) -> float:
    """The per-sync dispatch of a `layers`-layer model relative to the fitted 64-layer one."""
    return graph_kb_per_sync(layers) / graph_kb_per_sync(TENSOR_REFERENCE_LAYERS)
TENSOR_SOURCE = ("fitted to wkljohn's -sm tensor TCP/RDMA A/B (https://github.com/wkljohn/"
                 "llama.cpp-strix-halo-RCCL-RDMA/blob/main/odinlink/RESULTS.md)")

#: A per-token cost that does not shrink with the weights (kernel launches, sampling, and for
#: MoE routing and per-expert small GEMVs). MoE, per layer: least squares over visorcraft's
#: Qwen3-30B-A3B Q4_K_M and Qwen3-235B-A22B Q3_K_M one-node rows, with the bytes a token reads
#: from the quant's tensor types (`--quant`): 0.072 ms per layer (3.5 ms on 48 layers, 6.8 on
#: 94). Dense, per token: what Geerling's Llama 3.2 3B and visorcraft's Llama 2 7B rows leave
#: over their bandwidth bound, 1.88 and 1.91 ms: 1.90 ms (per layer it would not fit both).
MOE_LAYER_MS = 0.072
DENSE_TOKEN_MS = 1.90
MOE_SOURCE = ("fitted per layer on visorcraft's Qwen3-30B-A3B and Qwen3-235B-A22B one-node rows "
              "(https://github.com/visorcraft/strix-halo-llm-perf)")
DENSE_SOURCE = ("fitted on Geerling's Llama 3.2 3B (https://github.com/geerlingguy/"
                "ai-benchmarks/issues/21) and visorcraft's Llama 2 7B one-node rows")
#: A hybrid model's Gated-DeltaNet (linear-attention) layer runs a recurrence over a state of
#: heads x 128 x 128 f32 values each token, a cost a plain attention layer does not have and
#: that does not shrink with the weights: per such layer and token, least squares over the
#: Strix Halo rows of llama.cpp PR #20334 (lemmi, Radeon 8060S, tg128) for Qwen3.5-35B-A3B Q8_0
#: and Qwen3.5-122B-A10B UD-Q5_K_XL, what each leaves over its bandwidth bound and MoE cost.
#: Two figures, by build: with the fused GATED_DELTA_NET op (Vulkan since that PR, March
#: 2026; the "PR" column), and before it, when the recurrence ran as a graph of small ops
#: (the "master" column, 17-23 % slower).
GDN_LAYER_MS = 0.194
GDN_GRAPH_LAYER_MS = 0.383
GDN_SOURCE = ("per Gated-DeltaNet layer, fitted on the Strix Halo rows of llama.cpp PR #20334 "
              "(https://github.com/ggml-org/llama.cpp/pull/20334): with the fused op, and before it")
FUSED, GRAPH = "fused", "graph"
DELTA_NET_OPS = (FUSED, GRAPH)

#: vLLM on gfx1151 for one stream: 7.5 tok/s for gpt-oss-120b where llama.cpp gives 50, and
#: 4 vs 30 for Qwen 3.6 (https://github.com/vllm-project/vllm/issues/34579): 0.13-0.15 of
#: llama.cpp's speed. The factor applies to llama.cpp's predicted compute of the checkpoint vLLM
#: loads (gpt-oss-120b: MXFP4 experts, BF16 the rest): 7.5 tok/s over the predicted 38.2 = 0.196.
VLLM_EFFICIENCY = 0.196
VLLM_SOURCE = "published: vLLM single-stream 7.5 vs llama.cpp 50 tok/s (https://github.com/vllm-project/vllm/issues/34579)"

#: vLLM with multi-token prediction (MTP, K draft tokens per step, a share A of them accepted):
#: 1 + K x A tokens per step, each step longer by the draft's cost. davidcanar's GLM-5.3-Flash
#: TP=2 over USB4 (https://github.com/davidcanar/vllm-strix-halo, Sep-27 pin): MTP off 5.5
#: tok/s, MTP=3 at 41 % acceptance 10.3 tok/s, so the draft adds (1 + 3 x 0.41) x 5.5 / 10.3
#: - 1 = 0.19 of a step.
MTP_DRAFT_COST = 0.19
MTP_SOURCE = ("MTP: 1 + K x acceptance tokens per step; the draft's cost per step fitted on "
              "davidcanar's GLM-5.3-Flash MTP on/off pair (https://github.com/davidcanar/vllm-strix-halo)")

KV_ASSUMPTION = "one sequence (batch 1), short context: KV-cache reads left out"
T_COMP_ASSUMPTION = "t_comp = weight bytes read per token / memory bandwidth + a fitted fixed cost per token"
DEFAULT_POOL = "124 GiB GPU pool per node"


@dataclass(frozen=True)
class NodeMemory:
    """One site node's memory for weights, as read from it (decode.site_nodes), with its source."""

    name: str
    memory_bytes: float
    source: str

    def text(self) -> str:
        return f"{self.name} {self.memory_bytes / 2**30:.1f} GiB ({self.source})"


@dataclass(frozen=True)
class Link:
    """One interconnect between two nodes (named in interconnects.json, or given)."""

    name: str
    label: str
    transport: str  # tcp | rdma
    rtt_us: float
    gbps: float
    allreduce_us: float
    busy_poll: bool = False
    sources: tuple[str, ...] = ()
    medium: str = "custom"  # links over the same cable or NIC class compare for "does RDMA help"

    @staticmethod
    def from_json(data: dict[str, Any]) -> Link:
        return Link(str(data["name"]), str(data["label"]), str(data["transport"]),
                    float(data["rtt_us"]), float(data["gbps"]), float(data["allreduce_us"]),
                    bool(data.get("busy_poll", False)), tuple(str(s) for s in data.get("sources", [])),
                    str(data.get("medium", "custom")))

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "label": self.label, "transport": self.transport,
                "rtt_us": self.rtt_us, "gbps": self.gbps, "allreduce_us": self.allreduce_us,
                "busy_poll": self.busy_poll, "medium": self.medium, "sources": list(self.sources)}


def named_links() -> list[Link]:
    data = json.loads(INTERCONNECTS.read_text(encoding="utf-8"))
    return [Link.from_json(entry) for entry in data["interconnects"]]


def resolve_links(names: Sequence[str]) -> list[Link]:
    """The named links (all of them when `names` is empty); UsageError on an unknown one."""
    known = {link.name: link for link in named_links()}
    if not names:
        return list(known.values())
    out = []
    for name in dict.fromkeys(names):  # a name given twice is one link (5000 --link: 1 row)
        if name not in known:
            raise UsageError(f"--link {name}: not a known interconnect ({', '.join(known)}); "
                             "or give --rtt-us, --gbps and --transport")
        out.append(known[name])
    return out


def custom_link(rtt_us: float, gbps: float, transport: str, allreduce_us: float | None,
                busy_poll: bool) -> Link:
    """A link from explicit figures (UsageError when out of range)."""
    if transport not in (TCP, RDMA):
        raise UsageError(f"--transport {transport}: give tcp or rdma")
    if not 0.1 <= rtt_us <= 1e6:
        raise UsageError(f"--rtt-us {rtt_us:g}: give a round trip between 0.1 and 1000000 µs")
    if not 0.01 <= gbps <= 10000:
        raise UsageError(f"--gbps {gbps:g}: give Gb/s between 0.01 and 10000")
    if allreduce_us is not None and not 0.1 <= allreduce_us <= 1e6:
        raise UsageError(f"--allreduce-us {allreduce_us:g}: give µs between 0.1 and 1000000")
    # Without an all-reduce time: the RTT plus RCCL's overhead over it on the same kind of
    # transport (RCCL_OVER_RTT_US).
    ar = allreduce_us if allreduce_us is not None else rtt_us + RCCL_OVER_RTT_US[transport]
    how = "given" if allreduce_us is not None else "estimated as RTT + RCCL's overhead (wkljohn)"
    return Link("custom", f"given: {rtt_us:g} µs RTT, {gbps:g} Gb/s, {transport}", transport,
                rtt_us, gbps, ar, busy_poll, (f"--rtt-us/--gbps/--transport (given); all-reduce {how}",))


@dataclass(frozen=True)
class Advice:
    """One way to run the model: a split over N nodes on one link."""

    split: str
    nodes: int
    transport: str
    interconnect: str | None
    tok_s: float
    fits: bool
    t_comm_ms: float
    t_comp_ms: float
    assumptions: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"split": self.split, "nodes": self.nodes, "transport": self.transport,
                "interconnect": self.interconnect, "tok_s": round(self.tok_s, 3), "fits": self.fits,
                "t_comm_ms": round(self.t_comm_ms, 3), "t_comp_ms": round(self.t_comp_ms, 3),
                "assumptions": list(self.assumptions)}


@dataclass(frozen=True)
class Costs:
    """The fitted constants (each fit: `python benchmarks/advise_validation.py`)."""

    dense_token_ms: float = DENSE_TOKEN_MS
    moe_layer_ms: float = MOE_LAYER_MS
    hop_tcp_ms: float = RPC_HOP_MS[TCP]
    hop_rdma_ms: float = RPC_HOP_MS[RDMA]
    hop_usb4_tcp_ms: float = RPC_HOP_USB4_TCP_MS
    tensor_dispatch_ms: float = TENSOR_DISPATCH_MS
    busy_poll_steal: float = BUSY_POLL_STEAL
    vllm_efficiency: float = VLLM_EFFICIENCY
    mtp_draft_cost: float = MTP_DRAFT_COST
    gdn_layer_ms: float = GDN_LAYER_MS
    gdn_graph_layer_ms: float = GDN_GRAPH_LAYER_MS

    def gdn_ms(self, delta_net: str) -> float:
        return self.gdn_graph_layer_ms if delta_net == GRAPH else self.gdn_layer_ms

    def hop_ms(self, transport: str, medium: str = "") -> float:
        if transport == RDMA:
            return self.hop_rdma_ms
        return self.hop_usb4_tcp_ms if medium == USB4 else self.hop_tcp_ms


COSTS = Costs()


@dataclass(frozen=True)
class Inputs:
    """What a prediction needs besides the split: the shape, the bandwidth, and optionally a
    measured single-node speed that replaces the bandwidth estimate of the compute."""

    shape: ModelShape
    bandwidth_gbps: float
    measured_tok_s: float | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)
    rpc_build: str = CURRENT
    rpc_round_trips: int | None = None  # overrides the build's count

    @property
    def build(self) -> RpcBuild:
        return rpc_build(self.rpc_build)

    @property
    def round_trips(self) -> int:
        return self.build.waits if self.rpc_round_trips is None else self.rpc_round_trips

    costs: Costs = field(default_factory=lambda: COSTS)
    backend: str = VULKAN
    mtp_tokens: int = 0  # vLLM's draft tokens per step (0: no multi-token prediction)
    mtp_acceptance: float = 0.0  # the share of them accepted
    delta_net: str = FUSED  # how the build runs Gated DeltaNet: the fused op, or a graph of ops
    #: A known site's nodes' memory for weights (advise --site); empty: the 124 GiB pool per node.
    site_memory: tuple[NodeMemory, ...] = ()

    def memory_for(self, nodes: int) -> float:
        """The memory each node needs room in when `nodes` nodes hold equal shares of the weights:
        on a known site the `nodes`-th roomiest node's (the roomiest nodes are the ones to use;
        a count beyond the site's nodes is taken at its smallest), else the 124 GiB pool."""
        return self._limiting(nodes).memory_bytes if self.site_memory else NODE_MEMORY_BYTES

    def _limiting(self, nodes: int) -> NodeMemory:
        roomiest = sorted(self.site_memory, key=lambda n: -n.memory_bytes)
        return roomiest[min(nodes, len(roomiest)) - 1]

    def fits(self, nodes: int) -> bool:
        return self.shape.weight_bytes_total / nodes <= self.memory_for(nodes)

    def memory_assumption(self, nodes: int) -> str:
        """Where the fit's memory came from, for `nodes` nodes."""
        if not self.site_memory:
            return DEFAULT_POOL
        limit = self._limiting(nodes)
        if nodes == 1:
            return f"memory for weights of one node read from the site: the roomiest, {limit.text()}"
        return (f"memory for weights read from the site: {nodes} nodes hold 1/{nodes} each, the "
                f"smallest of the {min(nodes, len(self.site_memory))} roomiest is {limit.text()}")

    def common_assumptions(self, nodes: int) -> tuple[str, ...]:
        return (KV_ASSUMPTION, f"{T_COMP_ASSUMPTION}; {self.memory_assumption(nodes)}")

    def pool_text(self) -> str:
        """The memory a 'nothing fits' answer names."""
        if not self.site_memory:
            return f"{NODE_MEMORY_BYTES / 2**30:.0f} GiB"
        return "the site's memory for weights (" + ", ".join(
            f"{n.name} {n.memory_bytes / 2**30:.1f} GiB" for n in self.site_memory) + ")"

    @property
    def fixed_ms(self) -> float:
        """The per-token cost that does not scale with the bytes read."""
        linear = self.shape.linear_layers * self.costs.gdn_ms(self.delta_net)
        if self.shape.moe:
            return self.costs.moe_layer_ms * self.shape.layers + linear
        return self.costs.dense_token_ms + linear

    def single_ms(self) -> float:
        """llama.cpp's time per token on one node, measured or estimated: the bytes a token
        reads over the bandwidth, plus the per-layer cost that does not scale with them."""
        if self.measured_tok_s:
            return 1e3 / self.measured_tok_s
        bound = self.shape.weight_bytes_per_token / (self.bandwidth_gbps * 1e9) * 1e3
        return (bound + self.fixed_ms) * time_factor(self.backend, self.shape)

    def compute_assumption(self) -> str:
        if self.measured_tok_s:
            return f"compute from the measured single-node speed, {self.measured_tok_s:g} tok/s"
        kind, source = ("MoE", MOE_SOURCE) if self.shape.moe else ("dense", DENSE_SOURCE)
        per = (f"{self.costs.moe_layer_ms:g} ms per layer" if self.shape.moe else
               f"{self.costs.dense_token_ms:g} ms per token")
        if self.shape.linear_layers:
            how = "the fused op" if self.delta_net == FUSED else "a graph of small ops (before the fused op)"
            per += (f" + {self.costs.gdn_ms(self.delta_net):g} ms per Gated-DeltaNet layer "
                    f"({self.shape.linear_layers} of them, {how}; {GDN_SOURCE})")
        backend = (f"; llama.cpp {self.backend}: x{time_factor(self.backend, self.shape):g} for a "
                   f"{backend_kind(self.shape)} model ({BACKEND_SOURCE})" if self.backend != VULKAN else
                   "; llama.cpp Vulkan (the constants' reference)")
        return f"{kind}: the bandwidth bound at {self.bandwidth_gbps:g} GB/s + {per} ({source}){backend}"


def _butterfly_steps(nodes: int) -> int:
    return max(1, math.ceil(math.log2(nodes)))


def predict_single(inputs: Inputs) -> Advice:
    t = inputs.single_ms()
    return Advice(SINGLE, 1, NONE, None, 1e3 / t, inputs.fits(1), 0.0, t,
                  (*inputs.common_assumptions(1), inputs.compute_assumption()))


def rpc_ms_per_node(shape: ModelShape, link: Link, round_trips: int = 1, costs: Costs = COSTS) -> float:
    """llama.cpp RPC's cost per token for one remote node of a layer split."""
    wire = 2 * shape.hidden * ACTIVATION_BYTES * 8 / (link.gbps * 1e9) * 1e3
    return costs.hop_ms(link.transport, link.medium) + round_trips * link.rtt_us / 1e3 + wire


def predict_layer(inputs: Inputs, nodes: int, link: Link) -> Advice:
    t_comp = inputs.single_ms()
    trips = inputs.round_trips
    build = inputs.build
    which = (f"{trips} wait(s) (--rpc-round-trips)" if inputs.rpc_round_trips is not None else
             f"{trips} wait(s) ({build.basis} for llama.cpp RPC protocol {build.protocol}, --rpc-build "
             f"{build.key})")
    hop = inputs.costs.hop_ms(link.transport, link.medium)
    t_comm = (nodes - 1) * rpc_ms_per_node(inputs.shape, link, trips, inputs.costs)
    return Advice(LAYER, nodes, link.transport, link.name, 1e3 / (t_comp + t_comm),
                  inputs.fits(nodes), t_comm, t_comp,
                  (*inputs.common_assumptions(nodes), inputs.compute_assumption(),
                   "pipeline: weights read one node at a time, so t_comp is one node's",
                   f"per remote node and token: {hop:g} ms hop over {link.transport} ({RPC_HOP_SOURCE}) "
                   f"+ {which} x {link.rtt_us:g} µs + activations at {link.gbps:g} Gb/s"))


def predict_tensor(inputs: Inputs, nodes: int, link: Link) -> Advice:
    t_comp = inputs.single_ms() / nodes
    costs, layers = inputs.costs, inputs.shape.layers
    syncs = TENSOR_SYNCS_PER_LAYER * layers
    per_sync = costs.tensor_dispatch_ms * tensor_dispatch_scale(layers)
    dispatch = per_sync * (nodes - 1) * (1 + (costs.busy_poll_steal if link.busy_poll else 0.0))
    allreduce = link.allreduce_us / 1e3 * _butterfly_steps(nodes)
    t_comm = syncs * (dispatch + allreduce)
    poll = (f"; the transport busy-polls: +{costs.busy_poll_steal:.0%} on dispatch" if link.busy_poll else "")
    return Advice(TENSOR, nodes, link.transport, link.name, 1e3 / (t_comp + t_comm),
                  inputs.fits(nodes), t_comm, t_comp,
                  (*inputs.common_assumptions(nodes), inputs.compute_assumption(),
                   f"{syncs} sync points per token ({TENSOR_SYNC_SOURCE})",
                   f"per sync: {per_sync:.2f} ms host dispatch per remote node ({TENSOR_DISPATCH_MS:g} ms "
                   f"at {TENSOR_REFERENCE_LAYERS} layers, scaled with the graph resent per sync){poll} + a "
                   f"{link.allreduce_us:g} µs all-reduce x {_butterfly_steps(nodes)} butterfly step(s) "
                   f"({TENSOR_SOURCE})",
                   "the dispatch floor is fitted on one 64-layer model; its growth with the layers is "
                   "the measured graph traffic (benchmarks/rpc_roundtrips.py), not yet checked on a "
                   "published row of another layer count"))


def predict_vllm(inputs: Inputs, nodes: int, link: Link | None) -> Advice:
    t_comp = inputs.single_ms() / (inputs.costs.vllm_efficiency * nodes)
    allreduce_us = link.allreduce_us * _butterfly_steps(nodes) if link is not None else 0.0
    t_comm = 2 * inputs.shape.layers * allreduce_us / 1e3 if nodes > 1 else 0.0
    transport = link.transport if link is not None and nodes > 1 else NONE
    notes = [*inputs.common_assumptions(nodes), inputs.compute_assumption(),
             f"vLLM on gfx1151 reaches {inputs.costs.vllm_efficiency:g} of llama.cpp's single-stream speed "
             f"({VLLM_SOURCE})"]
    if nodes > 1 and link is not None:
        notes.append(f"2 all-reduces per layer at {link.allreduce_us:g} µs (RCCL) x "
                     f"{_butterfly_steps(nodes)} step(s)")
    step, tokens = t_comp + t_comm, 1.0
    if inputs.mtp_tokens:
        tokens = 1 + inputs.mtp_tokens * inputs.mtp_acceptance
        step *= 1 + inputs.costs.mtp_draft_cost
        notes.append(f"MTP: {inputs.mtp_tokens} draft tokens, {inputs.mtp_acceptance:.0%} accepted: "
                     f"{tokens:.2f} tokens per step, each step +{inputs.costs.mtp_draft_cost:.0%} "
                     f"({MTP_SOURCE})")
    return Advice(VLLM, nodes, transport, link.name if link is not None and nodes > 1 else None,
                  1e3 * tokens / step, inputs.fits(nodes), t_comm, t_comp, tuple(notes))


def predict_all(inputs: Inputs, node_counts: Iterable[int], links: Sequence[Link]) -> list[Advice]:
    """Every split for every node count and link: one node once per engine, multi-node per link."""
    out: list[Advice] = []
    counts = sorted(set(node_counts))
    if 1 in counts:
        out.append(predict_single(inputs))
        out.append(predict_vllm(inputs, 1, None))
    for nodes in (n for n in counts if n > 1):
        for link in links:
            out.append(predict_layer(inputs, nodes, link))
            out.append(predict_tensor(inputs, nodes, link))
            out.append(predict_vllm(inputs, nodes, link))
    return out


def _best(predictions: Iterable[Advice]) -> Advice | None:
    return max(predictions, key=lambda p: p.tok_s, default=None)


def _rdma_answer(predictions: Sequence[Advice], links: Sequence[Link], split: str, nodes: int,
                 trips: int = 1) -> tuple[bool | None, str]:
    """Does RDMA help `split` on `nodes`: the best RDMA link against the best TCP link over the
    same medium (cable or NIC class), else against the best TCP link of all."""
    same = [p for p in predictions if p.split == split and p.nodes == nodes]
    medium = {link.name: link.medium for link in links}
    rdma = _best(p for p in same if p.transport == RDMA)
    if rdma is None:
        return None, "no RDMA link to compare"
    tcp = (_best(p for p in same if p.transport == TCP
                 and medium.get(p.interconnect or "") == medium.get(rdma.interconnect or ""))
           or _best(p for p in same if p.transport == TCP))
    if tcp is None:
        return None, "no TCP link to compare"
    gain = rdma.tok_s / tcp.tok_s - 1
    saved = tcp.t_comm_ms - rdma.t_comm_ms
    total = tcp.t_comm_ms + tcp.t_comp_ms
    # the figures as the table of ways shows them (rounded like `Advice.to_json`)
    head = (f"{split} on {nodes} nodes: {rdma.interconnect} {round(rdma.tok_s, 3):.2f} vs "
            f"{tcp.interconnect} {round(tcp.tok_s, 3):.2f} tok/s ({gain:+.1%})")
    if split == TENSOR:
        why = "host dispatch per sync point, not the wire, sets the cost"
        polls = {link.name for link in links if link.busy_poll}
        if gain < 0 and rdma.interconnect in polls:
            why += f", and {rdma.interconnect} busy-polls, taking CPU from dispatch"
    elif split == LAYER:
        why = (f"{trips} RPC wait{'' if trips == 1 else 's'} per token and hop; RDMA saves {saved:.1f} ms "
               f"of {total:.0f} ms (the hop's host cost by transport, and the waits x RTT)")
    else:
        why = f"RDMA saves {saved:.1f} ms of {total:.0f} ms per token"
    helps = gain > 0.01
    return helps, f"{'yes' if helps else 'no'}: {head}; {why}"


def recommend(shape: ModelShape, predictions: Sequence[Advice], links: Sequence[Link],
              trips: int = 1, pool: str = f"{NODE_MEMORY_BYTES / 2**30:.0f} GiB") -> dict[str, Any]:
    """The fastest way that fits, why, whether RDMA helps it, and the faster backend; `pool`
    names the memory a node has for weights when nothing fits."""
    out = _recommend(shape, predictions, links, trips, pool)
    name, _gain, why = faster(shape)
    return {**out, "backend": name, "backend_reason": why}


def _recommend(shape: ModelShape, predictions: Sequence[Advice], links: Sequence[Link],
               trips: int, pool: str) -> dict[str, Any]:
    fitting = [p for p in predictions if p.fits]
    best = _best(fitting)
    single = next((p for p in predictions if p.split == SINGLE), None)
    if best is None:
        most = max((p.nodes for p in predictions), default=1)
        return {"split": None, "nodes": None, "interconnect": None, "transport": None, "tok_s": None,
                "reason": (f"{shape.weight_bytes_total / 2**30:.0f} GiB of weights do not fit on "
                           f"{most} node(s) of {pool}: add nodes (--nodes)"),
                "rdma_helps": None, "rdma_reason": "nothing fits"}
    if best.split == SINGLE:
        reason = "the model fits one node: no network on the token path, so one node is fastest"
        multi = _best(p for p in fitting if p.nodes > 1 and p.split == LAYER)
        if multi is not None:
            helps, line = _rdma_answer(predictions, links, LAYER, multi.nodes, trips)
            rdma_reason = f"not for this model (one node is faster); for a layer split, {line}"
            helps = False
        else:
            helps, rdma_reason = False, "no: one node needs no network"
    else:
        why = {LAYER: "a pipeline reads the weights one node at a time but crosses the wire once per "
                      "token and node boundary",
               TENSOR: "the tensor split halves the weights read per node, and that outweighs its syncs",
               VLLM: "vLLM's TP split wins here"}[best.split]
        reason = (f"{shape.weight_bytes_total / 2**30:.0f} GiB does not fit one node; " if
                  (single is not None and not single.fits) else "") + why
        helps, rdma_reason = _rdma_answer(predictions, links, best.split, best.nodes, trips)
    tensor = _best(p for p in fitting if p.split == TENSOR)
    layer = _best(p for p in fitting if p.split == LAYER)
    versus = (f"layer split {round(layer.tok_s, 3):.2f} vs tensor split {round(tensor.tok_s, 3):.2f} "
              "tok/s at best"
              if tensor is not None and layer is not None else None)
    return {"split": best.split, "nodes": best.nodes, "interconnect": best.interconnect,
            "transport": best.transport, "tok_s": round(best.tok_s, 3), "reason": reason,
            "rdma_helps": helps, "rdma_reason": rdma_reason, "layer_vs_tensor": versus}


def with_weight_bytes(shape: ModelShape, total_bytes: float) -> ModelShape:
    """The same model at another quantization: the bytes read scale with the file."""
    ratio = total_bytes / shape.weight_bytes_total
    return replace(shape, weight_bytes_total=total_bytes,
                   precision=f"{shape.precision or 'the model'} scaled to {total_bytes / 2**30:g} GiB "
                             "(--weight-gib)",
                   shared_bytes_per_token=shape.shared_bytes_per_token * ratio,
                   weight_bytes_per_token=shape.weight_bytes_per_token * ratio,
                   expert_bytes_per_token=shape.expert_bytes_per_token * ratio)


#: The share of the weights a token reads: 1 for dense; Kimi K2 (32B of 1T, 0.032) is the
#: sparsest published MoE, so 0.001 leaves room and keeps the division finite.
ACTIVE_FRACTION = Range(0.001, 1.0)


def explicit_shape(name: str, layers: int, hidden: int, weight_bytes: float, active_fraction: float,
                   experts: bool = False, linear_layers: int = 0) -> ModelShape:
    """A model from its published figures: layers, hidden size, the weights' bytes (the GGUF
    file's size) and the fraction of them a token reads (1 for dense; active / total
    parameters for MoE)."""
    LAYERS.check(layers, "--layers")
    HIDDEN.check(hidden, "--hidden")
    if not 1e6 <= weight_bytes <= 1e14:
        raise UsageError("--weight-gib: give the weights' size, 0.001 to 90000 GiB")
    ACTIVE_FRACTION.check(active_fraction, "--active-fraction")
    Range(0, layers).check(linear_layers, "--linear-layers")
    moe = experts or active_fraction < 1.0
    read = weight_bytes * active_fraction
    # Only batch 1 is predicted here, so the expert counts just mark the model as MoE (for
    # MOE_EFFICIENCY); every byte a token reads counts as expert bytes.
    return ModelShape(name, layers, hidden, 2, weight_bytes, weight_bytes * active_fraction, read,
                      weight_bytes, "given: --layers, --hidden, --weight-gib, --active-fraction",
                      experts=8 if moe else 0, experts_per_token=1 if moe else 0,
                      expert_bytes_per_token=read if moe else 0.0, linear_layers=linear_layers)


def advice_document(inputs: Inputs, node_counts: Sequence[int], links: Sequence[Link]) -> dict[str, Any]:
    """The `advise --json` body (schema: strixwizard/schema/advise.schema.json)."""
    shape = inputs.shape
    predictions = predict_all(inputs, node_counts, links)
    load_notes = []
    if shape.weight_bytes_total > NO_MMAP_BYTES:
        load_notes.append(f"{shape.weight_bytes_total / 2**30:.0f} GiB of weights: run llama.cpp with "
                          "--no-mmap (-mmp 0) over RPC, or the load hangs or faults "
                          "(https://github.com/ggml-org/llama.cpp/issues/19745)")
    return {
        "model": {"name": shape.name, "layers": shape.layers, "hidden": shape.hidden,
                  "weight_bytes_total": round(shape.weight_bytes_total),
                  "weight_bytes_per_token": round(shape.weight_bytes_per_token),
                  "moe": shape.moe, "source": shape.source, "linear_layers": shape.linear_layers,
                  "precision": shape.precision or "as given (--weight-gib)",
                  "expert_bytes_per_token": round(shape.expert_bytes_per_token),
                  "shared_bytes_per_token": round(shape.shared_bytes_per_token)},
        "mem_bandwidth_gbps": inputs.bandwidth_gbps,
        "backend": inputs.backend,
        "measured_tok_s": inputs.measured_tok_s,
        "nodes": sorted(set(node_counts)),
        "interconnects": [link.to_json() for link in links],
        "predictions": [p.to_json() for p in predictions],
        "recommendation": recommend(shape, predictions, links, inputs.round_trips, inputs.pool_text()),
        "memory_for_weights": {
            "default_gib": round(NODE_MEMORY_BYTES / 2**30, 2),
            "site_nodes": [{"name": n.name, "gib": round(n.memory_bytes / 2**30, 2), "source": n.source}
                           for n in inputs.site_memory],
            "rule": inputs.memory_assumption(1) if inputs.site_memory else
                    f"{DEFAULT_POOL} (amdgpu.gttsize=126976 MiB, kyuz0's setup guide)"},
        "constants": {
            "rpc_round_trips": inputs.round_trips, "rpc_build": inputs.build.to_json(),
            "rpc_hop_ms": {TCP: inputs.costs.hop_tcp_ms, RDMA: inputs.costs.hop_rdma_ms,
                           f"{USB4}-{TCP}": inputs.costs.hop_usb4_tcp_ms},
            "tensor_syncs_per_layer": TENSOR_SYNCS_PER_LAYER,
            "tensor_dispatch_ms": inputs.costs.tensor_dispatch_ms,
            "busy_poll_steal": inputs.costs.busy_poll_steal, "moe_layer_ms": inputs.costs.moe_layer_ms,
            "dense_token_ms": inputs.costs.dense_token_ms,
            "vllm_efficiency": inputs.costs.vllm_efficiency,
            "mtp_draft_cost": inputs.costs.mtp_draft_cost,
            "gdn_layer_ms": inputs.costs.gdn_ms(inputs.delta_net), "delta_net": inputs.delta_net,
            "sources": [RPC_HOP_SOURCE, *inputs.build.sources, TENSOR_SYNC_SOURCE, TENSOR_SOURCE,
                        MOE_SOURCE, DENSE_SOURCE, GDN_SOURCE, VLLM_SOURCE]},
        "notes": [*inputs.notes, *load_notes],
    }


#: RCCL's cost over a round trip of the same transport (wkljohn: a 286 µs all-reduce on a
#: 130 µs TCP link, 100 µs on a 22 µs RDMA link), to turn an RCCL floor back into an RTT.
RCCL_OVER_RTT_US = {TCP: 156.0, RDMA: 78.0}
#: No bandwidth is measured by `test decode`; the activations a layer split sends (tens of KB
#: per token) make it matter little, so a stand-in is used and said.
MEASURED_LINK_GBPS = 10.0


def links_from_points(points: Sequence[Any]) -> list[Link]:
    """Links from measured all-reduce times (`decode.collectives.CollectivePoint`s, the figures
    of `test decode` or of a Test step): the all-reduce at the model's batch-1 size is what TP
    pays, and the RTT is the smallest size's time (2 x one-way for a ping-pong estimate; for
    RCCL its floor less RCCL's own overhead)."""
    from strixwizard.decode.collectives import RCCL_TOOL, curves

    out = []
    for curve in curves(list(points)):
        if not curve.points:
            continue
        transport = RDMA if curve.transport == RDMA else TCP
        floor = curve.points[0].allreduce_us
        rccl = curve.fixed_floor or curve.points[0].tool == RCCL_TOOL
        rtt = max(floor - RCCL_OVER_RTT_US[transport], 1.0) if rccl else floor
        out.append(Link(curve.transport, f"{curve.transport} as measured ({curve.source})", transport,
                        round(rtt, 2), MEASURED_LINK_GBPS, round(floor, 2), False,
                        (f"{curve.source}: {curve.points[0].tool}; RTT from the smallest size "
                         f"({'RCCL floor less its overhead' if rccl else '2 x one-way'}); bandwidth "
                         f"{MEASURED_LINK_GBPS:g} Gb/s stand-in (not measured by this run)",),
                        medium="measured"))
    return out


def fabric_advice(shape: ModelShape, points: Sequence[Any], nodes: int, bandwidth_gbps: float,
                  measured_tok_s: float | None = None) -> dict[str, Any] | None:
    """The advice of `strixwizard advise` from measured figures: what `test decode` and the
    wizard's Test step show beside their TP table (None: nothing measured)."""
    links = links_from_points(points)
    if not links:
        return None
    inputs = Inputs(shape, bandwidth_gbps, measured_tok_s)
    predictions = predict_all(inputs, sorted({1, 2, max(2, nodes)}), links)
    return {"links": [link.to_json() for link in links],
            "predictions": [p.to_json() for p in predictions],
            "recommendation": recommend(shape, predictions, links)}


def advice_lines(advice: dict[str, Any]) -> list[str]:
    """Three lines: the fastest way, does RDMA help, layer or tensor."""
    rec = advice["recommendation"]
    if rec["split"] is None:
        lines = [f"advice: nothing fits: {rec['reason']}"]
    else:
        where = f" over {rec['interconnect']}" if rec["interconnect"] else ""
        lines = [f"advice: fastest is {rec['split']} on {rec['nodes']} node(s){where}, "
                 f"{rec['tok_s']:.2f} tok/s: {rec['reason']}"]
    lines.append(f"advice: does RDMA help? {rec['rdma_reason']}")
    if rec.get("layer_vs_tensor"):
        lines.append(f"advice: {rec['layer_vs_tensor']} (llama.cpp; `strixwizard advise` for every way)")
    return lines


def hetero_advice(inputs: Inputs, nodes: Sequence[Any], links: Sequence[Link],
                  ratios: Sequence[float] | None = None, order: str = "as --nodes-spec lists them",
                  names: Sequence[str] | None = None) -> dict[str, Any]:
    """A layer split over unequal nodes (`decode.hetero.NodeSpec`s in device order): the `-ts`
    that fits and is fastest (or the one given, refused when it cannot fit), and its speed over
    the best link."""
    from strixwizard.decode.hetero import GIB, best_split, given_split, read_ms, ts_text

    shape = inputs.shape
    weights = shape.weight_bytes_total
    held = given_split(weights, nodes, ratios) if ratios is not None else best_split(weights, nodes)
    described = [{"memory_gib": round(n.memory_bytes / GIB, 2), "bandwidth_gbps": n.bandwidth_gbps}
                 for n in nodes]
    if held is None:
        room = sum(n.memory_bytes for n in nodes) / GIB
        return {"nodes": described, "tensor_split": None, "tok_s": None, "interconnect": None,
                "reason": f"{weights / 2**30:.0f} GiB of weights do not fit the nodes' {room:.0f} GiB "
                          "together"}
    used = sum(1 for h in held if h > 0)
    factor = time_factor(inputs.backend, shape)
    t_comp = (read_ms(shape.weight_bytes_per_token, weights, held, nodes) + inputs.fixed_ms) * factor
    options = [(t_comp + (used - 1) * rpc_ms_per_node(shape, link, inputs.round_trips, inputs.costs), link)
               for link in links] if used > 1 else [(t_comp, None)]
    total, link = min(options, key=lambda item: item[0])
    for entry, h in zip(described, held, strict=True):
        entry["weights_gib"] = round(h / GIB, 2)
    fastest = max(n.bandwidth_gbps for n in nodes)
    if ratios is not None:
        why = "the split given (--tensor-split); every node holds its share"
    elif len({n.bandwidth_gbps for n in nodes}) > 1:
        why = (f"a pipeline reads each node's layers at that node's bandwidth, so the fastest nodes "
               f"({fastest:g} GB/s) take as much as fits")
    else:
        why = "equal bandwidths: shares by memory, the most headroom left on each node for the KV cache"
    if used < len(nodes):
        why += f"; {len(nodes) - used} node(s) hold nothing and are left out (each extra node costs a hop)"
    return {"nodes": described, "tensor_split": ts_text(held), "used_nodes": used,
            "tok_s": round(1e3 / total, 3),
            "interconnect": link.name if link is not None else None, "t_comp_ms": round(t_comp, 3),
            "t_comm_ms": round(total - t_comp, 3),
            "reason": f"-ts {ts_text(held)} (llama.cpp device order, {order}): {why}"
                      + _holds(held, nodes, names)}


def _holds(held: Sequence[float], nodes: Sequence[Any], names: Sequence[str] | None) -> str:
    """What each node holds of its memory: why the split fits."""
    from strixwizard.decode.hetero import GIB

    labels = names or [f"node {i + 1}" for i in range(len(nodes))]
    return "; each holds its share: " + ", ".join(
        f"{label} {h / GIB:.1f} of {n.memory_bytes / GIB:.1f} GiB"
        for label, h, n in zip(labels, held, nodes, strict=True))

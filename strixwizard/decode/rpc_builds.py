"""How often llama.cpp's RPC client waits for a server per generated token, by build.

A `-sm layer` split over RPC costs per token and remote node the link's round trip times the
number of times the client blocks on a reply (a "wait"). That number changed with the RPC
protocol, which `ggml-rpc-server` prints when it starts (`Starting RPC server vX.Y.Z`, the
RPC_PROTO_*_VERSION of ggml/include/ggml-rpc.h). The newest build is measured here with the
real programs (benchmarks/rpc_roundtrips.py, tests/test_rpc_roundtrips_real.py); the older
ones are read from ggml-rpc.cpp's history (https://github.com/ggml-org/ggml/commits/master/src/ggml-rpc/ggml-rpc.cpp,
the copy of llama.cpp's ggml kept in sync with it; the protocol per commit from
include/ggml-rpc.h). Every count is for a decode step whose graph llama.cpp reuses (one
sequence, llama-bench tg or a server slot), per remote node.
"""

from __future__ import annotations

from dataclasses import dataclass

from strixwizard.errors import UsageError


@dataclass(frozen=True)
class RpcBuild:
    key: str
    protocol: str  # RPC protocol versions (ggml-rpc.h) this entry covers
    dates: str  # when those versions were llama.cpp's master
    waits: int  # blocking round trips per token and remote node
    basis: str  # "measured" or "source"
    what: str  # which commands wait, and the caveats
    sources: tuple[str, ...]

    def to_json(self) -> dict[str, object]:
        return {"key": self.key, "protocol": self.protocol, "dates": self.dates, "waits": self.waits,
                "basis": self.basis, "what": self.what, "sources": list(self.sources)}


RPC_BUILDS = (
    RpcBuild("proto-1", "none to 1.0.0", "2024-05-14 to 2025-04-24", 6, "source",
             "every command waits for its reply (send_rpc_cmd always reads one): 4 SET_TENSOR of the "
             "inputs, GRAPH_COMPUTE (its status) and GET_TENSOR of the output",
             ("https://github.com/ggml-org/llama.cpp/pull/6829",
              "https://github.com/ggml-org/llama.cpp/pull/12943 (\"RPC_CMD_SET_TENSOR always returns an "
              "empty response and we send this 4 times per token\")")),
    RpcBuild("proto-2", "2.0.0 to 3.0.0", "2025-04-25 to 2025-11-27", 2, "source",
             "SET_TENSOR is one-way; GRAPH_COMPUTE still returns its status, then GET_TENSOR",
             ("https://github.com/ggml-org/llama.cpp/pull/12943",)),
    RpcBuild("proto-3.5", "3.5.0 to 5.1.0", "2025-11-28 to at least 2026-08-18", 1, "source",
             "GRAPH_COMPUTE is one-way and a repeated graph is sent as GRAPH_RECOMPUTE: GET_TENSOR of "
             "the output is the one wait. From 3.6.0 each FLASH_ATTN_EXT and MUL_MAT_ID node also costs "
             "a GET_ALLOC_SIZE round trip whenever the scheduler allocates the graph anew: none while "
             "llama.cpp reuses the graph, hundreds per token when it does not (558 measured at b7991)",
             ("https://github.com/ggml-org/llama.cpp/pull/15405",
              "https://github.com/ggml-org/llama.cpp/pull/17116",
              "https://github.com/michaelneale/decentralized-inference (README: 558 round trips per token)")),
    RpcBuild("proto-7", "7.0.0 (llama.cpp of llama-cpp-python 0.3.36)", "2026", 1, "measured",
             "measured with the real ggml-rpc-server and llama-server through a counting proxy: one "
             "GET_TENSOR wait per token and remote node whatever the layer count; SET_TENSOR and "
             "GRAPH_RECOMPUTE are one-way on the client's asynchronous dispatcher and alloc sizes are "
             "cached on the client",
             ("benchmarks/rpc_roundtrips.py", "https://github.com/ggml-org/llama.cpp/pull/18626")),
)
CURRENT = "proto-7"


def rpc_build(key: str) -> RpcBuild:
    for build in RPC_BUILDS:
        if build.key == key:
            return build
    raise UsageError(f"--rpc-build {key}: not a known build ({', '.join(b.key for b in RPC_BUILDS)})")

"""llama.cpp RPC's traffic per generated token over its own RDMA transport, counted with the
REAL programs (the RDMA build of scripts/build_llama.sh) between two soft-RoCE VMs (the
session's shared pair, tests/support/vmlab.py) by rxe's hw_counters, with
benchmarks/rpc_roundtrips_rdma.py's `measure`. No timing is asserted (TCG).

What it pins down: the 8 commands of a token (6 SET_TENSOR, GRAPH_RECOMPUTE, GET_TENSOR, as
the TCP proxy counts them) go as 3 acknowledged SENDs each, the one reply as 2, and nothing
crosses the RPC connection's TCP socket once RDMA is activated.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.support.llama_parts import write_tiny_model
from tests.support.vmlab import VmLab

ROOT = Path(__file__).resolve().parent.parent


def _bench() -> ModuleType:
    path = ROOT / "benchmarks" / "rpc_roundtrips_rdma.py"
    spec = importlib.util.spec_from_file_location("rpc_roundtrips_rdma", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["rpc_roundtrips_rdma"] = module
    spec.loader.exec_module(module)
    return module


def test_every_send_is_acknowledged_and_nothing_goes_over_tcp(llama_pair: VmLab) -> None:
    lab = llama_pair
    bench = _bench()
    write_tiny_model(lab.vms[0].dir / "tiny-2.gguf", layers=2)
    row = bench.measure(lab, "/vmlab/tiny-2.gguf", 2, 4, 12)
    print(f"\nper token over RDMA: client {row['client']}, server {row['server']}")
    assert row["rdma_activated"] == {"head": True, "worker": True}, row["rdma_lines"]
    assert row["client"]["rdma_sends"] == pytest.approx(24.0)  # 8 commands x 3 send_data()
    assert row["client"]["rdma_recvs"] == pytest.approx(2.0)  # the GET_TENSOR reply: size, data
    assert row["server"]["rdma_sends"] == pytest.approx(2.0)
    assert row["server"]["rdma_recvs"] == pytest.approx(24.0)
    assert row["tcp_bytes_during_long_completion"] == {"client_acked": 0, "client_received": 0}

"""Benchmark: `strixwizard advise`, whole process, for a catalog model, explicit shapes and two
GGUF files (the tiny test model, and one whose header is as large as a real model's: a
151,936-token vocabulary, 151,387 merges, 48 layers of MoE tensor infos), every named
interconnect, 1 and 2 nodes, text and --json. Aim: under 1 s each. Not a test: this machine is
noisy. The GGUF is read by strixwizard/decode/gguf_header.py (standard library, header only).

    python benchmarks/advise_startup.py [--runs 11]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _times(argv: list[str], runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False,
                              timeout=60)
        out.append(time.perf_counter() - start)
        if done.returncode != 0:
            raise SystemExit(f"{argv}: exit {done.returncode}: {done.stderr.decode()[-500:]}")
    return out


def write_large_header(path: Path) -> Path:
    """A GGUF whose metadata is the size of Qwen3-30B-A3B's (vocabulary and merges) with 48
    layers of tensor infos; the tensors themselves are tiny, only the header matters here."""
    import gguf
    import numpy as np

    writer = gguf.GGUFWriter(str(path), "qwen3moe")
    writer.add_name("large-header")
    writer.add_block_count(48)
    writer.add_embedding_length(2048)
    writer.add_expert_count(128)
    writer.add_expert_used_count(8)
    writer.add_token_list([f"tok{i}" for i in range(151936)])
    writer.add_token_types([1] * 151936)
    writer.add_token_merges([f"a{i} b{i}" for i in range(151387)])
    small = np.zeros((4, 8), dtype=np.float32)
    writer.add_tensor("token_embd.weight", small)
    for layer in range(48):
        for name in ("attn_q", "attn_k", "attn_v", "attn_output", "attn_norm", "attn_q_norm",
                     "attn_k_norm", "ffn_norm", "ffn_gate_inp", "ffn_gate_exps", "ffn_up_exps",
                     "ffn_down_exps"):
            writer.add_tensor(f"blk.{layer}.{name}.weight", small)
    writer.add_tensor("output.weight", small)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=11)
    args = parser.parse_args()
    from tests.support.llama_parts import write_tiny_model

    base = [sys.executable, "-m", "strixwizard", "advise"]
    with tempfile.TemporaryDirectory() as tmp:
        gguf = write_tiny_model(Path(tmp) / "tiny.gguf", layers=4)
        large = write_large_header(Path(tmp) / "large-header.gguf")
        cases = {
            "--model Llama-3.1-70B (catalog), text": ["--model", "Llama-3.1-70B"],
            "--model Qwen3-235B-A22B --nodes 1,2,4 --json": [
                "--model", "Qwen3-235B-A22B", "--nodes", "1,2,4", "--json"],
            "explicit shape (27B Q6_K) --json": [
                "--layers", "64", "--hidden", "5120", "--weight-gib", "20.88", "--json"],
            "--model tiny.gguf --json": ["--model", str(gguf), "--json"],
            "--model large-header.gguf (152k vocabulary) --json": ["--model", str(large), "--json"],
        }
        _times([*base, "--model", "Llama-3.1-8B"], 2)  # warm the page cache
        for label, extra in cases.items():
            times = _times([*base, *extra], args.runs)
            print(f"{label:<52} median {statistics.median(times) * 1000:6.0f} ms  "
                  f"max {max(times) * 1000:6.0f} ms  ({args.runs} runs; aim < 1000 ms)")


if __name__ == "__main__":
    main()

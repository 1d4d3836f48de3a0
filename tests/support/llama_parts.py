"""Real llama.cpp parts for the tests: the binaries built by scripts/build_llama.sh (cached
outside the repository) and a tiny GGUF model written with the `gguf` package.

The model is a 2-layer llama with a SentencePiece-style vocabulary of the three control
tokens, the 256 byte tokens (so any text tokenizes) and a few words; its weights are
random, so what it says is noise, but llama.cpp loads it and completes text with it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = ROOT / "scripts" / "build_llama.sh"
#: llama-cpp-python's sdist that carries the llama.cpp tree (vendor/llama.cpp) we build.
LLAMA_CPP_PYTHON = "0.3.36"
BUILD_TIMEOUT_S = 1800.0

WORDS = ("▁the", "▁cluster", "▁answers", "▁hello", "▁world", "▁over", "▁RDMA", "▁fabric")


def cache_dir() -> Path:
    return Path(os.environ.get("STRIXWIZARD_LLAMA_CACHE",
                               Path.home() / ".cache" / "strixwizard-llama"))


#: The one build both labs run: llama.cpp's RDMA transport compiled in negotiates RDMA only
#: where both ends find a device for their address, and otherwise stays on TCP (ggml-rpc's
#: `update_caps`: a peer advertising no RDMA "drop[s] to TCP without reporting a failure"),
#: which is the namespace lab, so one build serves it and the VM lab (a CI run builds once).
#: `scripts/build_llama.sh VERSION tcp` remains for a head without libibverbs-dev.
TRANSPORT = "rdma"


def built_bin_dir(transport: str = TRANSPORT) -> Path | None:
    """The cached binaries, or None when they were not built yet. `transport`: "tcp" (RDMA
    off) or "rdma" (GGML_RPC_RDMA on; its own cache directory)."""
    suffix = "-rdma" if transport == "rdma" else ""
    bin_dir = cache_dir() / f"{LLAMA_CPP_PYTHON}{suffix}" / "bin"
    ok = all((bin_dir / name).is_file() for name in ("ggml-rpc-server", "llama-server"))
    return bin_dir if ok else None


def build(transport: str = TRANSPORT, programs: str = "all") -> Path:
    """Build (or find cached) ggml-rpc-server and llama-server ("rpc": the RPC server alone);
    returns their directory. The script decides: it returns at once when this version was
    built with its current flags."""
    missing = [tool for tool in ("cmake", "g++") if shutil.which(tool) is None]
    if missing:
        raise RuntimeError(f"cannot build llama.cpp: {', '.join(missing)} missing "
                           "(scripts/install.sh test installs them)")
    done = subprocess.run(["bash", str(BUILD_SCRIPT), LLAMA_CPP_PYTHON, transport, programs],
                          capture_output=True,
                          text=True, timeout=BUILD_TIMEOUT_S, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"scripts/build_llama.sh failed ({done.returncode}): "
                           f"{done.stderr.strip()[-2000:]}")
    return Path(done.stdout.strip().splitlines()[-1])


def vendored_tree() -> Path:
    """The llama.cpp tree of the sdist `build` unpacked (call `build` first): the source the
    build command is tested with."""
    tree = cache_dir() / "sdist" / f"llama_cpp_python-{LLAMA_CPP_PYTHON}" / "vendor" / "llama.cpp"
    if not (tree / "CMakeLists.txt").is_file():
        raise RuntimeError(f"no llama.cpp tree at {tree}: scripts/build_llama.sh unpacks it")
    return tree


#: A stand-in for llama.cpp's source where a real build costs too much (the unit tier, the sudo
#: lab): a CMake project with llama.cpp's two targets, each a tiny C program, and the ggml/
#: folder the build command looks for. DELAY: seconds its configure step sleeps.
STAND_IN = """cmake_minimum_required(VERSION 3.14)
project(standin C)
execute_process(COMMAND sleep DELAY)
set(CMAKE_RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
file(WRITE ${CMAKE_BINARY_DIR}/main.c "int main(void) { return 0; }\\n")
add_executable(ggml-rpc-server ${CMAKE_BINARY_DIR}/main.c)
add_executable(llama-server ${CMAKE_BINARY_DIR}/main.c)
"""


def stand_in_tree(folder: Path, delay: int = 0) -> Path:
    """The stand-in source in `folder`/llama.cpp (with a models/ file the build leaves out)."""
    tree = folder / "llama.cpp"
    (tree / "ggml").mkdir(parents=True)
    (tree / "CMakeLists.txt").write_text(STAND_IN.replace("DELAY", str(delay)))
    (tree / "models").mkdir()
    (tree / "models" / "vocab.gguf").write_bytes(b"left out")
    return tree


def write_tiny_model(path: Path, layers: int = 2, embd: int = 64, heads: int = 4,
                     ff: int = 128, seed: int = 1, experts: int = 0, experts_used: int = 2) -> Path:
    """A tiny llama GGUF with random F32 weights (about 0.5 MB); with `experts`, a Mixtral-style
    MoE (routed experts in every layer, so llama.cpp computes them with MUL_MAT_ID)."""
    import gguf
    import numpy as np

    tokens = ["<unk>", "<s>", "</s>", *(f"<0x{b:02X}>" for b in range(256)), *WORDS]
    types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL,
             *([gguf.TokenType.BYTE] * 256), *([gguf.TokenType.NORMAL] * len(WORDS))]
    vocab = len(tokens)
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("strixwizard-tiny")
    writer.add_context_length(256)
    writer.add_embedding_length(embd)
    writer.add_block_count(layers)
    writer.add_feed_forward_length(ff)
    if experts:
        writer.add_expert_count(experts)
        writer.add_expert_used_count(experts_used)
    writer.add_head_count(heads)
    writer.add_head_count_kv(heads)
    writer.add_rope_dimension_count(embd // heads)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_vocab_size(vocab)
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores([0.0] * 3 + [-1000.0] * 256 + [-1.0] * len(WORDS))
    writer.add_token_types(types)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_unk_token_id(0)
    writer.add_add_bos_token(True)

    rng = np.random.default_rng(seed)

    def weights(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.02).astype(np.float32)

    ones = np.ones(embd, dtype=np.float32)
    writer.add_tensor("token_embd.weight", weights(vocab, embd))
    for i in range(layers):
        writer.add_tensor(f"blk.{i}.attn_norm.weight", ones)
        for name in ("attn_q", "attn_k", "attn_v", "attn_output"):
            writer.add_tensor(f"blk.{i}.{name}.weight", weights(embd, embd))
        writer.add_tensor(f"blk.{i}.ffn_norm.weight", ones)
        if experts:
            writer.add_tensor(f"blk.{i}.ffn_gate_inp.weight", weights(experts, embd))
            writer.add_tensor(f"blk.{i}.ffn_gate_exps.weight", weights(experts, ff, embd))
            writer.add_tensor(f"blk.{i}.ffn_up_exps.weight", weights(experts, ff, embd))
            writer.add_tensor(f"blk.{i}.ffn_down_exps.weight", weights(experts, embd, ff))
            continue
        writer.add_tensor(f"blk.{i}.ffn_gate.weight", weights(ff, embd))
        writer.add_tensor(f"blk.{i}.ffn_up.weight", weights(ff, embd))
        writer.add_tensor(f"blk.{i}.ffn_down.weight", weights(embd, ff))
    writer.add_tensor("output_norm.weight", ones)
    writer.add_tensor("output.weight", weights(vocab, embd))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path

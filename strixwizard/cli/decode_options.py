"""The options of `strixwizard test decode` (argparse only: registering them stays cheap)."""

from __future__ import annotations

import argparse


def add_decode_options(parser: argparse.ArgumentParser) -> None:
    """--model, --batch, --tp, --mem-bandwidth (read by `test decode` only)."""
    parser.add_argument("--model", metavar="config.json|file.gguf|NAME",
                        help="decode: the model (a Hugging Face config.json, a GGUF file, or a name "
                        "from the catalog: Llama-3.1-8B, Llama-3.1-70B, Qwen3-30B-A3B, Qwen3-235B-A22B, "
                        "gpt-oss-120b, GLM-4.5-Air; default Llama-3.1-70B)")
    parser.add_argument("--batch", type=int, default=1, metavar="N",
                        help="decode: largest batch; sizes 1, 2, 4 ... N are timed (default 1)")
    parser.add_argument("--tp", metavar="SIZES",
                        help="decode: TP sizes to predict, e.g. 1,2,4 (default 1,2,4)")
    parser.add_argument("--calibrate", action="store_true",
                        help="decode: also time the model (a .gguf --model, at the same path on the "
                        "first node) with that node's llama-server, and advise from that speed")
    parser.add_argument("--llama-bin-dir", metavar="DIR",
                        help="decode --calibrate: where llama-server is on the node (default: PATH)")
    parser.add_argument("--mem-bandwidth", type=float, metavar="GBPS",
                        help="decode: memory bandwidth per node in GB/s (default 212, measured on "
                        "Strix Halo)")

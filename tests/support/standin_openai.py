#!/usr/bin/python3
"""STAND-IN for `vllm serve` (NOT vLLM): a small stdlib OpenAI-compatible HTTP server that the
deploy tests install as `vllm` on a lab node (LabHost.stand_in), because vLLM cannot run on
this machine (no GPU, no ROCm). It tests the orchestration around vLLM, never vLLM itself.

What it does like vLLM's server, so the deploy's start, health wait, completion and rollback
meet the same shapes: `vllm serve MODEL --host H --port P ...` (unknown options are refused
with argparse's `unrecognized arguments` and exit status 2, as vLLM's parser does; the
options it knows are the ones tests/data/deploy/vllm_serve_flags.json lists), the port opens
only once the "model" is loaded, `GET /health` answers 200, `GET /v1/models` lists the
model, `POST /v1/completions` answers, streamed as server-sent events (`data: {...}` chunks,
a usage chunk with `stream_options.include_usage`, then `data: [DONE]`) or as one JSON body.

Knobs, from $HOME/standin-vllm.json (the lab gives each host its own $HOME):
`load_s` (seconds before the port opens), `token_ms` (delay per token), `exit_after_s`
(exit with status 1 while "loading", as a crashed engine would), `never_ready` (the port
opens but `/health` answers 503, as a server whose engine never gets ready). At start it
prints its argv and the environment variables a vLLM worker needs as one JSON line into its
log (stdout), for the tests to read.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

FLAGS = Path(__file__).resolve().parents[1] / "data" / "deploy" / "vllm_serve_flags.json"
SEEN_ENV = ("RAY_ADDRESS", "VLLM_HOST_IP", "NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME",
            "NCCL_IB_DISABLE", "RAY_EXPERIMENTAL_NOSET_ROCR_VISIBLE_DEVICES")
WORDS = ("Paris", ".", " It", " is", " the", " capital", " and", " the", " largest", " city")


def knobs() -> dict[str, float]:
    path = Path(os.environ.get("HOME", "/nonexistent")) / "standin-vllm.json"
    try:
        loaded = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def parser() -> argparse.ArgumentParser:
    """vLLM's option names (from the flag list), each taking a value except the booleans."""
    known = json.loads(FLAGS.read_text())["flags"]
    booleans = {"--enforce-eager", "--trust-remote-code", "--enable-prefix-caching",
                "--disable-custom-all-reduce", "--enable-expert-parallel",
                "--disable-uvicorn-access-log", "--enable-auto-tool-choice",
                "--skip-tokenizer-init", "--disable-sliding-window", "--disable-cascade-attn",
                "--enable-sleep-mode"}
    main = argparse.ArgumentParser(prog="vllm")
    commands = main.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve")
    serve.add_argument("model_tag")
    for flag in sorted({f for names in known.values() for f in names}):
        if flag.startswith("--") and flag not in ("--host", "--port"):
            if flag in booleans:
                serve.add_argument(flag, action="store_true")
            else:
                serve.add_argument(flag)
    serve.add_argument("--host", default=None)
    serve.add_argument("--port", type=int, default=8000)
    return main


def handler(model: str, token_s: float, ready: bool = True) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            print(f"stand-in vllm: {self.command} {self.path}", flush=True)

        def _json(self, code: int, body: object) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path == "/health":
                self.send_response(200 if ready else 503)
                self.send_header("Content-Length", "0")
                self.end_headers()
            elif self.path == "/v1/models":
                self._json(200, {"object": "list", "data": [{"id": model, "object": "model"}]})
            else:
                self._json(404, {"error": "not found"})

        def do_POST(self) -> None:
            if self.path != "/v1/completions":
                self._json(404, {"error": "not found"})
                return
            request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            if request.get("model") != model:
                self._json(404, {"error": {"message": f"The model `{request.get('model')}` "
                                           "does not exist."}})
                return
            n = max(1, min(int(request.get("max_tokens") or 16), 256))
            words = [WORDS[i % len(WORDS)] for i in range(n)]
            usage = {"prompt_tokens": len(str(request.get("prompt", "")).split()),
                     "completion_tokens": n, "total_tokens": 0}
            if not request.get("stream"):
                time.sleep(token_s * n)
                self._json(200, {"object": "text_completion", "model": model, "usage": usage,
                                 "choices": [{"index": 0, "text": "".join(words),
                                              "finish_reason": "length"}]})
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            for word in words:
                time.sleep(token_s)
                chunk = {"object": "text_completion", "model": model,
                         "choices": [{"index": 0, "text": word, "finish_reason": None}]}
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.flush()
            if (request.get("stream_options") or {}).get("include_usage"):
                final = {"object": "text_completion", "model": model, "choices": [],
                         "usage": usage}
                self.wfile.write(f"data: {json.dumps(final)}\n\n".encode())
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
            self.close_connection = True

    return Handler


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    settings = knobs()
    print(json.dumps({"stand_in": "vllm", "argv": argv,
                      "env": {k: os.environ.get(k) for k in SEEN_ENV}}), flush=True)
    begun = time.monotonic()
    while time.monotonic() - begun < float(settings.get("load_s", 0)):
        if "exit_after_s" in settings and time.monotonic() - begun >= float(
                settings["exit_after_s"]):
            print("stand-in vllm: ERROR engine core failed to start (exit_after_s)", flush=True)
            return 1
        time.sleep(0.05)
    server = ThreadingHTTPServer((args.host or "0.0.0.0", args.port),
                                 handler(args.model_tag, float(settings.get("token_ms", 5)) / 1000,
                                         not settings.get("never_ready")))
    print(f"stand-in vllm: serving {args.model_tag} on {args.host}:{args.port}", flush=True)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

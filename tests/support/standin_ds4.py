#!/usr/bin/python3
"""STAND-IN for antirez/ds4 (NOT ds4): the deploy tests install it as `ds4` and `ds4-server` on
lab nodes, because ds4 cannot run on this machine (no GPU, no ROCm, no 150 GiB model). It
tests the orchestration around ds4 (the launch lines, the pair's socket over the fabric, the
log verdict, the HTTP probe, the rollback), never ds4 itself.

What it does like ds4's tensor parallelism (launch.py names the sources):
- takes ds4's argv (`--role coordinator|worker --tensor-parallel`, `--listen HOST PORT` or
  `--coordinator HOST PORT`, `--transport`, `--rocm`, `-m`, `-c`, `--rdma-device`,
  `--rdma-gid-index`, and ds4-server's `--host`/`--port`); any other option is refused with
  `unknown option: X` (the wording antirez/ds4#921 quotes) and exit status 1;
- rank 0 listens on the `--listen` address, rank 1 dials it (retrying while the coordinator
  is not up, and saying so every 25 tries as ds4 does, in its own words), the pair swap a
  hello over that TCP socket, then each prints the log lines of its rank for the transport:
  the PUBLISHED lines of tests/data/deploy/ds4 (rdma, tcp) or the ones rendered from ds4's
  format strings where none were published (odl, rank 1 tcp);
- rank 0 then serves `GET /health` and `POST /v1/completions` on `--host`/`--port`.

Its first log line says it is a stand-in. Knobs, from $HOME/standin-ds4.json: `took` (print
the lines of this transport whatever was asked: a fallback), `refuse` (print ds4's
fail-closed message for the asked transport and exit 1).
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

LINES = Path(__file__).resolve().parents[1] / "data" / "deploy" / "ds4"
RECORDED = {
    ("rdma", "coordinator"): "coordinator_rdma_odinlink_verbs.txt",
    ("rdma", "worker"): "worker_rdma_roce.txt",
    ("odl", "coordinator"): "coordinator_odl_rendered.txt",
    ("odl", "worker"): "worker_odl_rendered.txt",
    ("tcp", "coordinator"): "coordinator_tcp.txt",
    ("tcp", "worker"): "worker_tcp_rendered.txt",
}
VALUED = {"--role": 1, "--listen": 2, "--coordinator": 2, "--transport": 1, "-m": 1, "-c": 1,
          "--rdma-device": 1, "--rdma-gid-index": 1, "--host": 1, "--port": 1}
FLAGS = {"--tensor-parallel", "--rocm"}
TRANSPORTS = ("auto", "rdma", "tcp", "odl")
CONNECT_TIMEOUT_S = 120.0


def say(line: str) -> None:
    print(line, flush=True)


def knobs() -> dict[str, object]:
    path = Path(os.environ.get("HOME", "/nonexistent")) / "standin-ds4.json"
    try:
        loaded = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def parse(argv: list[str]) -> dict[str, list[str]]:
    options: dict[str, list[str]] = {}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in FLAGS:
            options[arg] = []
            i += 1
        elif arg in VALUED and i + VALUED[arg] < len(argv):
            options[arg] = argv[i + 1:i + 1 + VALUED[arg]]
            i += 1 + VALUED[arg]
        else:
            print(f"unknown option: {arg}", file=sys.stderr)
            sys.exit(1)
    return options


def recorded(transport: str, role: str) -> list[str]:
    return (LINES / RECORDED[transport, role]).read_text().splitlines()


def serve(host: str, port: int, model: str) -> None:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            return

        def answer(self, status: int, body: dict[str, object]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path == "/health":
                self.answer(200, {"status": "ok", "stand_in": True})
            else:
                self.answer(404, {"error": "not found"})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            request = json.loads(self.rfile.read(length) or b"{}")
            if self.path != "/v1/completions":
                self.answer(404, {"error": "not found"})
                return
            n = int(request.get("max_tokens") or 8)
            self.answer(200, {"object": "text_completion", "model": model,
                              "choices": [{"index": 0, "text": " stand-in" * n,
                                           "finish_reason": "length"}],
                              "usage": {"prompt_tokens": 1, "completion_tokens": n,
                                        "total_tokens": n + 1}})

    ThreadingHTTPServer((host, port), Handler).serve_forever()


def main() -> None:
    options = parse(sys.argv[1:])
    role = (options.get("--role") or [""])[0]
    asked = (options.get("--transport") or ["auto"])[0]
    model = (options.get("-m") or [""])[0]
    say(f"STAND-IN for ds4 (not antirez/ds4): {role}, --transport {asked}; the ds4 lines "
        "below are published or rendered ones (tests/data/deploy/ds4/SOURCE)")
    if "--tensor-parallel" not in options or role not in ("coordinator", "worker"):
        print("STAND-IN: only --tensor-parallel with --role coordinator|worker", file=sys.stderr)
        sys.exit(1)
    if asked not in TRANSPORTS:
        print(f"invalid --transport value: {asked}", file=sys.stderr)
        sys.exit(1)
    if not Path(model).is_file():
        print(f"STAND-IN: no model file {model!r}", file=sys.stderr)
        sys.exit(1)
    knob = knobs()
    if knob.get("refuse"):
        what = "no OdinLink device" if asked == "odl" else "no active device"
        say(f"tp: --transport {asked} but this side has {what}")
        sys.exit(1)
    took = str(knob.get("took") or ("tcp" if asked == "auto" else asked))
    if role == "coordinator":
        host, port = options["--listen"][0], int(options["--listen"][1])
        listener = socket.create_server((host, port))
        peer, _ = listener.accept()
        listener.close()
    else:
        host, port = options["--coordinator"][0], int(options["--coordinator"][1])
        deadline = time.monotonic() + CONNECT_TIMEOUT_S
        attempts = 0
        while True:
            try:
                peer = socket.create_connection((host, port), timeout=5)
                break
            except OSError as error:
                if attempts % 25 == 0:
                    say(f"STAND-IN: connecting to {host}:{port} ... ({error})")
                attempts += 1
                if time.monotonic() > deadline:
                    print(f"STAND-IN: cannot reach the coordinator at {host}:{port}",
                          file=sys.stderr)
                    sys.exit(1)
                time.sleep(0.2)
    peer.sendall(f"STAND-IN-DS4 {role}\n".encode())
    peer.recv(64)
    for line in recorded(took, role):
        say(line)
    if role == "coordinator":
        api_host = (options.get("--host") or ["127.0.0.1"])[0]
        api_port = int((options.get("--port") or ["8000"])[0])
        serve(api_host, api_port, model)
    else:
        peer.settimeout(None)
        while peer.recv(64):  # the coordinator's socket closing ends the worker, as in ds4
            pass


if __name__ == "__main__":
    main()

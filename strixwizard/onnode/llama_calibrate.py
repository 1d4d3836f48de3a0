"""One node's decode speed of a model, measured with llama.cpp's own `llama-server`: the
compute term of `strixwizard advise` and `test decode --calibrate` (standard library only,
Python 3.8+).

Sent to a node and run as `python3 -c SOURCE SERVER MODEL NGL TOKENS LIMIT_S`. It starts
`SERVER -m MODEL -ngl NGL` on 127.0.0.1 at a free port (no network beyond this node), waits
for /health, asks for a few tokens (first allocations out of the way), then for TOKENS tokens
with `ignore_eos`, and reports llama.cpp's own timing of them; the server is stopped on every
path by the PID this program started, and it stays in this program's process group, so the
supervisor that ends this program ends it too. Every wait is bounded by LIMIT_S.

Prints JSON lines on stdout:
  {"event": "result", "predicted_n": N, "predicted_per_token_ms": T, "prompt_n": P}
  {"event": "error", "error": "..."} and exit status 3 (127 when SERVER is not found)
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from typing import Any

PROMPT = "the cluster answers over the fabric"


def _emit(**fields: object) -> None:
    sys.stdout.write(json.dumps(fields, allow_nan=False) + "\n")
    sys.stdout.flush()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _post(port: int, n_predict: int, timeout: float) -> dict[str, Any]:
    body = json.dumps({"prompt": PROMPT, "n_predict": n_predict, "ignore_eos": True,
                       "cache_prompt": False, "temperature": 0}, allow_nan=False).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}/completion", data=body,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        result = json.loads(response.read())
    if not isinstance(result, dict):
        raise ValueError("the completion answer is not a JSON object")
    return result


def _healthy(port: int, proc: subprocess.Popen[bytes], deadline: float) -> bool:
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                if r.status == 200:
                    return True
        except (OSError, urllib.error.URLError):
            time.sleep(0.2)
    return False


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    try:
        proc.terminate()  # the server this program started, by its PID
        proc.wait(timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        try:
            proc.kill()
            proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            pass


def main(argv: list[str]) -> int:
    if len(argv) != 5:
        _emit(event="error", error="usage: SERVER MODEL NGL TOKENS LIMIT_S")
        return 3
    server, model, ngl, tokens_text, limit_text = argv
    tokens, limit = int(tokens_text), float(limit_text)
    deadline = time.monotonic() + limit
    port = _free_port()
    # the server's log: a pipe nobody reads would fill and block it
    with tempfile.TemporaryFile() as log:
        try:
            proc = subprocess.Popen([server, "-m", model, "-ngl", ngl, "--host", "127.0.0.1", "--port",
                                     str(port), "-c", "512", "-np", "1", "--no-warmup"],
                                    stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        except FileNotFoundError:
            _emit(event="error", error=f"{server} is not installed")
            return 127
        except OSError as error:
            _emit(event="error", error=f"cannot start {server}: {error}")
            return 3

        def _on_signal(signum: int, frame: object) -> None:
            _stop(proc)
            sys.exit(3)

        signal.signal(signal.SIGTERM, _on_signal)
        try:
            return _measure(port, proc, log, tokens, deadline)
        finally:
            _stop(proc)


def _measure(port: int, proc: subprocess.Popen[bytes], log: Any, tokens: int, deadline: float) -> int:
    try:
        if not _healthy(port, proc, deadline):
            log.seek(0)
            tail = log.read()[-600:].decode("utf-8", "replace").strip().replace("\n", " | ")
            _emit(event="error", error=f"llama-server did not become healthy ({tail or 'no output'})")
            return 3
        _post(port, 4, max(1.0, deadline - time.monotonic()))
        result = _post(port, tokens, max(1.0, deadline - time.monotonic()))
    except (OSError, ValueError, urllib.error.URLError) as error:
        _emit(event="error", error=f"the completion failed: {error}")
        return 3
    timings = result.get("timings") or {}
    _emit(event="result", predicted_n=timings.get("predicted_n"),
          predicted_per_token_ms=timings.get("predicted_per_token_ms"), prompt_n=timings.get("prompt_n"))
    return 0

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

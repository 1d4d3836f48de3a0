"""The piece of the smoke probes that waits for an HTTP server's `/health` (llama-server and
vLLM both answer it with 200 once the model is loaded).

The probes run on the head as `python3 -c SOURCE ...`, so this is source text, standard
library only (the head's python3 may be as old as 3.8): a probe is `probe_source(body)`.
"""

from __future__ import annotations

#: Defines `wait_for_health(url, seconds, pause)`: the last status seen (200, an HTTP error
#: code, or the reason the connection failed), polling until 200 or the deadline.
_WAIT_FOR_HEALTH = r'''import json, sys, time, urllib.error, urllib.request


def wait_for_health(url, seconds, pause):
    deadline = time.monotonic() + seconds
    while True:
        try:
            with urllib.request.urlopen(url + "/health", timeout=5) as r:
                status = r.status
        except urllib.error.HTTPError as e:
            status = e.code
        except OSError as e:
            status = str(getattr(e, "reason", e))
        if status == 200 or time.monotonic() > deadline:
            return status
        time.sleep(pause)


'''


def probe_source(body: str) -> str:
    """A probe's whole source: the health wait, then `body` (which calls it)."""
    return _WAIT_FOR_HEALTH + body
